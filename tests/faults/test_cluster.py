"""The fuzz and fault suite, the build's surroundings (issue 24, cases 8, 9,
13, 14): workers that do not share the output's file system, a scheduler
killed mid-build (and the partitioner child it leaves), a missing dataset,
a symmetric matrix given to the Python API."""

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from helpers import build_cli, one_line
from helpers.cluster import External
from helpers.faults import alive, parent_of, processes

SBM = "sbm:n=300,classes=3,degree=6,features=4,seed=0"


def test_workers_that_do_not_share_the_output_are_one_line(tmp_path):
    """Case 8: the workers' view of the output directory is another file
    system (a tmpfs mounted over it in their own mount namespace): the build
    stops in one line before any work, and nothing is left behind."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare to give the workers a file system of their own")
    out = tmp_path / "out"
    out.mkdir()
    probe = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                            f"mount -t tmpfs none {out}"], capture_output=True, timeout=30)
    if probe.returncode != 0:
        pytest.skip(f"cannot mount in a new namespace here: {probe.stderr.decode()[:200]}")
    wrap = ("unshare", "--mount", "--propagation", "private", "sh", "-c", f'mount -t tmpfs none {out} && exec "$@"',
            "sh")
    cluster = External(tmp_path / "cluster", wrap=wrap)
    try:
        res = build_cli(SBM, "--parts", "2", "--model", "rp", "--out", str(out / "s.zarr"), "--scheduler",
                        cluster.address, timeout=300)
    finally:
        cluster.close()
    one_line(res, "Dask worker", f"does not see the store being written under {out}", "shared file system")
    assert list(out.iterdir()) == []


# loaded by each worker: the partitioner's child sleeps (as a partitioner that runs for minutes), and the worker
# process outlives its close by 15 s (so that the child going with its task, not with its process, shows)
PRELOAD = """
import atexit, subprocess, sys, time, types
import shgcn.pipeline.runtime.child as child

def popen(cmd, *args, **kwargs):
    if "shgcn.pipeline.models.run" in cmd:
        cmd = [sys.executable, "-c", "import time; time.sleep(300)", *cmd[1:]]
    return subprocess.Popen(cmd, *args, **kwargs)

child.subprocess = types.SimpleNamespace(**{**vars(subprocess), "Popen": popen})
atexit.register(time.sleep, 15)
"""


@pytest.mark.slow
def test_a_killed_scheduler_is_one_line_and_the_partitioner_child_ends_with_its_task(tmp_path):
    """Case 9: three tracebacks, and the partitioner's child lingered until
    its worker process exited. Now: one line, nothing written, and the
    worker kills the child as soon as it closes, while the worker process
    itself still lives (its exit is held back here on purpose)."""
    (tmp_path / "slow_exit.py").write_text(PRELOAD)
    cluster = External(tmp_path / "cluster", preload=str(tmp_path / "slow_exit.py"))
    out = tmp_path / "out"
    out.mkdir()
    cmd = [sys.executable, "-m", "shgcn.pipeline", "build", SBM, "--parts", "2", "--model", "hp", "--out",
           str(out / "s.zarr"), "--scheduler", cluster.address]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        child = None
        for _ in range(3000):  # until the partitioner's child runs (a hang guard, not a measurement)
            kids = [p for p in processes("shgcn.pipeline.models") if parent_of(p) in {w.pid for w in cluster.workers}]
            if kids:
                child = kids[0]
                break
            time.sleep(0.1)
        assert child is not None, "the partitioner never started"
        worker = parent_of(child)
        cluster.procs[0].kill()  # the scheduler
        _, err = proc.communicate(timeout=120)
        for _ in range(600):
            if not alive(child) or not alive(worker):
                break
            time.sleep(0.1)
        assert not alive(child) and alive(worker), "the child outlived its task"
    finally:
        proc.kill()
        cluster.close()
        for pid in processes(str(tmp_path)):  # whatever this test started and is still there
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    assert proc.returncode == 2, err
    lines = [x for x in err.splitlines() if x.strip() and " INFO: " not in x and " WARNING: " not in x]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert "the Dask scheduler at tcp://" in lines[0] and "stopped answering" in lines[0]
    assert list(out.iterdir()) == []


def test_a_missing_dataset_is_found_before_the_cluster_starts(tmp_path):
    """Case 13: the Dask cluster started first, and an empty cache directory stayed."""
    cache = tmp_path / "cache"
    env = {k: v for k, v in os.environ.items() if k not in ("SHGCN_DATA_DIR",)}
    env.update(XDG_CACHE_HOME=str(cache), https_proxy="http://127.0.0.1:9", http_proxy="http://127.0.0.1:9",
               HTTPS_PROXY="http://127.0.0.1:9", HTTP_PROXY="http://127.0.0.1:9", no_proxy="", NO_PROXY="")
    empty = tmp_path / "data"
    empty.mkdir()
    res = subprocess.run([sys.executable, "-m", "shgcn.pipeline", "build", "cora", "--parts", "2", "--data-dir",
                          str(empty), "--out", str(tmp_path / "s.zarr")], capture_output=True, text=True, env=env,
                         timeout=300)
    one_line(res, "dataset 'cora'", "not found under", "download failed")
    assert "Dask dashboard" not in res.stderr
    assert not cache.exists() and list(empty.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]


def test_the_api_reads_a_symmetric_matrix_as_undirected(tmp_path, client):
    """Case 14: a symmetric scipy matrix was stored as directed without a word; now one rule for every in-memory
    graph (a PyG Data's too): symmetric pattern and values -> undirected, unless directed= says otherwise; a
    symmetric pattern with other values is directed, with a warning saying how to choose."""
    import shgcn.pipeline as pl

    a = sp.random(60, 60, density=0.08, format="csr", random_state=np.random.default_rng(1))
    sym = ((a + a.T) > 0).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        und = pl.build(sym, parts=2, models=("rp",), out=str(tmp_path / "u.zarr"), client=client)
        res = pl.build(sym, parts=2, models=("rp",), out=str(tmp_path / "d.zarr"), client=client, directed=True)
        pl.build(a, parts=2, models=("rp",), out=str(tmp_path / "a.zarr"), client=client)  # not symmetric: quiet
    assert und.attrs["directed"] is False and res.attrs["directed"] is True
    assert und.attrs["edges"] * 2 == res.attrs["edges"] and und.attrs["source"] == "csr_matrix"
    skewed = sym.tolil()
    i, j = sym.nonzero()
    skewed[i[0], j[0]] = 2.0  # the same pattern, A[i, j] != A[j, i]
    with pytest.warns(UserWarning, match="symmetric pattern but.*DIRECTED.*directed=False"):
        sk = pl.build(skewed.tocsr(), parts=2, models=("rp",), out=str(tmp_path / "s.zarr"), client=client)
    assert sk.attrs["directed"] is True
