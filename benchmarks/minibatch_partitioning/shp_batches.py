"""How many sampled batches the stochastic hypergraph needs to beat the
better of gp and hp on held-out batches, per sampler, next to the Hoeffding
count.

    python -m benchmarks.minibatch_partitioning.shp_batches [--graphs ca-astroph soc-slashdot0902] [--parts 16]
                                                            [--samplers node edge rw] [--max-batches 1024] [--cache DIR]

For N = 1, 2, 4, ... batches of the BUILD stream (B = 10% of n): the paper's
model (the merged nets of the N batches' submatrices, Mt-KaHyPar from
scratch, connectivity-1) and the same hypergraph used to refine the better
of gp and hp (2 V-cycles; shp's rounds now run 1). Each partition is scored on
200 HELDOUT batches. Doubling stops at --max-batches or when a partition
takes longer than --max-seconds. The base stores (rp, gp, hp) are the ones
of shp_bench.py (same --cache).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from benchmarks.common import REPO, table, write_section
from benchmarks.minibatch_partitioning.shp_bench import base_store


def curve(path: Path, graph: str, parts: int, sampler: str, max_batches: int, max_seconds: float) -> dict:
    from shgcn import store
    from shgcn.core.sample import BUILD, HELDOUT, Sampler
    from shgcn.pipeline.metrics import batches as batch_quality
    from shgcn.pipeline.metrics.hypergraph import batch_nets, hoeffding_nets, stochastic_hypergraph
    from shgcn.pipeline.models.kahypar import kahypar_partition
    from shgcn.pipeline.models.shp import SHPConfig
    from shgcn.pipeline.stages.normalize import normalized_adjacency

    s = store.open_store(path)
    adj = s.graph()
    a = normalized_adjacency(adj, bool(s.attrs["directed"]))
    a_csc = sp.csc_matrix(a)
    smp = Sampler(adj, SHPConfig(sampler=sampler).sampler_config(a.shape[0], 0))
    held = batch_quality.BatchSet(a_csc, smp.batches(range(200), HELDOUT))
    base = {m: held.mean_volume(s.partition(m), parts) for m in ("gp", "hp")}
    best = min(base, key=base.__getitem__)
    start = s.partition(best)
    weights = np.diff(a.indptr).astype(np.int64)
    required = hoeffding_nets(parts, 0.1, 0.5)
    points, n_batches = [], 1
    while n_batches <= max_batches:
        hg = stochastic_hypergraph(batch_nets(a_csc, smp.batches(range(n_batches), BUILD)), weights)
        t0 = time.perf_counter()
        scratch = held.mean_volume(kahypar_partition(hg, parts, 0.03, 0), parts)
        t1 = time.perf_counter()
        refined = held.mean_volume(kahypar_partition(hg, parts, 0.03, 0, initial=start, vcycles=2), parts)
        t2 = time.perf_counter()
        points.append((n_batches, scratch, refined, t1 - t0, t2 - t1))
        print(graph, parts, sampler, points[-1], flush=True)
        if max(t1 - t0, t2 - t1) > max_seconds:
            break
        n_batches *= 2
    low = base[best]

    def first(k: int) -> str:
        hit = [pt[0] for pt in points if pt[k] < low]
        return str(hit[0]) if hit else f"> {points[-1][0]}"

    return {"graph": graph, "p": parts, "sampler": sampler, "min": f"{low:,.1f} ({best})",
            "Hoeffding": f"{required:,} nets = {-(-required // smp.cfg.size)} batches",
            "beat (scratch)": first(1), "beat (refined)": first(2),
            "curve": "; ".join(f"{nb}: {sc:,.1f} / {rf:,.1f}" for nb, sc, rf, _, _ in points)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--graphs", nargs="+", default=["ca-astroph", "soc-slashdot0902"])
    ap.add_argument("--parts", type=int, nargs="+", default=[16])
    ap.add_argument("--samplers", nargs="+", default=["node", "edge", "rw"])
    ap.add_argument("--max-batches", type=int, default=1024)
    ap.add_argument("--max-seconds", type=float, default=300.0)
    ap.add_argument("--cache", default=str(REPO / "build" / "shp-bench"))
    args = ap.parse_args()
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    rows = [curve(base_store(cache, g, p), g, p, smp, args.max_batches, args.max_seconds)
            for g in args.graphs for p in args.parts for smp in args.samplers]
    body = table(rows, [(k, k) for k in ("graph", "p", "sampler", "min", "Hoeffding", "beat (scratch)",
                                          "beat (refined)", "curve")])
    body += ("\nmin: the better of gp and hp on 200 HELDOUT batches (mean rows per mini-batch SpMM). curve: "
             "batches N: held-out volume of the paper's model (N batches, partitioned from scratch) / of the same "
             "hypergraph refining the better of gp and hp. beat: the first N below min. Hoeffding: the nets for "
             "theta = 0.1, delta = 0.5, and the batches of B = 10% of n that hold them.\n")
    write_section("Mini-batch partitioning: batches needed to beat gp and hp", body)


if __name__ == "__main__":
    main()
