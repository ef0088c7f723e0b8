"""Running the trainer in subprocesses, with or without mpirun."""

import shutil
import subprocess
import sys
from pathlib import Path

from helpers import REPO
from shgcn.core.runlog import read_run_log

TRAIN = REPO / "trainer" / "train.py"


def mpirun() -> str:
    local = Path(sys.executable).parent / "mpirun"
    return str(local) if local.exists() else (shutil.which("mpirun") or "mpirun")


def train(ranks: int, store, *args, log=None, timeout=600, use_mpirun=True) -> subprocess.CompletedProcess:
    cmd = [sys.executable, str(TRAIN), str(store), "--quiet", *map(str, args)]
    if log is not None:
        cmd += ["--log", str(log)]
    if use_mpirun:
        cmd = [mpirun(), "-n", str(ranks), *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def read_log(path, kind="epoch"):
    """The run log's header and its records of type ``kind`` (typed, see shgcn.core.runlog)."""
    log = read_run_log(path)
    return log.header, log.epochs if kind == "epoch" else log.steps


GRAPHS = {
    "undirected": ("sbm:n=400,classes=4,degree=6,features=24,seed=3", False),
    "directed": ("rmat:scale=9,edge_factor=6,seed=4", True),
}


def build_stores(root: Path, client, parts=(1, 2, 4), graphs=GRAPHS, models=("hp", "rp")) -> dict:
    """One store per (graph kind, P) for the MPI tests, laid out by hp (the first model); rp beside it for the
    epoch model's predictions of every model (tests/core/test_epoch.py)."""
    from shgcn.pipeline.builder import build
    from shgcn.pipeline.config import BuildConfig

    out = {}
    for kind, (spec, directed) in graphs.items():
        extra = {"features": "random:12", "labels": "random:5"} if directed else {}
        for p in parts:
            path = root / f"{kind}-p{p}.zarr"
            build(BuildConfig(source=spec, out=str(path), parts=p, models=models, **extra), client,
                  echo=lambda *a: None)
            out[kind, p] = path
    return out
