"""Row partitioners: ``rp`` (random), ``gp`` (METIS), ``hp`` (Mt-KaHyPar on
the column-net hypergraph).

Each is a function ``(Â, parts, config) -> part vector`` registered in
:data:`PARTITIONERS`; :func:`run` times it and returns a
:class:`PartitionResult`.
"""

from __future__ import annotations

import functools
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .errors import UserError
from .hypergraph import Hypergraph, column_net

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PartitionConfig:
    """Attributes: parts; eps (allowed imbalance of the load, e.g. 0.03);
    seed; threads (0 = all cores); hp_preset (Mt-KaHyPar preset name)."""

    parts: int
    eps: float = 0.03
    seed: int = 0
    threads: int = 0
    hp_preset: str = "deterministic"


@dataclass
class PartitionResult:
    """Attributes: model; part (n,) int32; seconds (partitioner wall time)."""

    model: str
    part: np.ndarray
    seconds: float


def random_partition(a: sp.csr_matrix, cfg: PartitionConfig) -> np.ndarray:
    """Rows dealt uniformly at random: row counts differ by at most one."""
    n = a.shape[0]
    order = np.random.default_rng([cfg.seed, 0x52]).permutation(n)
    part = np.empty(n, np.int32)
    part[order] = np.arange(n) % cfg.parts
    return part


def metis_partition(a: sp.csr_matrix, cfg: PartitionConfig) -> np.ndarray:
    """pymetis on the symmetrized graph without self loops; vertex weight =
    nonzeros of the row of Â; imbalance ``ufactor = 1000 eps``."""
    import pymetis

    sym = (a + a.T).tocsr()
    sym.setdiag(0)
    sym.eliminate_zeros()
    sym.sort_indices()
    vweights = np.diff(a.indptr).astype(np.int64)
    opts = pymetis.Options(seed=cfg.seed, ufactor=max(1, int(round(cfg.eps * 1000))))
    graph = pymetis.CSRAdjacency(sym.indptr.astype(np.int64), sym.indices.astype(np.int64))
    _, part = pymetis.part_graph(cfg.parts, graph, vweights=vweights, options=opts)
    return np.asarray(part, dtype=np.int32)


@functools.cache
def _kahypar(threads: int):
    import mtkahypar

    # Mt-KaHyPar's thread pool can be set up once per process.
    return mtkahypar.initialize(threads)


PRESETS = ("deterministic", "default", "quality", "deterministic_quality")  # Mt-KaHyPar's PresetType names
ISOLATE_PINS = 2_000_000  # hypergraphs this large are partitioned in a child process (see below)


def kahypar_partition(hg: Hypergraph, cfg: PartitionConfig, initial: np.ndarray | None = None,
                      vcycles: int = 1, isolate: bool | None = None) -> np.ndarray:
    """Mt-KaHyPar, connectivity-1 objective, on ``hg``.

    The ``deterministic`` preset (the default) gives the same partition for
    the same seed whatever the thread timing; ``default`` and ``quality``
    are faster or better but not reproducible with several threads. With
    ``initial``, that partition is improved by ``vcycles`` V-cycles instead
    of partitioning from scratch (never worse on ``hg``'s objective).

    Mt-KaHyPar's Python binding holds the GIL for the whole run (measured:
    no other thread ran for 270 s of a 200k-vertex partition). In a build's
    threaded Dask worker that freezes the scheduler and the client too, and
    after tens of minutes Dask gives the task up ("already forgotten"). So a
    large hypergraph (``isolate`` None: at least ``ISOLATE_PINS`` pins) is
    partitioned in a child process; the result is the same.
    """
    if cfg.hp_preset not in PRESETS:
        raise UserError(f"--hp-preset {cfg.hp_preset!r}: choose one of {', '.join(PRESETS)}")
    if isolate is None:
        isolate = hg.pins.size >= ISOLATE_PINS
    if not isolate:
        return _kahypar_run(hg, cfg, initial, vcycles)
    return _kahypar_in_child(hg, cfg, initial, vcycles)


