"""hp's start: which KaMinPar preset gives the connectivity refinement
(``--hp-preset fast``) the best start, in CPU time rather than wall time.

    python -m benchmarks.partitioning.hp_start [--graphs soc-slashdot0902 ca-astroph] [--parts 16 64]
                                               [--eps 0.01 0.03] [--seeds 0 1 2] [--presets default eco]

For each graph, eps, part count and seed: METIS (pymetis, the build's
weights) and, per KaMinPar preset, KaMinPar on one thread followed by the
connectivity-1 refinement (``shgcn.pipeline.models.km1``), all in this
process. Times are CPU seconds of this process (``time.process_time``: every
step runs on one thread, so other jobs on the machine slow the wall clock but
hardly the CPU time) relative to METIS's; volumes are total volume relative
to METIS's. Both are means over the seeds. Targets (issue 22): hp's default
at most 0.85x METIS's total in at most 5x its time.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.common import table, write_section
from benchmarks.common.graphs import adjacency
from shgcn.core.work import vertex_weights
from shgcn.pipeline.metrics.volume import volume_matrix
from shgcn.pipeline.models.gp import kaminpar_partition, metis_partition, write_parhip
from shgcn.pipeline.models.km1 import refine_km1

DIMS = [64, 16, 16]  # the build's random features and labels, --hidden 16


def cpu(f, *args):
    t0 = time.process_time()
    out = f(*args)
    return out, time.process_time() - t0


def one(a, w, path: str, parts: int, eps: float, seed: int, presets: list[str]) -> dict[str, tuple[float, float]]:
    """{preset: (total / METIS's, CPU time / METIS's)} for one seed."""
    ref, t_ref = cpu(metis_partition, a, parts, eps, seed, w)
    v_ref = volume_matrix(a, ref, parts).sum()
    out = {}
    for preset in presets:
        start, t_start = cpu(kaminpar_partition, path, parts, eps, seed, 1, preset)
        (part, _), t_refine = cpu(refine_km1, a, start, parts, w, eps, seed)
        out[preset] = (volume_matrix(a, part, parts).sum() / v_ref, (t_start + t_refine) / t_ref)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--graphs", nargs="+", default=["soc-slashdot0902", "ca-astroph"])
    ap.add_argument("--parts", nargs="+", type=int, default=[16, 64])
    ap.add_argument("--eps", nargs="+", type=float, default=[0.01, 0.03])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--presets", nargs="+", default=["default", "eco"])
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for g in args.graphs:
            a, _ = adjacency(g)
            w = vertex_weights(np.diff(a.indptr), "work", DIMS)
            path = str(Path(tmp) / f"{g}.parhip")
            write_parhip(a, w, path)
            refine_km1(a, np.arange(a.shape[0]) % 2, 2, w)  # compile the kernels before any clock runs
            for eps in args.eps:
                for parts in args.parts:
                    runs = [one(a, w, path, parts, eps, s, args.presets) for s in args.seeds]
                    row = {"graph": g, "eps": eps, "p": parts}
                    for p in args.presets:
                        row[f"{p}: total"] = f"{np.mean([r[p][0] for r in runs]):.3f}"
                        row[f"{p}: CPU time"] = f"{np.mean([r[p][1] for r in runs]):.1f}x"
                    rows.append(row)
                    print(row, flush=True)
    cols = [(k, k) for k in rows[0]]
    write_section("hp's start: KaMinPar presets before the connectivity refinement (issue 22)",
                  __doc__.split("\n\n", 2)[2] + "\n\n" + table(rows, cols))


if __name__ == "__main__":
    main()
