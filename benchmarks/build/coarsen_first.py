"""KaMinPar's child with coarsening levels of our own first (issue 59; ``gp --gp-levels``,
:mod:`shgcn.pipeline.models.coarsen`), on the build's ParHIP file, each phase's peak memory measured as
``kaminpar_phases`` measures it.

    pipeline export graph rmat:scale=S,edge_factor=16,seed=1 rS.parhip --format parhip   # the build's own file
    python -m benchmarks.build.coarsen_first rS.parhip [--levels 2] [--refine 3] [--kaminpar-eps 0.05]
        [--parts 64] [--eps 0.01] [--contraction-limit 2000] [--nnz NNZ]

What the build's child does with ``--gp-levels L`` (``pipeline/models/gp.py``), one phase at a time:
``coarsen`` (L levels of size-constrained label propagation over the neighbours read as int32, each contracted
into a ParHIP file with 32-bit ids and edge weights), KaMinPar loading the last level's file (compressed from
``COMPRESS_EDGES`` entries on) and partitioning it for ``--kaminpar-eps`` (default preset, one thread), then
the partition projected to the graph's vertices, ``--refine`` rounds of k-way label propagation on the graph
(0: none) and the build's rebalance under ``--eps`` (the last phase's peak covers both). Before each phase the
high-water mark is reset (``VmHWM``, as ``kaminpar_phases``). Printed: each phase's peak and seconds, the
levels' sizes, the edge cut and work imbalance, and a row of RESULTS.md's table "KaMinPar's child with
coarsening levels of our own".
"""

from __future__ import annotations

import argparse
import gc
import os
import time

import numpy as np

from benchmarks.build.kaminpar_phases import MIB, edge_cut, peak_mib, reset_peak, work_imbalance
from shgcn.pipeline.models.coarsen import coarsen, read_level, refine


def phases(path: str, args) -> tuple[dict, np.ndarray]:
    """Each phase's peak (MiB) and seconds, the levels' sizes; and the rebalanced partition of the graph."""
    import kaminpar

    from shgcn.pipeline.models.gp import COMPRESS_EDGES

    out: dict = {}
    reset_peak()
    t0 = time.perf_counter()
    coarse, cid, out["sizes"] = coarsen(path, args.levels, args.parts, args.kaminpar_eps)
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
    if coarse != path:
        os.remove(coarse)
    gc.collect()
    from shgcn.pipeline.models.rebalance import rebalance

    reset_peak()
    t0 = time.perf_counter()
    part = coarse_part[cid]
    xadj, adj, _, w = read_level(path)  # read once for both, as the build's child
    out["refined"] = refine(xadj, adj, w, part, args.parts, args.kaminpar_eps, rounds=args.refine) if args.refine else 0
    part, info = rebalance(xadj, adj, w, part, args.parts, eps=args.eps, seed=args.seed)
    out.update(rebalance_peak=peak_mib(), rebalance_s=time.perf_counter() - t0, moves=info.get("moves", 0))
    return out, np.asarray(part, np.int32)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file", help="a ParHIP file (pipeline export graph SOURCE FILE --format parhip)")
    ap.add_argument("--levels", type=int, default=2, choices=range(1, 9), metavar="1..8")
    ap.add_argument("--kaminpar-eps", type=float, default=0.05, help="the imbalance KaMinPar partitions for")
    ap.add_argument("--parts", type=int, default=64)
    ap.add_argument("--eps", type=float, default=0.01, help="the build's eps: the rebalance's bound")
    ap.add_argument("--refine", type=int, default=3, help="rounds of k-way label propagation on the graph before "
                    "the rebalance (0: none)")
    ap.add_argument("--contraction-limit", type=int, default=None, help="vertices a part below which no level is "
                    "made (default KaMinPar's, coarsen.CONTRACTION_LIMIT)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--nnz", type=int, default=None, help="Â's nonzeros (pipeline info), for B/nnz of Â")
    args = ap.parse_args()
    if args.contraction_limit is not None:
        from shgcn.pipeline.models import coarsen as module

        module.CONTRACTION_LIMIT = args.contraction_limit
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
