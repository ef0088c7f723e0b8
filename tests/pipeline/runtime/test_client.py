"""Using an existing Dask scheduler instead of the embedded cluster: the
same store as the embedded cluster, paths checked on the workers, and a
killed worker costs a recompute, not the build."""

import os
import signal
import subprocess
import sys
import threading

import numpy as np
import pytest
from helpers import run_cli
from helpers.cluster import External
from helpers.stores import make, same_store

from shgcn import store


@pytest.fixture
def external(tmp_path):
    cluster = External(tmp_path / "cluster")
    yield cluster
    cluster.close()


@pytest.fixture
def scheduler():
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address="127.0.0.1:0") as c:
        yield c.scheduler_address


def test_build_on_external_scheduler(tmp_path, scheduler):
    out = tmp_path / "s.zarr"
    res = run_cli("build", "sbm:n=300,classes=3,degree=6,features=4,seed=0", "--parts", "2", "--model", "rp,hp",
                  "--out", str(out), "--scheduler", scheduler)
    assert res.returncode == 0, res.stderr
    assert store.open_store(out).models == ["rp", "hp"]


def test_unreachable_scheduler_is_a_user_error(tmp_path):
    res = run_cli("build", "sbm:n=50", "--parts", "2", "--out", str(tmp_path / "x.zarr"),
                  "--scheduler", "tcp://127.0.0.1:9", timeout=120)
    assert res.returncode == 2 and "cannot connect to the Dask scheduler" in res.stderr


@pytest.mark.slow  # quick-suite budget: CI runs it (-m '')
def test_external_cluster_with_relative_paths_equals_embedded(tmp_path, external, client):
    work = tmp_path / "work"
    (work / "in").mkdir(parents=True)
    rng = np.random.default_rng(5)
    (work / "in" / "g.txt").write_text("".join(f"{u}\t{v}\n" for u, v in rng.integers(0, 500, (2500, 2)).tolist()))
    np.save(work / "in" / "x.npy", rng.standard_normal((500, 4)).astype(np.float32))
    res = run_cli("build", "in/g.txt", "--undirected", "--parts", "3", "--model", "rp,hp", "--features", "in/x.npy",
                  "--out", "out/ext.zarr", "--scheduler", external.address, "--block-nnz", "1000", cwd=work)
    assert res.returncode == 0, res.stderr
    emb = tmp_path / "emb.zarr"
    make(emb, client, source=str(work / "in" / "g.txt"), directed=False, models=("rp", "hp"),
         features=str(work / "in" / "x.npy"), block_nnz=1000)
    same_store(work / "out" / "ext.zarr", emb)
    assert not (external.root / "out").exists()  # nothing was written where the workers started


def test_workers_that_cannot_see_a_path_are_a_one_line_error(tmp_path, external):
    from distributed import Client

    from shgcn.pipeline.errors import UserError
    from shgcn.pipeline.runtime.client import _see_paths, check_paths

    g = tmp_path / "g.txt"
    g.write_text("1 2\n")
    with Client(external.address) as c:
        check_paths(c, [str(g)], str(tmp_path / "partial" / ".work" / "check"))  # they see these
        with pytest.raises(UserError, match=r"Dask worker tcp://127.0.0.1:\d+ cannot read /nonexistent/g.txt: "):
            check_paths(c, ["/nonexistent/g.txt"], "")
        os.utime(g, (0, 0))  # another file of the same name, as a worker on another machine may see
        found = c.run(_see_paths, {str(g): (4, 12345)}, "", "")
        assert all(p == [f"sees another {g} than this machine (its size or date differ)"] for p in found.values())
        found = c.run(_see_paths, {}, str(tmp_path / "partial" / ".work" / "check"), "not the token")
        assert all(p and p[0].startswith("does not see the store being written under") for p in found.values())


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_killed_worker_costs_a_recompute_not_the_build(tmp_path, external, client):
    spec = "rmat:scale=13,edge_factor=8,seed=3"
    out = tmp_path / "k.zarr"
    proc = subprocess.Popen([sys.executable, "-m", "shgcn.pipeline", "build", spec, "--parts", "4", "--model", "gp,hp",
                             "--out", str(out), "--scheduler", external.address, "--block-nnz", "20000"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    killed = threading.Event()

    def read():  # kill a worker once the graph is on the workers
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            if "stage normalize" in line and not killed.is_set():
                external.workers[0].send_signal(signal.SIGKILL)
                killed.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        proc.wait(timeout=400)
    finally:
        proc.kill()
        reader.join(timeout=10)
    assert killed.is_set() and proc.returncode == 0, "".join(lines[-20:])
    ref = tmp_path / "ref.zarr"
    make(ref, client, source=spec, parts=4, models=("gp", "hp"), block_nnz=20000)
    same_store(out, ref)


def test_settle_waits_until_let_go_data_leaves_the_workers(client):
    from shgcn.pipeline.runtime.client import Tasks

    tasks = Tasks(client)
    kept = tasks.submit("probe", np.ones, 1000)
    gone = tasks.submit("probe", np.zeros, 1000)
    client.gather([kept, gone])
    keys = [gone.key]
    del gone  # let go: the workers drop it a moment later, not at once
    assert tasks.settle(keys)
    assert not client.run_on_scheduler(lambda dask_scheduler, k=str(keys[0]): [
        str(x) for x, ts in dask_scheduler.tasks.items() if str(x) == k and ts.who_has])
    assert not tasks.settle([kept.key], timeout=0.2)  # still held: settle says so and returns
    assert kept.result().sum() == 1000


def test_the_memory_limit_is_shared_by_the_embedded_workers_and_none_pauses():
    from shgcn.pipeline.runtime.client import ClusterConfig, worker_memory

    assert worker_memory(ClusterConfig(), 4) == ("auto", {})  # Dask's default: this machine's memory
    limit, config = worker_memory(ClusterConfig(memory_limit=8 * 2**30, processes=True), 4)
    assert limit == 2 * 2**30 and config == {"distributed.worker.memory.pause": False}


@pytest.mark.timeout(120)
def test_the_embedded_worker_takes_the_memory_limit():
    """The in-process worker spills against ``--memory-limit`` and never pauses (its process holds the
    client's arrays too); without a limit it keeps Dask's pause."""
    from shgcn.pipeline.runtime.client import ClusterConfig, dask_client

    def memory(dask_worker):
        m = dask_worker.memory_manager
        return m.memory_limit, m.memory_pause_fraction, m.memory_spill_fraction

    with dask_client(ClusterConfig(workers=1, memory_limit=3 * 2**30), announce=lambda _: None) as c:
        [(limit, pause, spill)] = c.run(memory).values()
    assert (limit, pause) == (3 * 2**30, False) and spill
    with dask_client(ClusterConfig(workers=1), announce=lambda _: None) as c:
        [(limit, pause, _)] = c.run(memory).values()
    assert pause and limit != 3 * 2**30
