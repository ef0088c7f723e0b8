"""hp-vb against METIS and against what no partition can beat (issue 31):
the busiest rank's send and receive volume and messages, at p = 16, 64, 512.

    python -m benchmarks.partitioning.vb_targets [--graphs soc-slashdot0902 ca-astroph] [--parts 16 64 512]

Each model runs as the build runs it (``shgcn.pipeline.models.run.run``, in
this process), on Â of the graph with the build's default vertex weights
(``--balance work``, widths [64, 16, 16]), eps the build's default (0.01),
seed 0; hp-vb refines hp's partition (``--hp-preset`` default, then
quality) with every other option at its default (``--max-total-increase``, ``--vb-messages on``; once more with
``--vb-messages off`` from the default start). Columns: max send, max receive, max
messages sent by a rank (`msgs`) and received by a rank (`msgs in`) and total volume, each divided by METIS's (gp with
``--gp-backend metis``); `recv bound`: the receive bound
(:mod:`shgcn.pipeline.metrics.bounds`: the part of a hub under the load
bound receives at least this many rows, whatever the partitioner) divided
by METIS's max receive; `flat`: max / mean send, and receive, of the
partition itself (near 1: the maxima sit at total / P, and only a lower
total lowers them). A target of 0.8x below that bound cannot be met by
any partition within eps. Issue 31's targets: hp-vb's max send and max
receive at most 0.8x METIS's at p = 16, 64 and 512, its max messages at most
0.9x METIS's at P = 512.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchmarks.common import table, write_section
from benchmarks.common.graphs import adjacency
from shgcn.core.work import vertex_weights
from shgcn.pipeline.config import BuildConfig
from shgcn.pipeline.metrics.bounds import receive_lower_bound
from shgcn.pipeline.metrics.volume import volume_matrix
from shgcn.pipeline.models import Inputs, PartitionConfig, default_options
from shgcn.pipeline.models.run import run

DIMS = [64, 16, 16]
EPS = BuildConfig.__dataclass_fields__["eps"].default
MODELS = [  # (label, model, options, the label of the partition it refines)
    ("METIS", "gp", {"gp_backend": "metis"}, None), ("hp default", "hp", {}, None),
    ("hp-vb (--vb-messages off)", "hp-vb", {"vb_messages": "off"}, "hp default"), ("hp-vb", "hp-vb", {}, "hp default"),
    ("hp quality", "hp", {"hp_preset": "quality"}, None),
    ("hp-vb (--hp-preset quality)", "hp-vb", {"hp_preset": "quality"}, "hp quality")]


def metrics(a, part: np.ndarray, parts: int) -> dict:
    v = volume_matrix(a, part, parts)
    send, recv = v.sum(1), v.sum(0)
    return {"send": int(send.max()), "recv": int(recv.max()), "msgs": int((v > 0).sum(1).max()),
            "msgs in": int((v > 0).sum(0).max()), "total": int(v.sum()),
            "flat": f"{send.max() / send.mean():.3f} / {recv.max() / recv.mean():.3f}"}


def rows_for(graph: str, parts: int) -> list[dict]:
    a, _ = adjacency(graph)
    w = vertex_weights(np.diff(a.indptr), "work", DIMS)
    bound = receive_lower_bound(a, w, parts, EPS)
    out, ref, parts_of = [], None, {}
    for label, model, options, base in MODELS:
        starts = {"hp": parts_of[base]} if base else {}
        cfg = PartitionConfig(parts=parts, eps=EPS, seed=0, options={**default_options(), **options})
        t0 = time.perf_counter()
        part = run(model, Inputs(a.shape[0], a, weights=w, starts=starts), cfg, child=False).part
        seconds = time.perf_counter() - t0
        parts_of[label] = part
        m = metrics(a, part, parts)
        ref = ref or m
        load = np.bincount(part, weights=w, minlength=parts)
        row = {"graph": graph, "p": parts, "model": label, "time": f"{seconds:.1f} s",
               "work imb": f"{load.max() / load.mean() - 1:.3f}", "recv bound": f"{bound.rows / ref['recv']:.3f}"}
        row.update({k: f"{m[k] / ref[k]:.3f}" for k in ("send", "recv", "msgs", "msgs in", "total")}, flat=m["flat"])
        if base:
            row["time"] += " (refinement)"
            row["met"] = verdict(m, ref, parts, bound.rows)
        out.append(row)
        print(row, flush=True)
    return out


def verdict(m: dict, ref: dict, parts: int, bound: int) -> str:
    """Issue 31's hp-vb targets, each as met / missed / out of reach (below the receive bound)."""
    missed = [k for k in ("send", "recv") if m[k] > 0.8 * ref[k]]
    if parts >= 512 and m["msgs"] > 0.9 * ref["msgs"]:
        missed.append("msgs")
    if not missed:
        return "yes"
    reach = "recv: 0.8x is below the bound" if "recv" in missed and bound > 0.8 * ref["recv"] else ""
    return "NO (" + ", ".join(missed) + (f"; {reach}" if reach else "") + ")"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--graphs", nargs="+", default=["soc-slashdot0902", "ca-astroph"])
    ap.add_argument("--parts", nargs="+", type=int, default=[16, 64, 512])
    args = ap.parse_args()
    rows = [r for g in args.graphs for p in args.parts for r in rows_for(g, p)]
    cols = [(k, k) for k in ("graph", "p", "model", "send", "recv", "msgs", "msgs in", "total", "flat", "recv bound",
                             "work imb", "time", "met")]
    write_section("hp-vb against METIS and the receive bound (issue 31)", __doc__.split("\n\n", 2)[2] + "\n\n"
                  "Max send, max receive, max messages sent and received and total volume relative to METIS's in "
                  "the same run.\n\n"
                  + table(rows, cols))


if __name__ == "__main__":
    main()
