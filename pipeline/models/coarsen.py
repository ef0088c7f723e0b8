"""Coarsening levels of our own before KaMinPar (``gp``, ``--gp-levels``), with 4-byte ids.

The PyPI wheel of KaMinPar holds every coarse graph at 16 bytes an adjacency entry (64-bit ids and weights),
and on an R-MAT graph its first levels barely shrink the adjacency (scale 22: 128.3M entries, 107.3M after
the first level, 10.9M after the second), so its child held 28 bytes a nonzero of Â at scale 22 and more at
larger scales. Here the first levels are ours: size-constrained label propagation over the graph's
neighbours read as int32 (:func:`clusters`: vertices by ascending degree, a vertex joins the cluster it has
the most edge weight to, within KaMinPar's own cluster weight limit :func:`cluster_limit`), then contraction
into a ParHIP file with 32-bit ids and 32-bit edge weights (:func:`write_level`, a piece of coarse vertices
at a time: the coarse graph is never held whole). Each level holds its own graph at 4 bytes an entry
(8 with the edge weights of a coarse level) and a few (n,) arrays. KaMinPar partitions the last level's
file; the partition is projected back to the graph's vertices, refined by k-way label propagation on the
graph (:func:`refine`, within KaMinPar's bound), then brought under the build's bound (:mod:`.rebalance`).

Measured (``benchmarks.build.coarsen_first``, R-MAT scale 22, p = 64, KaMinPar at eps 0.05; RESULTS,
"KaMinPar's child with coarsening levels of our own"): two levels, the child's peak 1,100 MiB against
KaMinPar's 1,828, the edge cut 0.66% higher. Serial numba: the same levels and partition for the same input.
"""

from __future__ import annotations

import os

import numba
import numpy as np

from ..graphfile import write_pieces

VERSION = 8 | 32  # ParHIP flags: vertex and edge weights present, 32-bit vertex ids and edge weights
PIECE = 1 << 22  # coarse adjacency entries written at a time
ROUNDS = 5  # label propagation rounds a level (KaMinPar's default for its own coarsening)
REFINE_ROUNDS = 3
CONTRACTION_LIMIT = 2000  # KaMinPar's: it coarsens a graph of more than this many vertices a part, and so do we


@numba.njit(cache=True, nogil=True)
def _move(u, src, dst, w, load, where):  # pragma: no cover - numba
    """Vertex ``u`` of weight ``w[u]`` from ``src`` to ``dst``: the loads and ``where`` (its cluster or part)."""
    load[src] -= w[u]
    load[dst] += w[u]
    where[u] = dst


@numba.njit(cache=True, nogil=True)
def lp_round(xadj, adj, ew, w, labels, cw, maxw, order, rating, touched):  # pragma: no cover - numba
    """One round of size-constrained label propagation; ``ew`` (m,) edge weights or (0,) for ones. Returns
    the vertices moved."""
    moved = 0
    for i in range(order.size):
        u = order[i]
        lu, nt = labels[u], 0
        for e in range(xadj[u], xadj[u + 1]):
            lab = labels[adj[e]]
            if rating[lab] == 0:
                touched[nt] = lab
                nt += 1
            rating[lab] += ew[e] if ew.size else 1
        best, bestr = lu, rating[lu]
        for j in range(nt):
            lab = touched[j]
            r = rating[lab]
            if lab != lu and (r > bestr or (r == bestr and best != lu and lab < best)) and cw[lab] + w[u] <= maxw:
                best, bestr = lab, r
        for j in range(nt):
            rating[touched[j]] = 0
        if best != lu:
            _move(u, lu, best, w, cw, labels)
            moved += 1
    return moved


@numba.njit(cache=True, nogil=True)
def contract(xadj, adj, ew, cid, members, cstart, c0, c1, out_adj, out_w, rating, touched):  # pragma: no cover
    """Coarse vertices [c0, c1): their neighbours (sorted) and edge weights into ``out_adj``/``out_w`` from 0
    when those are given (size > 0), else only counted; returns each one's degree, (c1 - c0,)."""
    deg = np.zeros(c1 - c0, np.int64)
    p = 0
    for c in range(c0, c1):
        nt = 0
        for k in range(cstart[c], cstart[c + 1]):
            u = members[k]
            for e in range(xadj[u], xadj[u + 1]):
                cv = cid[adj[e]]
                if cv != c:
                    if rating[cv] == 0:
                        touched[nt] = cv
                        nt += 1
                    rating[cv] += ew[e] if ew.size else 1
        deg[c - c0] = nt
        if out_adj.size:
            t = np.sort(touched[:nt])
            for j in range(nt):
                out_adj[p + j] = t[j]
                out_w[p + j] = rating[t[j]]
            p += nt
        for j in range(nt):
            rating[touched[j]] = 0
    return deg


