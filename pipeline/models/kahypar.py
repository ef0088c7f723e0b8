"""Mt-KaHyPar, connectivity-1 objective, in this process (the models that
use it run in a child process: the binding holds the GIL for its whole run),
or in a child process of its own that is stopped at a deadline
(:func:`kahypar_within`: the binding cannot be interrupted)."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
from pathlib import Path

import numpy as np

from ..errors import UserError, quoted
from ..metrics.hypergraph import Hypergraph

PRESETS = ("deterministic", "default", "quality", "deterministic_quality", "highest_quality", "large_k")  # PresetType


_INIT: list = []
# Mt-KaHyPar's library is set up once per process (a second initialize() prints "[WARNING] Mt-KaHyPar is already
# initialized" into the build's log) and its seed is the process's: the place stage runs one placement per model in
# the worker's threads at once, so the set-up and each seeded partition are taken one at a time
KAHYPAR_LOCK = threading.RLock()


def _kahypar(threads: int):
    """Mt-KaHyPar's initialized library: its thread pool can be set up once per process, so the first
    caller's thread count stays (the deterministic preset gives the same partition for any)."""
    import mtkahypar

    with KAHYPAR_LOCK:
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
    nets = np.split(hg.pins, hg.net_ptr[1:-1]) if hg.n_nets else []
    with KAHYPAR_LOCK:  # the seed is the process's
        mtkahypar.set_seed(seed)
        h = init.create_hypergraph(ctx, hg.n_vertices, hg.n_nets, nets, hg.vertex_weights, hg.net_weights)
        if initial is None:
            return np.asarray(h.partition(ctx).get_partition(), dtype=np.int32)
        ph = h.create_partitioned_hypergraph(ctx, parts, initial.astype(np.int64))  # (context, k): the binding's order
        ph.improve_partition(ctx, vcycles)
        return np.asarray(ph.get_partition(), dtype=np.int32)


_ARRAYS = ("net_ptr", "pins", "vertex_weights", "net_weights")


def kahypar_within(hg: Hypergraph, parts: int, eps: float, seed: int, threads: int = 0,
                   preset: str = "deterministic", *, initial: np.ndarray | None = None, vcycles: int = 1,
                   deadline: float | None = None, limit: int | None = None) -> np.ndarray | None:
    """:func:`kahypar_partition` in a child process killed at ``deadline``
    (a :func:`time.monotonic` time; None: none) or over ``limit`` bytes
    (the build's ``--memory-limit``, :func:`..runtime.child.run_module`).

    Returns the (n,) int32 partition, or None when the deadline passed first.
    """
    from ..runtime.child import DeadlinePassed, run_module

    with tempfile.TemporaryDirectory(prefix="shgcn-mtkahypar-") as tmp:
        d = Path(tmp)
        for name in _ARRAYS:
            np.save(d / f"{name}.npy", getattr(hg, name))
        if initial is not None:
            np.save(d / "initial.npy", np.asarray(initial, np.int32))
        (d / "args.json").write_text(json.dumps({
            "n": hg.n_vertices, "parts": parts, "eps": eps, "seed": seed, "threads": threads, "preset": preset,
            "vcycles": vcycles, "initial": initial is not None}))
        try:
            run_module(__name__, d, "Mt-KaHyPar", limit, deadline)
        except DeadlinePassed:
            return None
        return np.load(d / "part.npy")


def _child_main(tmp: str, parent: int) -> None:
    from ..runtime.child import die_with_parent

    die_with_parent(parent)
    d = Path(tmp)
    args = json.loads((d / "args.json").read_text())
    arrays = {name: np.load(d / f"{name}.npy") for name in _ARRAYS}
    hg = Hypergraph(n_vertices=args["n"], net_ids=np.zeros(0, np.int64), **arrays)
    initial = np.load(d / "initial.npy") if args["initial"] else None
    part = kahypar_partition(hg, args["parts"], args["eps"], args["seed"], args["threads"], args["preset"],
                             initial=initial, vcycles=args["vcycles"])
    np.save(d / "part.npy", part)


if __name__ == "__main__":
    _child_main(sys.argv[1], int(sys.argv[2]))
