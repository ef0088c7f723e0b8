"""Weighted connectivity-1 refinement of any hypergraph: label propagation
with exact gains, the load bound kept; what ``shp`` runs on its surrogate
(:mod:`.shp.surrogate`) before, or instead of, Mt-KaHyPar's V-cycles.

:mod:`.km1` refines the column-net hypergraph of Â (nets of weight 1, each
owned by its column); the surrogate has nets of any pins and integer
weights. The objective is ``sum_e w_e (λ_e - 1)``. Moving v from part a to
part b lowers it by ``sum over v's nets e of w_e ([v is a's only pin of e] -
[e has no pin in b])``. A pass visits every vertex once in a seeded random
order and moves it to its best part when the gain is positive (or zero and
the move lightens its part), never above the load bound; passes stop when
one gains less than 0.1% of the objective. The pin counts are
:mod:`.pins`'s slots (a net's parts, sorted, with their pins). Serial numba:
the same partition for the same seed, whatever the machine.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from ..metrics.hypergraph import Hypergraph
from .pins import _add_pin, _remove_pin, best_target, jit, slots


@jit
def _best_move(v, inc, pc, state, lmax, scr):
    """(gain, target part) of v's best move (target -1: none);
    ``scr = (acc, touched)``: (P,) scratch, the weight of v's nets per part."""
    vptr, vnets, nw, w = inc
    spart, scnt, sptr, lam = pc
    part, load = state
    acc, touched = scr
    a = part[v]
    nt = 0
    only = 0  # weight of the nets where v is a's only pin: they leave a
    deg = 0
    for p in range(vptr[v], vptr[v + 1]):
        e = vnets[p]
        we = nw[e]
        deg += we
        for s in range(sptr[e], sptr[e] + lam[e]):
            k = spart[s]
            if k == a:
                if scnt[s] == 1:
                    only += we
                continue
            if acc[k] == 0:  # net weights are >= 1: zero means untouched
                touched[nt] = k
                nt += 1
            acc[k] += we
    return best_target(scr, nt, (only, deg), a, w[v], (load, lmax))


@jit
def _move(v, b, inc, pc, state):
    """Move v to part b, updating the pin counts and loads; returns the change of the objective."""
    vptr, vnets, nw, w = inc
    part, load = state
    a = part[v]
    d = 0
    for p in range(vptr[v], vptr[v + 1]):
        e = vnets[p]
        if _remove_pin(pc, e, a):
            d -= nw[e]
        if _add_pin(pc, e, b):
            d += nw[e]
    part[v] = b
    load[a] -= w[v]
    load[b] += w[v]
    return d


@jit
def _pass(order, inc, pc, state, lmax, scr):
    """One pass; returns (moves, objective saved)."""
    moves, saved = 0, 0
    for v in order:
        _, b = _best_move(v, inc, pc, state, lmax, scr)
        if b >= 0:
            saved -= _move(v, b, inc, pc, state)
            moves += 1
    return moves, saved


def pin_slots(hg: Hypergraph, part: np.ndarray, parts: int) -> tuple[tuple, int]:
    """:func:`.pins.slots` of ``hg`` under ``part``, and the objective ``sum_e w_e (λ_e - 1)``."""
    nets = np.repeat(np.arange(hg.n_nets, dtype=np.int64), np.diff(hg.net_ptr))
    pc, _, _ = slots(nets, np.asarray(part, np.int64)[hg.pins], hg.n_nets, parts)
    return pc, int(np.dot(np.asarray(hg.net_weights, np.int64), np.maximum(pc[3] - 1, 0)))


def refine_weighted(hg: Hypergraph, part: np.ndarray, parts: int, eps: float = 0.03, seed: int = 0, *,
                    max_passes: int = 30) -> tuple[np.ndarray, dict]:
    """Lower the weighted connectivity-1 of ``part`` on ``hg``.

    Parameters
    ----------
    hg : the hypergraph (net weights >= 1; its vertex weights are balanced)
    part : (n_vertices,) int, the start
    parts : int
    eps : the load bound is (1 + eps) times the mean load, or the start's maximum if higher
    seed : seeds the order of every pass
    max_passes : passes at most

    Returns
    -------
    part : (n_vertices,) int32
    info : dict: ``start`` and ``end`` objective, ``passes``, ``moves``, ``seconds``
    """
    t0 = time.perf_counter()
    n = hg.n_vertices
    p = np.asarray(part, np.int64).copy()
    w = np.asarray(hg.vertex_weights, np.int64)
    nw = np.asarray(hg.net_weights, np.int64)
    if nw.size and int(nw.min()) < 1:
        raise ValueError("refine_weighted needs net weights of at least 1")
    by_vertex = sp.csc_matrix((np.ones(hg.pins.size, np.int8), hg.pins, hg.net_ptr), shape=(n, hg.n_nets)).tocsr()
    inc = (by_vertex.indptr.astype(np.int64), by_vertex.indices.astype(np.int64), nw, w)
    pc, start = pin_slots(hg, p, parts)
    load = np.bincount(p, weights=w, minlength=parts).astype(np.int64)
    lmax = max(int(np.floor((1 + eps) * load.sum() / parts)), int(load.max(initial=0)))
    rng = np.random.default_rng([seed, 0x574B31])
    scr = (np.zeros(parts, np.int64), np.empty(parts, np.int64))
    total, passes, moves = start, 0, 0
    for _ in range(max_passes if parts > 1 else 0):
        m, saved = _pass(rng.permutation(n).astype(np.int64), inc, pc, (p, load), lmax, scr)
        total -= int(saved)
        passes, moves = passes + 1, moves + int(m)
        if saved <= 0.001 * total:
            break
    info = {"start": start, "end": total, "passes": passes, "moves": moves,
            "seconds": round(time.perf_counter() - t0, 3)}
    return p.astype(np.int32), info
