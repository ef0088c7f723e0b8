"""Mini-batch training: measured communication per step on stores laid out
by rp, gp, hp and shp, against the pipeline's prediction; epoch time at P=2
versus P=1.

    python benchmarks/minibatch_bench.py [--graphs soc-slashdot0902 ca-astroph] [--parts 4] [--epochs 2]

For each graph: one build with every model (its mini-batch table is the
prediction), then one store per layout model, then `train.py --mode
minibatch` (node sampler, B = 10% of n) on each with P ranks. Measured rows
per step = bytes sent in the step / (4 bytes x sum of the SpMM row widths of
one forward and backward pass).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from _common import REPO, SHARED, build_store, mpirun, store_info, table, write_section

from shgcn.store.costs import spmm_widths

TRAIN = REPO / "trainer" / "train.py"
MODELS = ("rp", "gp", "hp", "shp")


def build(graph: str, parts: int, out: Path, models: str, layout: str) -> None:
    build_store(graph, out, parts, "--model", models, "--layout-model", layout, "--data-dir", str(SHARED),
                "--features", "random:32", "--labels", "random:8")


def run(path: Path, ranks: int, batch: int, epochs: int, log: Path) -> tuple[list[dict], dict, list[dict]]:
    cmd = [sys.executable, str(TRAIN), str(path), "--mode", "minibatch", "--sampler", "node", "--batch-size",
           str(batch), "--epochs", str(epochs), "--hidden", "16", "--eval-every", str(epochs), "--log", str(log),
           "--quiet"]
    if ranks > 1:
        cmd = [mpirun(), "-n", str(ranks), *cmd]
    subprocess.run(cmd, check=True, env=dict(os.environ))
    recs = [json.loads(line) for line in log.read_text().splitlines()]
    return [r for r in recs if r["type"] == "step"], recs[0], [r for r in recs if r["type"] == "epoch"]


def widths(header: dict) -> int:
    fwd, bwd = spmm_widths(header["dims"], header["w_first"])
    return sum(fwd) + sum(bwd)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--graphs", nargs="+", default=["ca-astroph", "soc-slashdot0902"])
    ap.add_argument("--parts", type=int, default=4)
    ap.add_argument("--epochs", type=int, default=2)
    args = ap.parse_args()
    rows, timing = [], []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for g in args.graphs:
            ref = tmp / f"{g}-all.zarr"
            build(g, args.parts, ref, "all", "hp")
            ref_info = store_info(ref)
            pred, n = ref_info["minibatch"]["models"], ref_info["n"]
            batch = n // 10
            measured = {}
            for m in MODELS:
                path = ref if m == "hp" else tmp / f"{g}-{m}.zarr"
                if m != "hp":
                    build(g, args.parts, path, m, m)
                steps, header, _ = run(path, args.parts, batch, args.epochs, tmp / f"{g}-{m}.jsonl")
                per_step = np.array([sum(s["bytes_sent"]) for s in steps]) / (4 * widths(header))
                measured[m] = per_step
            for m in MODELS:
                x = measured[m]
                mean, ci = x.mean(), 1.96 * x.std(ddof=1) / np.sqrt(x.size)
                p = pred[m]
                lo, hi = p["heldout_volume_mean"] - p["heldout_volume_ci"], p["heldout_volume_mean"] + p["heldout_volume_ci"]
                rows.append({"graph": g, "p": args.parts, "model": m, "steps": x.size,
                             "measured": f"{mean:,.1f} ± {ci:,.1f}",
                             "bytes/step": f"{mean * 4 * widths(header):,.0f}",
                             "predicted": f"{p['heldout_volume_mean']:,.1f} ± {p['heldout_volume_ci']:,.1f}",
                             "closed form": f"{p['expected_volume']:,.1f}",
                             "in CI": "yes" if lo <= mean <= hi else "no",
                             "vs hp": f"{mean / measured['hp'].mean():.3f}"})
            # epoch time, P=1 versus P=2, on hp stores
            one, two = tmp / f"{g}-p1.zarr", tmp / f"{g}-p2.zarr"
            build(g, 1, one, "hp", "hp")
            build(g, 2, two, "hp", "hp")
            t = {}
            for ranks, path in ((1, one), (2, two)):
                _, _, epochs = run(path, ranks, batch, 4, tmp / f"{g}-t{ranks}.jsonl")
                t[ranks] = float(np.median([e["epoch_time"] for e in epochs[1:]]))
            timing.append({"graph": g, "P=1 epoch s": f"{t[1]:.3f}", "P=2 epoch s": f"{t[2]:.3f}",
                           "speedup": f"{t[1] / t[2]:.2f}"})
    body = table(rows, [(k, k) for k in ("graph", "p", "model", "steps", "measured", "bytes/step", "predicted",
                                          "closed form", "in CI", "vs hp")])
    body += ("\nmeasured: mean rows of H sent per mini-batch SpMM over the training steps (95% CI), from the "
             "trainer's byte counts; predicted: the pipeline's held-out estimate (200 batches of another seed "
             "stream, 95% CI); closed form: its exact expectation. Target (issue 5): shp at least 15% below hp, "
             "and its measured mean inside the interval the pipeline predicted.\n\n")
    body += table(timing, [(k, k) for k in ("graph", "P=1 epoch s", "P=2 epoch s", "speedup")])
    body += "\nMini-batch epoch time (median of epochs 2-4; 10 steps of B = 10% of n; hidden 16; 32 random features).\n"
    write_section("Mini-batch training: measured bytes per step and epoch time", body)


if __name__ == "__main__":
    main()
