"""Connectivity-1 refinement: lower the total communication volume of a row
partition of Â by moving boundary vertices (label propagation on the
column-net hypergraph, exact gains, the balance bound kept).

The gain of moving v from part a to part b is exact: over v's nets (the
columns of row v, its own among them), ``(nets where v is a's only pin) -
(nets with no pin in b)``, from the pin counts of :mod:`.pins`. A pass
visits every vertex once in a seeded random order and moves a boundary
vertex to its best part when the gain is positive (or zero and the move
lightens its part), never above the load bound; passes stop when one gains
less than 0.1% of the total. Serial numba: the same partition for the same
seed, whatever the machine.

This is the step every ``hp`` preset (but ``mtkahypar-*``) takes on each start
(:mod:`.hp`: KaMinPar's graph partition, METIS's, the build's gp, Mt-KaHyPar's).
Being single-vertex label propagation, it stops in a local optimum; the
``quality`` preset then runs Mt-KaHyPar's multilevel V-cycles from its
result (benchmarks/RESULTS.md, "hp presets").
"""

from __future__ import annotations

import time

import numpy as np

from .pins import PinCounts, apply_move, best_target, jit


@jit
def _best_move(v, g, pc, vol, lmax, scr):
    """(gain, target part, whether v is on the boundary) of v's best move;
    ``scr = (cnt, touched)``: (P,) scratch, the pins of v's nets per part."""
    indptr, indices, _, _, w = g
    spart, scnt, sptr, lam = pc
    part, _, _, load = vol
    cnt, touched = scr
    a = part[v]
    nt = 0
    only = 0  # nets where v is a's only pin: they leave a
    boundary = False
    for p in range(indptr[v], indptr[v + 1]):
        j = indices[p]
        if lam[j] > 1:
            boundary = True
        for s in range(sptr[j], sptr[j] + lam[j]):
            k = spart[s]
            if k == a:
                only += scnt[s] == 1
                continue
            if cnt[k] == 0:
                touched[nt] = k
                nt += 1
            cnt[k] += 1
    best_g, best_b = best_target(scr, nt, (only, indptr[v + 1] - indptr[v]), a, w[v], (load, lmax))
    return best_g, best_b, boundary


@jit
def _pass(order, g, pc, vol, lmax, scr):
    """One pass; returns (moves, volume saved)."""
    moves, saved = 0, 0
    for v in order:
        gain, b, boundary = _best_move(v, g, pc, vol, lmax, scr)
        if boundary and b >= 0:
            saved -= apply_move(v, b, g, pc, vol)
            moves += 1
    return moves, saved


def refine_km1(a, part: np.ndarray, parts: int, weights: np.ndarray | None = None, eps: float = 0.03,
               seed: int = 0, *, max_passes: int = 30) -> tuple[np.ndarray, dict]:
    """Lower the connectivity-1 (total volume) of ``part``.

    Parameters
    ----------
    a : (n, n) csr_matrix Â (nonzero diagonal)
    part : (n,) int, the start
    parts : int
    weights : (n,) int vertex weights (default: nonzeros of the row)
    eps : the load bound is (1 + eps) times the mean, or the start's maximum if higher
    seed : seeds the order of every pass
    max_passes : passes at most

    Returns
    -------
    part : (n,) int32
    info : dict: ``start`` and ``end`` total volume, ``passes``, ``moves``, ``seconds``
    """
    t0 = time.perf_counter()
    pc = PinCounts(a, part, parts, weights)
    start = pc.total
    lmax = max(int(np.floor((1 + eps) * pc.load.sum() / parts)), int(pc.load.max()))
    rng = np.random.default_rng([seed, 0x4B31])
    scr = (np.zeros(parts, np.int64), np.empty(parts, np.int64))
    passes = moves = 0
    for _ in range(max_passes if parts > 1 else 0):
        m, saved = _pass(rng.permutation(a.shape[0]).astype(np.int64), pc.g, pc.pc, pc.vol, lmax, scr)
        pc.total -= int(saved)
        passes, moves = passes + 1, moves + int(m)
        if saved <= 0.001 * pc.total:
            break
    info = {"start": int(start), "end": int(pc.total), "passes": passes, "moves": moves,
            "seconds": round(time.perf_counter() - t0, 3)}
    return pc.part.astype(np.int32), info
