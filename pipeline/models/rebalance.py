"""Bring a row partition under the strict load bound, moving the vertices
whose moves cut the fewest edges.

KaMinPar (like KaHIP) relaxes its balance constraint to the mean part
weight plus the heaviest vertex, so that a feasible partition always
exists. With the build's work weights a hub row weighs a good fraction of a
part once P is in the hundreds (soc-slashdot0902 at P = 512: 0.84 of the
mean), and KaMinPar's parts then reach 1.58x the mean modelled compute,
where the build asks for 1 + eps. This step moves vertices out of every
part above ``lmax = max(floor((1 + eps) * mean), ceil(mean), heaviest
vertex)``, on the graph KaMinPar read (the ParHIP file, memory-mapped: no
copy of Â).

A pass visits the vertices of overloaded parts in a seeded random order and
moves each to the part, among its neighbours' parts and the lightest part,
that stays within the bound and cuts the fewest more edges, if that is at
most the pass's tolerance; the tolerance grows 0, 1, 2, 4, ... and is
unlimited in the last pass, so that cheap moves are taken first. A part
stops giving vertices once it is at the bound. When every vertex weighs at
most ``lmax`` minus the mean (rounded down), the last pass always ends
within the bound. When no part has room for any of a part's vertices (with
a few dozen rows per part one row can weigh more than eps of a part), a
vertex may move to a part that then ends above the bound but lighter than
v's part is now: every such move lowers the sorted part loads, so the
passes end, nearer the bound. What is left above the bound then (a few
parts, when a part holds a few dozen rows) is fixed by swaps
(:func:`swap_down`): a vertex of the heaviest part traded for a lighter
vertex of one of the lightest parts, so that both end within the bound (at
ca-astroph P = 512 the moves alone left 0.027-0.033 imbalance where eps is
0.01). ``hp`` refines the result for volume afterwards (:mod:`.km1`). Serial
numba and numpy: the same result for the same seed.
"""

from __future__ import annotations

import time

import numpy as np

from .pins import jit

UNLIMITED = np.iinfo(np.int64).max
TOLERANCES = (0, 1, 2, 4, 8, 16, 32, 64, 256, 1024, UNLIMITED)


@jit
def _tier(after, load_a, lmax):
    """0: the target stays within the bound; 1: it does not, but the pair's
    heavier part gets lighter (the sorted loads fall, so moves end); 2: no."""
    if after <= lmax:
        return 0
    return 1 if after < load_a else 2


@jit
def _best_target(v, graph, vol, lmax, scr):
    """(edges newly cut, part) of v's best move: to a part that stays within
    the bound if there is one, else to one that ends lighter than v's part
    is now; the fewest edges newly cut, then the lighter part. Part -1: no
    such part. ``graph = (xadj, adjncy, w)``, ``vol = (part, load)``, ``scr =
    (cnt, touched)``: (P,) scratch, v's edges per part."""
    xadj, adjncy, w = graph
    part, load = vol
    cnt, touched = scr
    a = part[v]
    nt, own = 0, 0
    for p in range(xadj[v], xadj[v + 1]):
        k = part[adjncy[p]]
        if k == a:
            own += 1
        else:
            if cnt[k] == 0:
                touched[nt] = k
                nt += 1
            cnt[k] += 1
    best_b, best_c, best_t = -1, 0, 2
    lightest = int(np.argmin(load))
    shared = 0  # v's edges into the lightest part
    for t in range(nt + 1):
        if t < nt:
            b = touched[t]
            c = cnt[b]
            cnt[b] = 0
            if b == lightest:
                shared = c
                continue  # scored last, with the others
        else:
            b, c = lightest, shared
            if b == a:
                break
        cost = own - c
        tier = _tier(load[b] + w[v], load[a], lmax)
        if tier < best_t or (tier == best_t and (cost < best_c or (cost == best_c and load[b] < load[best_b]))):
            best_b, best_c, best_t = b, cost, tier
    return best_c, (best_b if best_t < 2 else -1)


@jit
def _pass(order, graph, vol, lmax, tol, scr):
    """One pass; returns (moves, edges newly cut)."""
    w = graph[2]
    part, load = vol
    moves, cut = 0, 0
    for v in order:
        a = part[v]
        if load[a] <= lmax:
            continue
        cost, b = _best_target(v, graph, vol, lmax, scr)
        if b >= 0 and cost <= tol:
            part[v] = b
            load[a] -= w[v]
            load[b] += w[v]
            moves += 1
            cut += cost
    return moves, cut


