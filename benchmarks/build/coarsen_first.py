"""A first coarsening level of our own before KaMinPar (issue 59: the lever left for the partitioner's child),
tried on the build's ParHIP file, each phase's peak memory measured as ``kaminpar_phases`` measures it.

    pipeline export graph rmat:scale=S,edge_factor=16,seed=1 rS.parhip --format parhip   # the build's own file
    python -m benchmarks.build.coarsen_first rS.parhip [--levels 1] [--rounds 5] [--kaminpar-eps 0.05]
        [--parts 64] [--eps 0.01] [--nnz NNZ]

KaMinPar's child holds its coarse graphs at 16 bytes an adjacency entry (the PyPI wheel's 64-bit ids and
weights). Here ``--levels`` levels are coarsened first with 4-byte ids: size-constrained label propagation
(``--rounds`` rounds, vertices by ascending degree, ties kept, a cluster at most KaMinPar's own limit
``kaminpar_eps * W / min(parts, n / 2000)``) over the neighbours read as int32, then contraction into a
ParHIP file with 32-bit ids and 32-bit edge weights (version 40), written a piece of coarse vertices at a
time. KaMinPar (the default preset, one thread, compressed from ``COMPRESS_EDGES`` entries on) partitions the
coarse file for ``--kaminpar-eps``; the partition is projected to the graph's vertices and brought under
``--eps`` by the build's rebalance (no refinement on the levels of our own: the edge cut shows what that costs).
Printed: each phase's peak (``VmHWM``, reset between phases), the levels' sizes, the edge cut and work imbalance,
and the row of RESULTS.md's table "KaMinPar's child: where its peak goes". Not the build's partitioner: a
measurement of the lever.
"""

from __future__ import annotations

import argparse
import gc
import os
import time

import numba
import numpy as np

from benchmarks.build.kaminpar_phases import MIB, edge_cut, peak_mib, reset_peak, work_imbalance

VERSION = 8 | 32  # ParHIP flags: vertex and edge weights present, 32-bit vertex ids and edge weights
PIECE = 1 << 22  # coarse adjacency entries written at a time


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
            cw[lu] -= w[u]
            cw[best] += w[u]
            labels[u] = best
            moved += 1
    return moved


@numba.njit(cache=True, nogil=True)
def contract(xadj, adj, ew, cid, members, cstart, c0, c1, out_adj, out_w, rating, touched):  # pragma: no cover
    """Coarse vertices [c0, c1): their neighbours (sorted) and edge weights into ``out_adj``/``out_w`` from 0
    when they are given (size > 0), else only counted; returns each one's degree (c1 - c0,)."""
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
    """One round of k-way label propagation refinement on the graph: a vertex moves to the part it has the most
    neighbours in when that is more than in its own and the part stays within ``bound``. Returns the moves."""
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
            load[pu] -= w[u]
            load[best] += w[u]
            part[u] = best
            moved += 1
    return moved


def refine(path: str, part: np.ndarray, parts: int, eps: float, rounds: int) -> int:
    """``rounds`` rounds of :func:`refine_round` on the build's ParHIP file, every part within the bound of
    ``eps`` (KaMinPar's: the rebalance to the build's follows); the moves."""
    from shgcn.pipeline.models.rebalance import load_bound

    xadj, adj, _, w = read_level(path)
    load = np.bincount(part, weights=w, minlength=parts).astype(np.int64)
    order = np.argsort(np.diff(xadj), kind="stable").astype(np.int32)
    conn = np.zeros(parts, np.int64)
    bound = int(load_bound(w, parts, eps))
    return sum(int(refine_round(xadj, adj, w, part, load, bound, order, conn)) for _ in range(rounds))


