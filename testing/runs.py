"""Running the trainer in subprocesses (with or without mpirun) and checking a run's bytes against the cost
model: what the trainer's conformance classes share, and the ``mpi_stores`` fixture they train on."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

from shgcn import store
from shgcn.core import epoch
from shgcn.core.algorithms import ALGORITHMS
from shgcn.core.memory import model_bytes
from shgcn.core.partition import PartitionCost
from shgcn.core.runlog import read_run_log

TRAIN = Path(__file__).resolve().parents[1] / "trainer" / "train.py"  # the trainer's script, installed or not
ARCH_ARGS = {"gat": ["--heads", "3"]}  # an architecture's options beyond the defaults, for the runs here

GRAPHS = {
    "undirected": ("sbm:n=400,classes=4,degree=6,features=24,seed=3", False),
    "directed": ("rmat:scale=9,edge_factor=6,seed=4", True),
}


def mpirun() -> str:
    local = Path(sys.executable).parent / "mpirun"
    return str(local) if local.exists() else (shutil.which("mpirun") or "mpirun")


def train(ranks: int, path, *args, log=None, timeout=600, use_mpirun=True) -> subprocess.CompletedProcess:
    """``shgcn-train PATH --quiet ARGS`` on ``ranks`` ranks (one process without mpirun)."""
    cmd = [sys.executable, str(TRAIN), str(path), "--quiet", *map(str, args)]
    if log is not None:
        cmd += ["--log", str(log)]
    if use_mpirun:
        cmd = [mpirun(), "-n", str(ranks), *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def read_log(path, kind="epoch"):
    """The run log's header and its records of type ``kind`` (typed, see shgcn.core.runlog)."""
    log = read_run_log(path)
    return log.header, log.epochs if kind == "epoch" else log.steps


def run(ranks, path, log, *args, timeout=600):
    """Train (it must succeed) and read the run log: (header, epochs)."""
    res = train(ranks, path, *args, log=log, use_mpirun=ranks > 1, timeout=timeout)
    assert res.returncode == 0, res.stderr
    return read_log(log)


def build_stores(root: Path, client, parts=(1, 2, 4), graphs=GRAPHS, models=("hp", "rp")) -> dict:
    """One store per (graph kind, P) for the MPI tests, laid out by hp (the first model); rp beside it for the
    epoch model's predictions of every model."""
    from shgcn.pipeline.builder import build
    from shgcn.pipeline.config import BuildConfig

    out = {}
    for kind, (spec, directed) in graphs.items():
        extra: dict[str, Any] = {"features": "random:12", "labels": "random:5"} if directed else {}
        for p in parts:
            path = root / f"{kind}-p{p}.zarr"
            build(BuildConfig(source=spec, out=str(path), parts=p, models=models, **extra), client,
                  echo=lambda *a: None)
            out[kind, p] = path
    return out




def layout_cost(path) -> PartitionCost:
    """The store's layout partition as the cost model takes it."""
    s = store.open_store(path)
    return next(c for c in s.partition_costs() if c.model == s.attrs["model"])


def check_run_bytes(path, header, epochs) -> dict:
    """Every epoch's bytes, messages, received bytes and per-exchange bytes equal the cost model's for the
    run's job (and by path or by kind where the algorithm counts them); so does every rank's modelled memory."""
    cost, job = layout_cost(path), header.job()
    pred = epoch.rank_traffic(cost, job)
    if header.memory:
        assert header.memory == (ALGORITHMS[job.algorithm].memory(cost, job) + model_bytes(job)).tolist()
    n_fwd = len(header.dims) - 1
    for e in epochs:
        assert e.bytes_sent == pred["bytes_sent"].tolist()
        assert e.msgs_sent == pred["msgs_sent"].tolist()
        assert e.bytes_recv == pred["bytes_recv"].tolist()
        if e.exchange_bytes is not None:
            assert np.array(e.exchange_bytes).T.tolist() == pred["calls"].tolist()
        if e.val_acc is not None:  # an evaluation epoch: the forward's exchanges once more
            assert e.eval_bytes_sent == pred["calls"][:n_fwd].sum(0).tolist()
        if e.path_bytes is not None:
            for kind in ("intra", "inter"):
                assert [b[kind] for b in e.path_bytes] == pred[f"{kind}_bytes"].tolist()
                assert [m[kind] for m in e.path_msgs] == pred[f"{kind}_msgs"].tolist()
        if e.bytes_split is not None:
            for kind in ("rows", "inrow", "matrix"):
                assert [b.get(kind, 0) for b in e.bytes_split] == pred[f"{kind}_bytes"].tolist()
    return pred