def load_bound(weights: np.ndarray, parts: int, eps: float) -> int:
    """``max(floor((1 + eps) * mean), ceil(mean), heaviest vertex)`` of the
    part weights (below the last two no partition exists)."""
    weights = np.asarray(weights)
    if not weights.size:
        return 0
    total = int(weights.sum())
    return max(int(np.floor((1 + eps) * total / parts)), -(-total // parts), int(weights.max()))


def rebalance(xadj: np.ndarray, adjncy: np.ndarray, weights: np.ndarray, part: np.ndarray, parts: int, *,
              eps: float = 0.03, seed: int = 0) -> tuple[np.ndarray, dict]:
    """Move vertices until every part's load is at most :func:`load_bound`.

    Parameters
    ----------
    xadj : (n + 1,) int, adjncy : (m,) int
        The symmetric graph without self loops (CSR; memory maps are fine).
    weights : (n,) int vertex weights
    part : (n,) int, the partition to bring under the bound
    parts : int
    eps : allowed imbalance (max / mean - 1)
    seed : seeds the order of every pass

    Returns
    -------
    part : (n,) int32 (``part`` unchanged when it was within the bound)
    info : dict: ``lmax``, max load ``before`` and ``after``, ``moves``,
        edges newly ``cut``, ``seconds``
    """
    t0 = time.perf_counter()
    w = np.ascontiguousarray(weights, np.int64)
    part = np.array(part, np.int32)
    load = np.bincount(part, weights=w, minlength=parts).astype(np.int64)
    lmax = load_bound(w, parts, eps)
    info: dict = {"lmax": lmax, "before": int(load.max(initial=0)), "moves": 0, "cut": 0}
    if parts > 1 and load.max(initial=0) > lmax:
        rng = np.random.default_rng([seed, 0x5245])
        scr = (np.zeros(parts, np.int64), np.empty(parts, np.int64))
        graph = (np.asarray(xadj).view(np.ndarray), np.asarray(adjncy).view(np.ndarray), w)
        for tol in TOLERANCES:
            order = rng.permutation(part.size).astype(np.int64)
            moves, cut = _pass(order, graph, (part, load), lmax, tol, scr)
            info["moves"] += int(moves)
            info["cut"] += int(cut)
            if load.max() <= lmax:
                break
        if load.max() > lmax:
            info["swaps"] = swap_down(part, load, w, lmax)
    info["after"] = int(load.max(initial=0))
    info["seconds"] = round(time.perf_counter() - t0, 3)
    return part, info


SWAP_TARGETS = 8  # the lightest parts a swap looks at


def swap_down(part: np.ndarray, load: np.ndarray, w: np.ndarray, lmax: int) -> int:
    """Swap vertices until no part is above ``lmax`` or no swap helps; in
    place. Returns the number of swaps.

    The heaviest part ``a`` (excess ``load[a] - lmax``) trades a vertex v
    for a vertex u of one of the :data:`SWAP_TARGETS` lightest parts ``b``
    (room ``lmax - load[b]``) with ``excess <= w[v] - w[u] <= room``: both
    end within the bound, so every swap fixes a part and at most P swaps
    are made. The first such pair in vertex order is taken (the cut is not
    looked at: swaps come last, for the few parts the moves could not fix).

    Parameters
    ----------
    part : (n,) int32, changed in place
    load : (P,) int64 part loads, changed in place
    w : (n,) int64 vertex weights
    lmax : the bound
    """
    swaps = 0
    for _ in range(load.size):
        a = int(np.argmax(load))
        excess = int(load[a]) - lmax
        if excess <= 0:
            break
        va = np.flatnonzero(part == a)
        found = None
        for b in np.argsort(load, kind="stable")[:SWAP_TARGETS]:
            room = lmax - int(load[b])
            if b == a or room < excess:
                continue
            ub = np.flatnonzero(part == b)
            order = np.argsort(w[ub], kind="stable")
            wu = w[ub][order]
            i = np.searchsorted(wu, w[va] - room, side="left")  # the lightest u with w[v] - w[u] <= room
            ok = np.flatnonzero((i < wu.size) & (wu[np.minimum(i, wu.size - 1)] <= w[va] - excess))
            if ok.size:
                k = int(ok[0])
                found = (int(va[k]), int(ub[order[i[k]]]), int(b))
                break
        if found is None:
            break
        v, u, b = found
        part[v], part[u] = b, a
        delta = int(w[v] - w[u])
        load[a] -= delta
        load[b] += delta
        swaps += 1
    return swaps


def rebalance_parhip(path: str, part: np.ndarray, parts: int, eps: float, seed: int) -> tuple[np.ndarray, dict]:
    """:func:`rebalance` on the graph and vertex weights of a ParHIP file.
    The neighbours are read only when a part is above the bound, then as
    int32 (where n allows) by pieces (:func:`..graphfile.read_neighbours`):
    4 bytes an entry against the 8 of the file's pages a memory map would
    hold; the same result."""
    from ..graphfile import read_neighbours, read_parhip

    xadj, adjncy, weights = read_parhip(path)
    w = np.ones(xadj.size - 1, np.int64) if weights is None else np.array(weights, np.int64)
    load = np.bincount(np.asarray(part), weights=w, minlength=parts)
    if parts > 1 and load.max(initial=0) > load_bound(w, parts, eps):
        adjncy = read_neighbours(path)
    return rebalance(xadj, adjncy, w, part, parts, eps=eps, seed=seed)
