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


def kahypar_partition(hg: Hypergraph, cfg: PartitionConfig, initial: np.ndarray | None = None,
                      vcycles: int = 1) -> np.ndarray:
    """Mt-KaHyPar, connectivity-1 objective, on ``hg``.

    The ``deterministic`` preset (the default) gives the same partition for
    the same seed whatever the thread timing; ``default`` and ``quality``
    are faster or better but not reproducible with several threads. With
    ``initial``, that partition is improved by ``vcycles`` V-cycles instead
    of partitioning from scratch (never worse on ``hg``'s objective).
    """
    import mtkahypar

    presets = {"deterministic": mtkahypar.PresetType.DETERMINISTIC, "default": mtkahypar.PresetType.DEFAULT,
               "quality": mtkahypar.PresetType.QUALITY, "deterministic_quality": mtkahypar.PresetType.DETERMINISTIC_QUALITY}
    if cfg.hp_preset not in presets:
        raise UserError(f"--hp-preset {cfg.hp_preset!r}: choose one of {', '.join(presets)}")
    init = _kahypar(cfg.threads or os.cpu_count() or 1)
    ctx = init.context_from_preset(presets[cfg.hp_preset])
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
