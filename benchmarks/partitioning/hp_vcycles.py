"""Mt-KaHyPar variants from hp's start, against METIS (how issue 31's presets were chosen).

    python -m benchmarks.partitioning.hp_vcycles GRAPH P PRESET:VCYCLES [PRESET:VCYCLES ...]

For GRAPH at P parts (the build's work weights, widths [64, 16, 16], eps 0.01, seed 0): METIS, then
``fast`` (KaMinPar, rebalanced, refined for connectivity-1), then for each ``PRESET:VCYCLES`` Mt-KaHyPar
with that preset on two threads: ``VCYCLES`` V-cycles from ``fast``'s result, or from scratch when 0.
Prints each one's total volume and wall time as ratios to METIS's (``fast``'s time counted in the
V-cycles'). A printout, not a RESULTS.md section: its runs are recorded by hand in "Notes: hp's
Mt-KaHyPar variants (issue 31)".
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.common.graphs import adjacency
from shgcn.core.work import vertex_weights
from shgcn.pipeline.metrics.hypergraph import column_net
from shgcn.pipeline.metrics.volume import volume_matrix
from shgcn.pipeline.models.gp import kaminpar_partition, metis_partition, write_parhip
from shgcn.pipeline.models.kahypar import kahypar_partition
from shgcn.pipeline.models.km1 import refine_km1
from shgcn.pipeline.models.rebalance import rebalance_parhip

EPS = 0.01


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("graph")
    ap.add_argument("parts", type=int)
    ap.add_argument("variants", nargs="+", help="PRESET:VCYCLES (0: from scratch)")
    args = ap.parse_args()
    a, _ = adjacency(args.graph)
    w = vertex_weights(np.diff(a.indptr), "work", [64, 16, 16])
    p = args.parts

    def vol(part: np.ndarray) -> int:
        return int(volume_matrix(a, part, p).sum())

    refine_km1(a, np.zeros(a.shape[0], np.int32), 2, w, EPS, 0)  # numba compiled before the clock starts
    t = time.perf_counter()
    ref = vol(metis_partition(a, p, EPS, 0, w))
    t_metis = time.perf_counter() - t
    print(f"METIS: total {ref}, {t_metis:.2f} s", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "g.parhip")
        write_parhip(a, w, path)
        t = time.perf_counter()
        start, _ = rebalance_parhip(path, kaminpar_partition(path, p, EPS, 0), p, EPS, 0)
        fast, _ = refine_km1(a, start, p, w, EPS, 0)
        t_fast = time.perf_counter() - t
    print(f"fast: total {vol(fast) / ref:.3f}x, time {t_fast / t_metis:.1f}x", flush=True)
    hg = column_net(a, weights=w)
    for spec in args.variants:
        preset, vcycles = spec.split(":")
        t = time.perf_counter()
        if int(vcycles) == 0:
            part, extra = kahypar_partition(hg, p, EPS, 0, 2, preset), 0.0
        else:
            part, extra = kahypar_partition(hg, p, EPS, 0, 2, preset, initial=fast, vcycles=int(vcycles)), t_fast
        print(f"{spec}: total {vol(part) / ref:.3f}x, time {(time.perf_counter() - t + extra) / t_metis:.1f}x",
              flush=True)


if __name__ == "__main__":
    main()
