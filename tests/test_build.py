"""The scale-out build: row blocks equal one block, an external cluster
equals the embedded one, a killed worker costs a recompute, partitioners run
in child processes while the client stays responsive, imported assignments."""

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from helpers import run_cli

from shgcn import store
from shgcn.pipeline.compose import BuildConfig, build

SBM = "sbm:n=900,classes=4,degree=8,features=6,seed=2"


def array_files(root: Path, skip=()) -> dict[str, bytes]:
    """Every file of a store but its root metadata (timings) and the
    partitioners' times; ``skip`` prefixes too."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_file() and rel != "zarr.json" and not rel.startswith("quality/seconds") and \
                not any(rel.startswith(s) for s in skip):
            out[rel] = p.read_bytes()
    return out


def same_store(a: Path, b: Path, skip=()) -> None:
    fa, fb = array_files(a, skip), array_files(b, skip)
    assert fa.keys() == fb.keys() and len(fa) > 30
    assert [k for k in fa if fa[k] != fb[k]] == []
    sa, sb = store.open_store(a), store.open_store(b)
    assert sa.attrs["checksums"] == sb.attrs["checksums"]


def make(path, client, source=SBM, **kw):
    kw.setdefault("models", ("rp", "gp", "hp"))
    cfg = BuildConfig(source=source, out=str(path), parts=kw.pop("parts", 3), **kw)
    return build(cfg, client, echo=lambda *a: None)


def test_many_row_blocks_equal_one(tmp_path, client):
    one = make(tmp_path / "one.zarr", client)
    many = make(tmp_path / "many.zarr", client, block_nnz=700)
    assert store.open_store(one.path).attrs["stats"]["row_blocks"] == 1
    assert store.open_store(many.path).attrs["stats"]["row_blocks"] > 5
    same_store(one.path, many.path)  # the store does not depend on how the build cut its work


def test_directed_many_blocks_and_chunks_equal_one(tmp_path, client):
    text = "".join(f"{u} {v}\n" for u, v in np.random.default_rng(3).integers(0, 400, (3000, 2)).tolist())
    src = tmp_path / "g.txt"
    src.write_text(text)
    one = make(tmp_path / "one.zarr", client, source=str(src), features="random:5", labels="random:3")
    many = make(tmp_path / "many.zarr", client, source=str(src), features="random:5", labels="random:3",
                block_nnz=300, chunk_bytes=2048)
    assert store.open_store(many.path).attrs["directed"]
    same_store(one.path, many.path)


def test_partition_file_is_a_model(tmp_path, client):
    first = make(tmp_path / "a.zarr", client, models=("gp",))
    part = store.open_store(first.path).partition("gp")
    f = tmp_path / "metis_k3.txt"
    f.write_text("".join(f"{p}\n" for p in part))
    res = make(tmp_path / "b.zarr", client, models=("rp",), partition_files=(str(f),), layout_model="metis_k3")
    s = store.open_store(res.path)
    assert s.models == ["rp", "metis_k3"] and s.attrs["model"] == "metis_k3"
    np.testing.assert_array_equal(s.partition("metis_k3"), part)
    q_a, q_b = store.open_store(first.path).quality(), s.quality()
    np.testing.assert_array_equal(q_a["volume"].sel(model="gp").values, q_b["volume"].sel(model="metis_k3").values)
    bad = tmp_path / "short.txt"
    bad.write_text("0\n1\n")
    res = run_cli("build", SBM, "--parts", "3", "--model", "rp", "--partition-file", str(bad),
                  "--out", str(tmp_path / "c.zarr"))
    assert res.returncode == 2 and "2 entries for a graph of 900 vertices" in res.stderr


# ------------------------------------------------------------ external cluster

class External:
    """A scheduler and two worker processes on loopback, started from their
    own working directory (so relative paths of the client mean nothing there)."""

    def __init__(self, root: Path, workers: int = 2):
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        sfile = root / "scheduler.json"
        bin_ = Path(sys.executable).parent
        self.procs = [subprocess.Popen([str(bin_ / "dask"), "scheduler", "--host", "127.0.0.1", "--port", "0",
                                        "--dashboard-address", "127.0.0.1:0", "--scheduler-file", str(sfile)],
                                       cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
        deadline = time.time() + 60
        while not sfile.exists() and time.time() < deadline:
            time.sleep(0.2)
        import json

        time.sleep(0.5)
        self.address = json.loads(sfile.read_text())["address"]
        self.workers = [subprocess.Popen([str(bin_ / "dask"), "worker", self.address, "--nthreads", "1",
                                          "--host", "127.0.0.1", "--no-nanny", "--memory-limit", "0",
                                          "--dashboard-address", "127.0.0.1:0"],
                                         cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                        for _ in range(workers)]
        self.procs += self.workers
        from distributed import Client

        with Client(self.address, timeout="30s") as c:
            c.wait_for_workers(workers, timeout=60)

    def close(self):
        for p in self.procs:
            p.kill()
            p.wait()


@pytest.fixture
def external(tmp_path):
    cluster = External(tmp_path / "cluster")
    yield cluster
    cluster.close()


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

    from shgcn.pipeline.cluster import check_paths
    from shgcn.pipeline.errors import UserError

    with Client(external.address) as c:
        check_paths(c, [str(tmp_path)], str(tmp_path))  # they see these
        with pytest.raises(UserError, match=r"Dask worker tcp://127.0.0.1:\d+ cannot read /nonexistent/g.txt: "):
            check_paths(c, ["/nonexistent/g.txt"], str(tmp_path))


def test_a_killed_worker_costs_a_recompute_not_the_build(tmp_path, external, client):
    spec = "rmat:scale=13,edge_factor=8,seed=3"
    out = tmp_path / "k.zarr"
    proc = subprocess.Popen([sys.executable, "-m", "shgcn.pipeline", "build", spec, "--parts", "4", "--model", "gp,hp",
                             "--out", str(out), "--scheduler", external.address, "--block-nnz", "20000"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []
    killed = False
    assert proc.stderr is not None
    for line in proc.stderr:  # kill a worker once the graph is on the workers
        lines.append(line)
        if "stage normalize" in line and not killed:
            external.workers[0].send_signal(signal.SIGKILL)
            killed = True
    proc.wait(timeout=600)
    assert killed and proc.returncode == 0, "".join(lines[-20:])
    ref = tmp_path / "ref.zarr"
    make(ref, client, source=spec, parts=4, models=("gp", "hp"), block_nnz=20000)
    same_store(out, ref)


def test_partitioner_runs_in_a_child_and_the_client_stays_responsive(tmp_path, client):
    gaps, children, stop = [], set(), threading.Event()

    def watch():
        last = time.perf_counter()
        while not stop.is_set():
            t0 = time.perf_counter()
            client.run_on_scheduler(lambda: 1)  # a round trip through the event loop
            gaps.append(max(time.perf_counter() - t0, t0 - last))
            last = time.perf_counter()
            for p in Path("/proc").glob("[0-9]*"):
                try:
                    cmd = (p / "cmdline").read_bytes()
                except OSError:
                    continue
                if b"shgcn.pipeline.partition" in cmd:
                    children.add(p.name)
            time.sleep(0.05)

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    try:
        res = make(tmp_path / "c.zarr", client, source="sbm:n=20000,classes=8,degree=12,features=4,seed=1",
                   models=("hp",), parts=8)
    finally:
        stop.set()
        t.join()
    assert res.attrs["partitions"]["hp"]["seconds"] > 1.0
    assert children, "Mt-KaHyPar did not run in a child process"
    assert max(gaps) < 2.0, max(gaps)
    assert os.getpid() not in {int(c) for c in children}


def test_python_api_with_the_users_client_leaves_no_keys(tmp_path):
    import scipy.sparse as sp
    from distributed import Client, LocalCluster

    import shgcn.pipeline as pl

    rng = np.random.default_rng(0)
    m = sp.random(400, 400, density=0.02, random_state=rng, format="csr")
    x = rng.standard_normal((400, 5)).astype(np.float32)
    y = rng.integers(0, 3, 400)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address="127.0.0.1:0") as cluster, \
            Client(cluster) as c:
        res = pl.build(m, parts=4, out=tmp_path / "m.zarr", models=("rp", "hp"), client=c, features=x, labels=y,
                       directed=False)
        edge_index = np.stack(m.nonzero())
        res2 = pl.build(edge_index, parts=2, out=tmp_path / "e.zarr", client=c)
        with pytest.raises(pl.errors.UserError, match="edge_index"):
            pl.build(np.zeros((3, 4), np.int64), parts=2, out=tmp_path / "bad.zarr", client=c)
        time.sleep(0.5)
        left = c.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks))
    assert left == 0
    s = store.open_store(res.path)
    assert s.parts == 4 and s.models == ["rp", "hp"] and not s.attrs["directed"]
    np.testing.assert_array_equal(s.nodes()["features"].values, x)
    np.testing.assert_array_equal(s.nodes()["labels"].values, y)
    assert store.open_store(res2.path).attrs["n"] == 400


def test_volume_balanced_models_in_the_store_and_simulate(tmp_path, client):
    res = make(tmp_path / "vb.zarr", client, source="sbm:n=2000,classes=6,degree=10,features=4,seed=4", parts=6,
               models=("rp", "hp", "hp-vb", "gp-vb"))
    s = store.open_store(res.path)
    assert s.models == ["rp", "hp", "hp-vb", "gp-vb"]
    q = {r["model"]: r for r in res.table}
    assert q["hp-vb"]["max_send"] <= q["hp"]["max_send"] and q["hp-vb"]["max_recv"] <= q["hp"]["max_recv"]
    assert q["hp-vb"]["total_volume"] <= 1.02 * q["hp"]["total_volume"]
    assert q["hp-vb"]["imbalance"] <= max(0.03, q["hp"]["imbalance"]) + 1e-9
    info = s.attrs["partitions"]
    assert info["hp-vb"]["base"] == "hp" and "base_seconds" not in info["hp-vb"]  # refined the build's hp
    assert "base_seconds" in info["gp-vb"]  # gp was not asked for: computed inside the model
    out = run_cli("simulate", str(res.path), "--network", "shm", "--hidden", "16")
    assert out.returncode == 0, out.stderr
    for m in ("rp", "hp", "hp-vb", "gp-vb"):
        assert f" {m} " in out.stdout
    assert "vs rp" in out.stdout and "bcast" in out.stdout
