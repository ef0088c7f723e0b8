"""Mt-KaHyPar, connectivity-1 objective, in this process (the models that
use it run in a child process: the binding holds the GIL for its whole run)."""

from __future__ import annotations

import os

import numpy as np

from ..errors import UserError, quoted
from ..metrics.hypergraph import Hypergraph

PRESETS = ("deterministic", "default", "quality", "deterministic_quality", "highest_quality", "large_k")  # PresetType


_INIT: list = []


def _kahypar(threads: int):
    """Mt-KaHyPar's initialized library: its thread pool can be set up once per process, so the first
    caller's thread count stays (the deterministic preset gives the same partition for any)."""
    import mtkahypar

    if not _INIT:
        _INIT.append(mtkahypar.initialize(threads))
    return _INIT[0]


def kahypar_partition(hg: Hypergraph, parts: int, eps: float, seed: int, threads: int = 0,
                      preset: str = "deterministic", *, initial: np.ndarray | None = None,
                      vcycles: int = 1) -> np.ndarray:
    """(n,) int32 partition of ``hg`` minimizing connectivity-1.

    The ``deterministic`` preset gives the same partition for the same seed
    whatever the thread timing; ``default`` and ``quality`` are faster or
    better but not reproducible with several threads. With ``initial``, that
    partition is improved by ``vcycles`` V-cycles instead of partitioning
    from scratch (never worse on ``hg``'s objective).
    """
    import mtkahypar

    if preset not in PRESETS:
        raise UserError(f"{quoted('--hp-preset', preset)}: choose one of {', '.join(PRESETS)}")
    init = _kahypar(threads or os.cpu_count() or 1)
    ctx = init.context_from_preset(getattr(mtkahypar.PresetType, preset.upper()))
    ctx.set_partitioning_parameters(parts, eps, mtkahypar.Objective.KM1)
    ctx.logging = False
    mtkahypar.set_seed(seed)
    nets = np.split(hg.pins, hg.net_ptr[1:-1]) if hg.n_nets else []
    h = init.create_hypergraph(ctx, hg.n_vertices, hg.n_nets, nets, hg.vertex_weights, hg.net_weights)
    if initial is None:
        return np.asarray(h.partition(ctx).get_partition(), dtype=np.int32)
    ph = h.create_partitioned_hypergraph(ctx, parts, initial.astype(np.int64))  # (context, k): the binding's order
    ph.improve_partition(ctx, vcycles)
    return np.asarray(ph.get_partition(), dtype=np.int32)