@numba.njit(cache=True, nogil=True)
def refine_round(xadj, adj, w, part, load, bound, order, conn):  # pragma: no cover - numba
    """One round of k-way label propagation: a vertex moves to the part it has the most neighbours in when
    that is more than in its own and the part stays within ``bound``. Returns the moves."""
    moved = 0
    for i in range(order.size):
        u = order[i]
        pu = part[u]
        for e in range(xadj[u], xadj[u + 1]):
            conn[part[adj[e]]] += 1
        best, bestc = pu, conn[pu]
        for q in range(conn.size):
            if conn[q] > bestc and load[q] + w[u] <= bound:
                best, bestc = q, conn[q]
        for e in range(xadj[u], xadj[u + 1]):
            conn[part[adj[e]]] = 0
        if best != pu:
            _move(u, pu, best, w, load, part)
            moved += 1
    return moved


def cluster_limit(total: int, n: int, parts: int, eps: float) -> int:
    """KaMinPar's cluster weight limit: ``eps`` times the total weight over ``min(parts, n / C)``, C its
    contraction limit (:data:`CONTRACTION_LIMIT`)."""
    return int(eps * total / max(1.0, min(parts, n / CONTRACTION_LIMIT)))


def clusters(xadj: np.ndarray, adj: np.ndarray, ew: np.ndarray, w: np.ndarray, maxw: int,
             rounds: int = ROUNDS) -> np.ndarray:
    """(n,) int32 coarse vertex of each vertex, numbered in the order of their smallest member; ``xadj``
    (n+1,) int64, ``adj`` (m,) int32, ``ew`` (m,) or (0,) edge weights, ``w`` (n,) int64 vertex weights.
    Rounds stop early when fewer than n / 1000 vertices move."""
    n = xadj.size - 1
    labels, cw = np.arange(n, dtype=np.int32), w.astype(np.int64)
    deg = np.diff(xadj)
    order = np.argsort(deg, kind="stable").astype(np.int32)
    rating = np.zeros(n, np.int64)
    touched = np.empty(max(1, int(deg.max(initial=0))), np.int32)
    for _ in range(rounds):
        if lp_round(xadj, adj, ew, w, labels, cw, maxw, order, rating, touched) < max(1, n // 1000):
            break
    used = np.zeros(n, np.bool_)
    used[labels] = True
    return (np.cumsum(used, dtype=np.int64) - 1)[labels].astype(np.int32)


def write_level(path: str, xadj: np.ndarray, adj: np.ndarray, ew: np.ndarray, w: np.ndarray,
                cid: np.ndarray) -> tuple[int, int]:
    """The graph contracted by ``cid`` (n,) as a ParHIP file (:data:`VERSION`) at ``path``: the coarse
    vertices' weights summed, parallel edges merged into one of their summed weight, edges inside a coarse
    vertex dropped. Returns (nc, mc)."""
    nc = int(cid.max(initial=-1)) + 1
    members = np.argsort(cid, kind="stable").astype(np.int32)
    cstart = np.zeros(nc + 1, np.int64)
    cstart[1:] = np.cumsum(np.bincount(cid, minlength=nc))
    rating, touched, none = np.zeros(nc, np.int64), np.empty(max(nc, 1), np.int32), np.zeros(0, np.int32)
    cx = np.zeros(nc + 1, np.int64)
    cx[1:] = np.cumsum(contract(xadj, adj, ew, cid, members, cstart, 0, nc, none, none, rating, touched))
    mc, base = int(cx[-1]), 24 + 8 * (nc + 1)
    with open(path, "wb") as f:
        f.write(np.array([VERSION, nc, mc], "<u8").tobytes())
        f.write((base + 4 * cx).astype("<u8").tobytes())
        f.truncate(base + 8 * mc + 8 * nc)
        f.seek(base + 4 * mc)
        f.write(np.bincount(cid, weights=w, minlength=nc).astype("<i8").tobytes())
    c0 = 0
    while c0 < nc:  # about PIECE entries at a time: counted above, made again here piece by piece
        c1 = max(c0 + 1, min(nc, int(np.searchsorted(cx, cx[c0] + PIECE, side="right")) - 1))
        k = int(cx[c1] - cx[c0])
        ids, wts = np.empty(k, "<u4"), np.empty(k, "<u4")
        contract(xadj, adj, ew, cid, members, cstart, c0, c1, ids, wts, rating, touched)
        write_pieces(path, [(base + 4 * int(cx[c0]), ids), (base + 4 * mc + 8 * nc + 4 * int(cx[c0]), wts)])
        c0 = c1
    return nc, mc


def read_level(path: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(xadj (n+1,) int64, neighbours (m,) int32, edge weights (m,) int32 or (0,), vertex weights (n,) int64)
    of the build's ParHIP file or of a level's (:data:`VERSION`), read, not mapped."""
    from ..graphfile import read_neighbours, read_parhip

    version, n, m = (int(x) for x in np.fromfile(path, "<u8", count=3))
    if version != VERSION:
        xadj, _, weights = read_parhip(path)
        w = np.ones(n, np.int64) if weights is None else np.array(weights, np.int64)
        return np.asarray(xadj, np.int64), read_neighbours(path), np.zeros(0, np.int32), w
    base = 24 + 8 * (n + 1)
    xadj = (np.fromfile(path, "<u8", count=n + 1, offset=24).astype(np.int64) - base) // 4
    adj = np.fromfile(path, "<u4", count=m, offset=base).view(np.int32)
    w = np.fromfile(path, "<i8", count=n, offset=base + 4 * m)
    return xadj, adj, np.fromfile(path, "<u4", count=m, offset=base + 4 * m + 8 * n).view(np.int32), w


def coarsen(path: str, levels: int, parts: int, eps: float) -> tuple[str, np.ndarray, list[tuple[int, int]]]:
    """Up to ``levels`` levels of the ParHIP file ``path``, each written beside it and the one before let go; a
    level only of a graph of more than :data:`CONTRACTION_LIMIT` vertices a part (as KaMinPar). Returns the
    last level's file (``path`` itself when none was made), the (n,) int32 map of the graph's vertices to its
    vertices, and every level's (vertices, adjacency entries), the graph's first. ``eps``: the imbalance
    KaMinPar partitions for."""
    cid: np.ndarray | None = None
    _, n, m = (int(x) for x in np.fromfile(path, "<u8", count=3))
    sizes, cur = [(n, m)], path
    for level in range(1, levels + 1):
        if sizes[-1][0] <= CONTRACTION_LIMIT * parts or n >= 2**31:  # small enough, or beyond 4-byte ids
            break
        xadj, adj, ew, w = read_level(cur)
        here = clusters(xadj, adj, ew, w, cluster_limit(int(w.sum()), xadj.size - 1, parts, eps))
        nxt = f"{path}.level{level}"
        sizes.append(write_level(nxt, xadj, adj, ew, w, here))
        del xadj, adj, ew, w
        cid = here if cid is None else here[cid]
        if cur != path:
            os.remove(cur)
        cur = nxt
    return cur, (np.arange(n, dtype=np.int32) if cid is None else cid), sizes


def refine(xadj: np.ndarray, adj: np.ndarray, w: np.ndarray, part: np.ndarray, parts: int, eps: float, *,
           rounds: int = REFINE_ROUNDS) -> int:
    """``rounds`` rounds of :func:`refine_round` on the graph (:func:`read_level`'s ``xadj``, ``adj`` and vertex
    weights ``w``), in place on ``part`` (n,) int32, every part kept within the bound of ``eps`` (a part above it
    only gives); the moves."""
    from .rebalance import load_bound

    load = np.bincount(part, weights=w, minlength=parts).astype(np.int64)
    order = np.argsort(np.diff(xadj), kind="stable").astype(np.int32)
    conn, bound = np.zeros(parts, np.int64), int(load_bound(w, parts, eps))
    return sum(int(refine_round(xadj, adj, w, part, load, bound, order, conn)) for _ in range(rounds))