def _kahypar_in_child(hg: Hypergraph, cfg: PartitionConfig, initial: np.ndarray | None, vcycles: int) -> np.ndarray:
    """``_kahypar_run`` in a fresh interpreter; arrays go through a temporary
    .npz (a plain subprocess, not multiprocessing: that would re-import the
    caller's main module, which breaks scripts without a main guard)."""
    import dataclasses
    import json
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory(prefix="shgcn-kahypar-") as tmp:
        d = Path(tmp)
        np.savez(d / "in.npz", net_ptr=hg.net_ptr, pins=hg.pins, vertex_weights=hg.vertex_weights,
                 net_weights=hg.net_weights, initial=np.empty(0, np.int32) if initial is None else initial)
        (d / "args.json").write_text(json.dumps({"cfg": dataclasses.asdict(cfg), "n": hg.n_vertices,
                                                 "vcycles": vcycles, "initial": initial is not None}))
        res = subprocess.run([sys.executable, "-c", "import sys; from shgcn.pipeline.partition import _child_main; "
                              "_child_main(sys.argv[1], int(sys.argv[2]))", tmp, str(os.getpid())],
                             capture_output=True, text=True)
        if res.returncode != 0:
            raise RuntimeError(f"Mt-KaHyPar failed in its child process (exit {res.returncode}): {res.stderr[-2000:]}")
        return np.load(d / "out.npy")


def _child_main(tmp: str, parent: int) -> None:
    import json
    from pathlib import Path

    _die_with_parent(parent)
    d = Path(tmp)
    args = json.loads((d / "args.json").read_text())
    z = np.load(d / "in.npz")
    hg = Hypergraph(n_vertices=args["n"], net_ptr=z["net_ptr"], pins=z["pins"], vertex_weights=z["vertex_weights"],
                    net_weights=z["net_weights"], net_ids=np.empty(0, np.int64))
    part = _kahypar_run(hg, PartitionConfig(**args["cfg"]), z["initial"] if args["initial"] else None, args["vcycles"])
    np.save(d / "out.npy", part)


def _die_with_parent(parent: int) -> None:
    """Linux: the kernel kills this process when its parent dies (a killed or
    timed-out build must not leave Mt-KaHyPar running; a Python watchdog
    thread could not run while the binding holds the GIL)."""
    import ctypes
    import signal

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: best effort
        return
    if os.getppid() != parent:  # the parent died before prctl
        os._exit(1)


def _kahypar_run(hg: Hypergraph, cfg: PartitionConfig, initial: np.ndarray | None, vcycles: int) -> np.ndarray:
    import mtkahypar

    init = _kahypar(cfg.threads or os.cpu_count() or 1)
    ctx = init.context_from_preset(getattr(mtkahypar.PresetType, cfg.hp_preset.upper()))
    ctx.set_partitioning_parameters(cfg.parts, cfg.eps, mtkahypar.Objective.KM1)
    ctx.logging = False
    mtkahypar.set_seed(cfg.seed)
    nets = np.split(hg.pins, hg.net_ptr[1:-1]) if hg.n_nets else []
    h = init.create_hypergraph(ctx, hg.n_vertices, hg.n_nets, nets, hg.vertex_weights, hg.net_weights)
    if initial is None:
        return np.asarray(h.partition(ctx).get_partition(), dtype=np.int32)
    ph = h.create_partitioned_hypergraph(ctx, cfg.parts, initial.astype(np.int64))  # (context, k): the binding's order
    ph.improve_partition(ctx, vcycles)
    return np.asarray(ph.get_partition(), dtype=np.int32)


def hypergraph_partition(a: sp.csr_matrix, cfg: PartitionConfig) -> np.ndarray:
    """``hp``: Mt-KaHyPar on the column-net hypergraph of Â."""
    return kahypar_partition(column_net(a), cfg)


PARTITIONERS: dict[str, Callable[[sp.csr_matrix, PartitionConfig], np.ndarray]] = {
    "rp": random_partition,
    "gp": metis_partition,
    "hp": hypergraph_partition,
}


def run(model: str, a: sp.csr_matrix, cfg: PartitionConfig) -> PartitionResult:
    """Partition the rows of Â with ``model``, timed."""
    if model not in PARTITIONERS:
        raise UserError(f"unknown model {model!r}; known models: {', '.join(PARTITIONERS)}")
    t0 = time.perf_counter()
    if cfg.parts == 1:
        part = np.zeros(a.shape[0], np.int32)
    else:
        part = PARTITIONERS[model](a, cfg)
    seconds = time.perf_counter() - t0
    log.info("partition %s: %d parts in %.2f s", model, cfg.parts, seconds)
    return PartitionResult(model, part, seconds)