def clusters(xadj, adj, ew, w, maxw: int, rounds: int) -> np.ndarray:
    """(n,) int32 coarse vertex of each vertex, numbered by their smallest member."""
    n = xadj.size - 1
    labels, cw = np.arange(n, dtype=np.int32), w.copy()
    order = np.argsort(np.diff(xadj), kind="stable").astype(np.int32)
    rating = np.zeros(n, np.int64)
    touched = np.empty(max(1, int(np.diff(xadj).max(initial=0))), np.int32)
    for _ in range(rounds):
        if lp_round(xadj, adj, ew, w, labels, cw, maxw, order, rating, touched) < max(1, n // 1000):
            break
    used = np.zeros(n, np.bool_)
    used[labels] = True
    return (np.cumsum(used, dtype=np.int64) - 1)[labels].astype(np.int32)


def write_coarse(path: str, xadj, adj, ew, w, cid: np.ndarray) -> tuple[int, int]:
    """The contracted graph of ``cid`` as a ParHIP file (:data:`VERSION`) at ``path``; (nc, mc)."""
    nc = int(cid.max(initial=-1)) + 1
    members = np.argsort(cid, kind="stable").astype(np.int32)
    cstart = np.zeros(nc + 1, np.int64)
    cstart[1:] = np.cumsum(np.bincount(cid, minlength=nc))
    rating = np.zeros(nc, np.int64)
    touched = np.empty(nc, np.int32)
    none = np.zeros(0, np.int32)
    deg = contract(xadj, adj, ew, cid, members, cstart, 0, nc, none, none, rating, touched)
    cx = np.zeros(nc + 1, np.int64)
    cx[1:] = np.cumsum(deg)
    mc = int(cx[-1])
    base = 24 + 8 * (nc + 1)
    with open(path, "wb") as f:
        f.write(np.array([VERSION, nc, mc], "<u8").tobytes())
        f.write((base + 4 * cx).astype("<u8").tobytes())
        f.truncate(base + 4 * mc + 8 * nc + 4 * mc)
        f.seek(base + 4 * mc)
        f.write(np.bincount(cid, weights=w, minlength=nc).astype("<i8").tobytes())
    fd = os.open(path, os.O_WRONLY)
    try:
        c0 = 0
        while c0 < nc:  # a piece of about PIECE entries at a time: the coarse graph is never held whole
            c1 = max(c0 + 1, min(nc, int(np.searchsorted(cx, cx[c0] + PIECE, side="right")) - 1))
            k = int(cx[c1] - cx[c0])
            ids, wts = np.empty(k, "<u4"), np.empty(k, "<u4")
            contract(xadj, adj, ew, cid, members, cstart, c0, c1, ids, wts, rating, touched)
            os.pwrite(fd, ids.tobytes(), base + 4 * int(cx[c0]))
            os.pwrite(fd, wts.tobytes(), base + 4 * mc + 8 * nc + 4 * int(cx[c0]))
            c0 = c1
    finally:
        os.close(fd)
    return nc, mc


def read_level(path: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(xadj int64, neighbours int32, edge weights int32 or (0,), vertex weights int64) of the build's ParHIP file
    (version 1) or of a level's (:data:`VERSION`)."""
    from shgcn.pipeline.graphfile import read_neighbours, read_parhip

    version, n, m = (int(x) for x in np.fromfile(path, "<u8", count=3))
    if version != VERSION:
        xadj, _, weights = read_parhip(path)
        return np.asarray(xadj, np.int64), read_neighbours(path), np.zeros(0, np.int32), np.array(weights, np.int64)
    base = 24 + 8 * (n + 1)
    xadj = (np.fromfile(path, "<u8", count=n + 1, offset=24).astype(np.int64) - base) // 4
    adj = np.fromfile(path, "<u4", count=m, offset=base).view(np.int32)
    w = np.fromfile(path, "<i8", count=n, offset=base + 4 * m)
    ew = np.fromfile(path, "<u4", count=m, offset=base + 4 * m + 8 * n).view(np.int32)
    return xadj, adj, ew, w


def coarsen(path: str, levels: int, rounds: int, keps: float, parts: int) -> tuple[str, np.ndarray, list]:
    """``levels`` levels of our own: the last level's file, the map of the graph's vertices to its vertices,
    and each level's (n, m)."""
    cid, sizes, cur = None, [], path
    for level in range(levels):
        xadj, adj, ew, w = read_level(cur)
        n = xadj.size - 1
        sizes.append((n, adj.size))
        here = clusters(xadj, adj, ew, w, int(keps * int(w.sum()) / min(parts, n / 2000)), rounds)
        nxt = f"{path}.level{level + 1}"
        write_coarse(nxt, xadj, adj, ew, w, here)
        del xadj, adj, ew, w
        cid = here if cid is None else here[cid]
        if cur != path:
            os.remove(cur)
        cur = nxt
    if cid is None:
        raise ValueError(f"levels {levels}: at least one")
    sizes.append(tuple(int(x) for x in np.fromfile(cur, "<u8", count=3)[1:]))
    return cur, cid, sizes


def phases(path: str, args) -> tuple[dict, np.ndarray]:
    """Each phase's peak (MiB) and seconds, the levels' sizes; and the rebalanced partition of the graph."""
    import kaminpar

    from shgcn.pipeline.models.gp import COMPRESS_EDGES

    out: dict = {}
    reset_peak()
    t0 = time.perf_counter()
    coarse, cid, out["sizes"] = coarsen(path, args.levels, args.rounds, args.kaminpar_eps, args.parts)
    gc.collect()
    out.update(coarsen_peak=peak_mib(), coarsen_s=time.perf_counter() - t0)
    reset_peak()
    t0 = time.perf_counter()
    graph = kaminpar.load_graph(coarse, kaminpar.GraphFileFormat.PARHIP, out["sizes"][-1][1] >= COMPRESS_EDGES)
    out.update(load_peak=peak_mib(), load_s=time.perf_counter() - t0)
    reset_peak()
    t0 = time.perf_counter()
    kaminpar.reseed(args.seed)
    ctx = kaminpar.context_by_name("default")
    coarse_part = np.asarray(kaminpar.KaMinPar(1, ctx).compute_partition(graph, args.parts, args.kaminpar_eps),
                             np.int32)
    out.update(partition_peak=peak_mib(), partition_s=time.perf_counter() - t0)
    del graph
    os.remove(coarse)
    gc.collect()
    from shgcn.pipeline.models.rebalance import rebalance_parhip

    reset_peak()
    t0 = time.perf_counter()
    part = coarse_part[cid]
    out["refined"] = refine(path, part, args.parts, args.kaminpar_eps, args.refine) if args.refine else 0
    part, info = rebalance_parhip(path, part, args.parts, args.eps, args.seed)
    out.update(rebalance_peak=peak_mib(), rebalance_s=time.perf_counter() - t0, moves=info.get("moves", 0))
    return out, np.asarray(part, np.int32)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file", help="a ParHIP file (pipeline export graph SOURCE FILE --format parhip)")
    ap.add_argument("--levels", type=int, default=1, choices=range(1, 9), metavar="1..8")
    ap.add_argument("--rounds", type=int, default=5, help="label propagation rounds a level")
    ap.add_argument("--kaminpar-eps", type=float, default=0.05, help="the imbalance KaMinPar partitions for")
    ap.add_argument("--parts", type=int, default=64)
    ap.add_argument("--eps", type=float, default=0.01, help="the build's eps: the rebalance's bound")
    ap.add_argument("--refine", type=int, default=0, help="rounds of k-way label propagation on the graph before "
                    "the rebalance (0: none)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--nnz", type=int, default=None, help="Â's nonzeros (pipeline info), for B/nnz of Â")
    args = ap.parse_args()
    got, part = phases(args.file, args)
    print("levels (n, adjacency entries): " + " -> ".join(f"({n:,}, {m:,})" for n, m in got["sizes"]))
    for ph in ("coarsen", "load", "partition", "rebalance"):  # rebalance: with the refinement, if any
        print(f"{ph}: peak {got[ph + '_peak']:,.0f} MiB, {got[ph + '_s']:.1f} s")
    cut = edge_cut(args.file, part)
    print(f"edge cut {cut:,}, work imbalance {work_imbalance(args.file, part, args.parts):.4f}, "
          f"refinement moves {got['refined']:,}, rebalance moves {got['moves']:,}")
    child = max(got[ph + "_peak"] for ph in ("coarsen", "load", "partition", "rebalance"))
    per = f"{child * MIB / args.nnz:.1f}" if args.nnz else ""
    print(f"| {args.levels} level(s) of our own, then KaMinPar at eps {args.kaminpar_eps}, {args.refine} rounds "
          "of refinement | "
          f"{got['coarsen_peak']:,.0f} MiB | {got['load_peak']:,.0f} MiB | **{got['partition_peak']:,.0f} MiB** | "
          f"{got['rebalance_peak']:,.0f} MiB | {per} | {cut:,} |")


if __name__ == "__main__":
    main()
