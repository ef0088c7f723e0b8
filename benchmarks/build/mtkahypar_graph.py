"""Mt-KaHyPar as the graph partitioner, phase by phase (issue 59: is there a partitioner whose child holds
fewer bytes a nonzero than KaMinPar's, 29 B/nnz of Â, with the PyPI wheels?).

    pipeline export graph rmat:scale=S,edge_factor=16,seed=1 rS.metis --format metis   # the build's graph
    python -m benchmarks.build.mtkahypar_graph rS.metis [--preset deterministic] [--parts 64] [--eps 0.05]
        [--nnz NNZ]

One process, as the build's child would be: ``mtkahypar.initialize(1)``, a context from ``--preset`` for
``--parts`` parts, imbalance ``--eps``, the edge-cut objective, seed 0; then ``graph_from_file(FILE, METIS)``
and ``partition``. The high-water mark (``VmHWM``) is reset before each phase and read after it, as
``benchmarks.build.kaminpar_phases`` does (compare with its rows on the ParHIP file of the same graph). Printed:
the load and partition peaks (MiB), the edge cut (undirected edges between parts, Mt-KaHyPar's own count), the
imbalance, the seconds, and the peak in bytes a nonzero of Â (``--nnz``: ``pipeline info``'s nonzeros).
"""

from __future__ import annotations

import argparse
import time

from benchmarks.build.kaminpar_phases import MIB, peak_mib, reset_peak, rss_mib


def phases(path: str, preset: str, parts: int, eps: float, seed: int = 0) -> dict:
    """Each phase's peak (MiB) and seconds, the cut and the imbalance of Mt-KaHyPar's partition of ``path``."""
    import mtkahypar

    init = mtkahypar.initialize(1)
    ctx = init.context_from_preset(getattr(mtkahypar.PresetType, preset.upper()))
    ctx.set_partitioning_parameters(parts, eps, mtkahypar.Objective.CUT)
    ctx.logging = False
    mtkahypar.set_seed(seed)
    out = {"imports": rss_mib()}
    reset_peak()
    t0 = time.perf_counter()
    graph = init.graph_from_file(path, ctx, mtkahypar.FileFormat.METIS)
    out.update(load_peak=peak_mib(), load_s=time.perf_counter() - t0)
    reset_peak()
    t0 = time.perf_counter()
    part = graph.partition(ctx)
    out.update(partition_peak=peak_mib(), partition_s=time.perf_counter() - t0, cut=int(part.cut()),
               imbalance=float(part.imbalance(ctx)))
    return out


def line(got: dict, nnz: int | None) -> str:
    peak = max(got["load_peak"], got["partition_peak"])
    per = f"; {peak * MIB / nnz:.1f} B/nnz of Â" if nnz else ""
    return (f"load peak {got['load_peak']:,.0f} MiB ({got['load_s']:.0f} s); partition peak "
            f"{got['partition_peak']:,.0f} MiB ({got['partition_s']:.0f} s); edge cut {got['cut']:,}; imbalance "
            f"{got['imbalance']:.4f}{per}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file", help="a METIS graph file (pipeline export graph SOURCE FILE --format metis)")
    ap.add_argument("--preset", default="deterministic", help="a name of mtkahypar.PresetType")
    ap.add_argument("--parts", type=int, default=64)
    ap.add_argument("--eps", type=float, default=0.05)
    ap.add_argument("--nnz", type=int, default=None, help="Â's nonzeros (pipeline info), for B/nnz of Â")
    args = ap.parse_args()
    print(line(phases(args.file, args.preset, args.parts, args.eps), args.nnz))


if __name__ == "__main__":
    main()
