"""How long the fluid network model (shgcn.core.fluid, issue 58) takes to predict an epoch at scale: rp of
soc-slashdot0902 on the `paper` preset (48 ranks a node) at P = 512 and 4,096, p2p, GCN [64, 16, 16]; and
the same epoch under the closed form `maxmin`, with their relative difference.

    python -m benchmarks.training.fluid_speed [--parts 512 4096] [--write]

Targets (issue 58): P = 512 in seconds, P = 4,096 in a minute (one epoch's prediction, every stage).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

from benchmarks.common import table, write_section
from benchmarks.common.graphs import adjacency, partition
from shgcn.core import epoch
from shgcn.core.costs import Job
from shgcn.core.machine import machine_of

GRAPH = "soc-slashdot0902"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--parts", type=int, nargs="+", default=[512, 4096])
    ap.add_argument("--model", default="rp")
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    from shgcn.pipeline.simulate import cost_of_partition

    a, directed = adjacency(GRAPH)
    m = machine_of("paper")
    rows = []
    for p in args.parts:
        part = partition(GRAPH, args.model, p)[0]
        cost = cost_of_partition(a, part, p, args.model, directed)
        job = Job((64, 16, 16), ranks_per_node=m.ranks_per_node)
        epoch.rank_times(cost, job, replace(m, contention="fluid"))  # compile the kernels once
        t0 = time.perf_counter()
        f = epoch.rank_times(cost, job, replace(m, contention="fluid"))["epoch"]
        tf = time.perf_counter() - t0
        t0 = time.perf_counter()
        x = epoch.rank_times(cost, job, replace(m, contention="maxmin"))["epoch"]
        tx = time.perf_counter() - t0
        rows.append({"P": str(p), "nodes": str(m.nodes(p)), "model": args.model,
                     "fluid epoch ms": f"{f * 1e3:.4f}", "fluid s to predict": f"{tf:.2f}",
                     "maxmin epoch ms": f"{x * 1e3:.4f}", "maxmin s to predict": f"{tx:.2f}",
                     "maxmin / fluid - 1": f"{x / f - 1:+.2%}",
                     "target": "seconds" if p <= 512 else "a minute"})
    body = (f"One epoch's prediction (every stage of the step, forward and backward) of {args.model} on {GRAPH}, "
            "p2p, GCN [64, 16, 16], the `paper` preset (48 ranks a node, the adapters' message rate, the cited "
            "overhead), wall seconds after one warm-up prediction (numba's compile):\n\n"
            + table(rows, [(c, c) for c in rows[0]]))
    print(body)
    if args.write:
        write_section("The fluid network model's speed at P = 512 and 4,096 (issue 58)", body)


if __name__ == "__main__":
    main()
