"""Mini-batch training: measured communication per step on stores laid out
by rp, gp, hp and shp, against the pipeline's prediction; epoch time at P=2
versus P=1, before and after a change.

    python -m benchmarks.training.minibatch_bench bytes [--graphs soc-slashdot0902 ca-astroph] [--parts 4] [--epochs 2]
    python -m benchmarks.training.minibatch_bench phases [--epochs 6] [--repeats 3] [--nice -15] [--bind core]
    python -m benchmarks.training.minibatch_bench time [--before REV] [--repeats 5] [--epochs 6] [--nice -15] [--bind core]
                                                       [--cache DIR]

``bytes``: for each graph one build with every model (its mini-batch table
is the prediction), then one store per layout model (shp's with gp and hp,
its starts, and its own prediction: its steps depend on the time budget), then `train.py --mode
minibatch` (node sampler, B = 10% of n) on each with P ranks. Measured rows
per step = bytes sent in the step / (4 bytes x sum of the SpMM row widths of
one forward and backward pass).

``time``: soc-slashdot0902 (random:128 features, 16 random classes), hidden
128, node sampler, B = 10% of n, n / B = 11 steps per epoch; P=1 with
``--threads 1`` and with the default (2), P=2 with ``--threads 1`` (one
thread per rank; until issue 59 the one-thread runs set only the BLAS
variables, so P=1's "1 BLAS thread" ran numba's kernels, the dense split and
the plan-ahead thread on both cores); the code
of this checkout and, with ``--before REV``, of that git revision (exported
with ``git archive`` and put first on PYTHONPATH). The runs of every
configuration are interleaved ``--repeats`` times, because the machine is
shared: each run's epoch time is the median of its epochs after the first;
the table gives the median over runs and the spread (min-max), and the load
average when the runs started.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import numpy as np

from benchmarks.common import REPO, SHARED, bench_env, build_store, mpirun, store_info, table, write_section
from shgcn.core.costs import spmm_widths

TRAIN = REPO / "trainer" / "train.py"
MODELS = ("rp", "gp", "hp", "shp")
BLAS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def build(graph: str, parts: int, out: Path, models: str, layout: str) -> None:
    build_store(graph, out, parts, "--model", models, "--layout-model", layout, "--data-dir", str(SHARED),
                "--features", "random:32", "--labels", "random:8")


def run(path: Path, ranks: int, batch: int, epochs: int, log: Path, hidden: str = "16", threads: int | None = None,
        code: Path | None = None, nice: int = 0, bind: str = "") -> tuple[list[dict], dict, list[dict]]:
    cmd = [sys.executable, "-m", "shgcn.trainer", str(path), "--mode", "minibatch", "--sampler", "node",
           "--batch-size", str(batch), "--epochs", str(epochs), "--hidden", hidden, "--eval-every", str(epochs),
           "--log", str(log), "--quiet"]
    if threads:  # every thread of the rank: BLAS, numba's, the plan-ahead thread's use (issue 59: the BLAS variables
        cmd += ["--threads", str(threads)]  # alone left numba's pool and the backend's split at the cores' share, 2)
    if ranks > 1:
        cmd = [mpirun(), *(["-bind-to", bind] if bind else []), "-n", str(ranks), *cmd]
    if nice:
        cmd = ["nice", "-n", str(nice), *cmd]  # the ranks inherit it
    env = dict(os.environ)
    if threads:
        env.update({v: str(threads) for v in BLAS})
    if code is not None:
        env["PYTHONPATH"] = str(code)
    subprocess.run(cmd, check=True, env=env, cwd=str(log.parent))
    recs = [json.loads(line) for line in log.read_text().splitlines()]
    return [r for r in recs if r["type"] == "step"], recs[0], [r for r in recs if r["type"] == "epoch"]


def widths(header: dict) -> int:
    fwd, bwd = spmm_widths(header["dims"], header["w_first"])
    return sum(fwd) + sum(bwd)


def bytes_section(args) -> None:
    rows = []
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
                if m == "shp":  # shp starts from gp and hp, within a time budget: predicted by its own build
                    build(g, args.parts, path, "gp,hp,shp", "shp")
                    pred = {**pred, "shp": store_info(path)["minibatch"]["models"]["shp"]}
                elif m != "hp":
                    build(g, args.parts, path, m, m)
                steps, header, _ = run(path, args.parts, batch, args.epochs, tmp / f"{g}-{m}.jsonl")
                measured[m] = np.array([sum(s["bytes_sent"]) for s in steps]) / (4 * widths(header))
                measured[m, "bytes"] = 4 * widths(header)
            for m in MODELS:
                x = measured[m]
                mean, ci = x.mean(), 1.96 * x.std(ddof=1) / np.sqrt(x.size)
                p = pred[m]
                rows.append({"graph": g, "p": args.parts, "model": m, "steps": x.size,
                             "measured": f"{mean:,.1f} ± {ci:,.1f}",
                             "bytes/step": f"{mean * measured[m, 'bytes']:,.0f}",
                             "predicted": f"{p['heldout_volume_mean']:,.1f} ± {p['heldout_volume_ci']:,.1f}",
                             "closed form": f"{p['expected_volume']:,.1f}",
                             "consistent": "yes" if abs(mean - p["heldout_volume_mean"]) <= np.hypot(
                                 ci, p["heldout_volume_ci"]) else "no",
                             "vs hp": f"{mean / measured['hp'].mean():.3f}"})
    body = table(rows, [(k, k) for k in ("graph", "p", "model", "steps", "measured", "bytes/step", "predicted",
                                          "closed form", "consistent", "vs hp")])
    body += ("\nmeasured: mean rows of H sent per mini-batch SpMM over the training steps (95% CI), from the "
             "trainer's byte counts; predicted: the pipeline's held-out estimate (200 batches of the HELDOUT "
             "stream, 95% CI); closed form: its exact expectation. The trainer's batches (TRAIN stream) are "
             "another sample than the predicted ones: consistent: the two means differ by less than their "
             "combined 95% interval (the exact invariant, bytes of a batch = its predicted volume, is tested "
             "batch by batch in tests/test_minibatch.py).\n")
    write_section("Mini-batch training: measured bytes per step", body)


def _export(rev: str, dest: Path) -> Path:
    """``git archive REV`` of the packages (core, where REV has it, store, pipeline, trainer), laid out as
    ``shgcn.*``."""
    root = dest / "shgcn"
    root.mkdir(parents=True)
    tar = dest / "src.tar"
    has_core = subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", f"{rev}:core"], capture_output=True).returncode == 0
    packages = ["core"] * has_core + ["store", "pipeline", "trainer"]
    subprocess.run(["git", "-C", str(REPO), "archive", "-o", str(tar), rev, *packages], check=True)
    with tarfile.open(tar) as t:
        t.extractall(root, filter="data")
    return dest


def time_section(args) -> None:
    stores = _slashdot_stores(Path(args.cache))
    n = store_info(stores[1])["n"]
    batch = n // 10
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        codes: dict[str, Path | None] = {"this checkout": None}
        if args.before:
            codes[f"before ({args.before})"] = _export(args.before, tmp / "before")
        configs = [(label, code, ranks, threads) for label, code in codes.items()
                   for ranks, threads in ((1, 1), (1, 0), (2, 1))]
        times: dict[tuple, list[float]] = {c[:1] + c[2:]: [] for c in configs}
        comm: dict[tuple, list[float]] = {k: [] for k in times}
        step_bytes: dict[tuple, list[float]] = {}
        loads = []
        for r in range(args.repeats):  # interleaved: every configuration once per repeat
            loads.append(os.getloadavg()[0])
            for i, (label, code, ranks, threads) in enumerate(configs):
                key = (label, ranks, threads)
                log = tmp / f"run-{r}-{i}-{ranks}-{threads}.jsonl"  # i: this checkout and --before apart
                _, _, epochs = run(stores[ranks], ranks, batch, args.epochs, log, hidden="128",
                                   threads=threads or None, code=code, nice=args.nice,
                                   bind=args.bind)
                times[key].append(float(np.median([e["epoch_time"] for e in epochs[1:]])))
                comm[key].append(float(np.median([max(e["comm_time"]) for e in epochs[1:]])))
                step_bytes[key] = [float(b) for b in epochs[-1]["step_bytes_mean"]]
                print(key, f"{times[key][-1]:.3f} s", flush=True)
    rows = []
    for label in codes:
        base = {t: float(np.median(times[label, 1, t])) for t in (1, 0)}
        for ranks, threads in ((1, 1), (1, 0), (2, 1)):
            x = np.array(times[label, ranks, threads])
            med = float(np.median(x))
            rows.append({"code": label, "run": f"P={ranks}, " + ("default threads (2)" if threads == 0 else
                                                                 ("--threads 1" if ranks == 1 else
                                                                  "--threads 1 per rank")),
                         "epoch s (median)": f"{med:.3f}", "spread (min-max)": f"{x.min():.3f}-{x.max():.3f}",
                         "comm wait s": f"{np.median(comm[label, ranks, threads]):.3f}",
                         "bytes/step per rank": ", ".join(f"{b:,.0f}" for b in step_bytes[label, ranks, threads]),
                         "speedup vs P=1 (1 thread / default)":
                             f"{base[1] / med:.2f} / {base[0] / med:.2f}" if ranks == 2 else ""})
    body = table(rows, [(k, k) for k in ("code", "run", "epoch s (median)", "spread (min-max)", "comm wait s",
                                          "bytes/step per rank", "speedup vs P=1 (1 thread / default)")])
    body += (f"\nsoc-slashdot0902, node sampler, B = {batch:,} (10% of n), {-(-n // batch)} steps per epoch, "
             f"hidden 128, 128 random features, dropout 0.5; {args.epochs} epochs per run, a run's time is the "
             f"median of its epochs after the first; {args.repeats} runs per configuration, interleaved. The "
             f"machine is shared (2 cores): load average (1 min) at the start of each repeat: "
             f"{', '.join(f'{x:.1f}' for x in loads)}"
             + (f"; the runs had scheduling priority nice {args.nice}, so that the other work on the machine "
                f"(tests, builds) takes little of their cores" if args.nice else "")
             + (f"; P=2 ran with `mpirun -bind-to {args.bind}` (one core per rank)" if args.bind else "")
             + ". Target (issue 17): P=2 at least 1.6x faster than P=1.\n")
    write_section("Mini-batch training: epoch time P=1 and P=2", body)


PHASES = ("plan (view)", "dropout", "spmm compute", "exchange wait", "dense (GEMM, ReLU)", "loss + adam",
          "allreduce + other")


def _slashdot_stores(cache: Path) -> dict[int, Path]:
    cache.mkdir(parents=True, exist_ok=True)
    stores = {}
    for p in (1, 2):
        stores[p] = cache / f"slashdot-hp-p{p}-f128.zarr"
        if not stores[p].exists():
            build_store("soc-slashdot0902", stores[p], p, "--model", "hp", "--features", "random:128", "--labels",
                        "random:16", "--data-dir", str(SHARED))
    return stores


def phases(acc: dict, steps: int, prefix: str = "") -> dict[str, float]:
    """Milliseconds per step of each phase from ``_phases``'s sums: wall (``prefix`` "") or the rank's thread CPU
    time (``prefix`` "cpu:")."""
    def g(key: str) -> float:
        return acc.get(prefix + key, 0.0)

    spmm = g("spmm")
    wait = g("exchange wait")
    # the dropout in forward: the layers' (the next batch's input is dropped in "plan", outside forward)
    fwd_dropout = g("dropout") - g("dropout (next input)")
    sec = {"plan (view)": g("plan (view)"), "dropout": g("dropout"), "spmm compute": spmm - wait,
           "exchange wait": wait, "dense (GEMM, ReLU)": g("forward") + g("backward") - spmm - fwd_dropout,
           "loss + adam": g("loss") + g("adam")}
    sec["allreduce + other"] = g("epoch") - sum(sec.values())
    sec["step (total)"] = g("epoch")
    return {k: 1000 * v / max(steps, 1) for k, v in sec.items()}


def phases_section(args) -> None:
    stores = _slashdot_stores(Path(args.cache))
    n = store_info(stores[1])["n"]
    batch = n // 10
    steps_per_epoch = -(-n // batch)
    runs: dict[tuple[int, int, str], list[dict[str, float]]] = {}
    loads = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for rep in range(args.repeats):  # P=1 and P=2 alternate: the machine is shared
            loads.append(os.getloadavg()[0])
            for ranks in (1, 2):
                out = tmp / f"phases-{ranks}.json"
                cmd = [sys.executable, "-m", "benchmarks.training._phases", str(out), str(stores[ranks]), "--mode",
                       "minibatch", "--sampler", "node", "--batch-size", str(batch), "--epochs", str(args.epochs),
                       "--hidden", "128", "--eval-every", str(args.epochs), "--log", str(tmp / f"p{ranks}.jsonl"),
                       "--quiet", "--threads", "1", "--overwrite"]
                if ranks > 1:
                    cmd = [mpirun(), *(["-bind-to", args.bind] if args.bind else []), "-n", str(ranks), *cmd]
                if args.nice:
                    cmd = ["nice", "-n", str(args.nice), *cmd]
                env = bench_env(dict(os.environ, **{v: "1" for v in BLAS}))
                subprocess.run(cmd, check=True, env=env, cwd=str(tmp), timeout=600)
                for r, acc in enumerate(json.loads(out.read_text())):
                    for what, prefix in (("wall", ""), ("CPU", "cpu:")):
                        runs.setdefault((ranks, r, what), []).append(
                            phases(acc, acc["epochs"] * steps_per_epoch, prefix))
            print(f"repeat {rep + 1}/{args.repeats} done", flush=True)
    rows = [{"P": ranks, "rank": r, "time": what,
             **{k: f"{np.median([ms[k] for ms in lst]):.1f}" for k in lst[0]}}
            for (ranks, r, what), lst in runs.items()]
    body = table(rows, [("P", "P"), ("rank", "rank"), ("time", "time"), ("step (total)", "step ms"),
                        *[(k, k) for k in PHASES]])
    body += (f"\nMilliseconds per optimizer step, per rank, over epochs 2-{args.epochs} of a run, the median over "
             f"{args.repeats} runs (P=1 and P=2 alternating; load average (1 min) at the start of each pair: "
             f"{', '.join(f'{x:.1f}' for x in loads)}): wall, and the "
             "rank's thread CPU time (what the rank ran, less the time other processes took its core; a wait "
             "counts as CPU while MPI polls); soc-slashdot0902, node sampler, "
             f"B = {batch:,}, hidden 128, 128 random features, `--threads 1` (one thread per rank, P=1 "
             "included). plan: the batch's plan and local matrix (the next batch's is made while the step's "
             "allreduce completes); dropout: the counter-based masks (the layers' and the next batch's input); "
             "spmm compute: the SpMMs' local and halo products and packing, forward and backward; exchange "
             "wait: waiting for halo rows; dense: the GEMMs, ReLU's gradient and the step's remaining Python "
             "in forward and backward; allreduce + other: the gradient allreduce's wait and the step's "
             "remaining Python. Until issue 59 the backward's SpMM and its exchange were counted in dense, "
             "and P=1 ran two threads."
             + (f" Scheduling priority nice {args.nice}." if args.nice else "")
             + (f" P=2 with `mpirun -bind-to {args.bind}`." if args.bind else "") + "\n")
    write_section("Mini-batch training: where a step's time goes", body)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    b = sub.add_parser("bytes", help="measured bytes per step against the prediction")
    b.add_argument("--graphs", nargs="+", default=["ca-astroph", "soc-slashdot0902"])
    b.add_argument("--parts", type=int, default=4)
    b.add_argument("--epochs", type=int, default=2)
    t = sub.add_parser("time", help="epoch time P=1 and P=2, before and after")
    t.add_argument("--before", help="a git revision to compare with (e.g. HEAD~3)")
    t.add_argument("--repeats", type=int, default=5)
    t.add_argument("--epochs", type=int, default=6)
    t.add_argument("--bind", default="", help="P=2: mpirun -bind-to this (core: one core per rank)")
    t.add_argument("--nice", type=int, default=0,
                   help="run the trainers at this scheduling priority (negative: ahead of other work; needs root)")
    t.add_argument("--cache", default=str(REPO / "build" / "minibatch-bench"), help="where the stores are kept")
    ph = sub.add_parser("phases", help="where a step's time goes at P=1 and P=2")
    ph.add_argument("--epochs", type=int, default=6)
    ph.add_argument("--bind", default="", help="P=2: mpirun -bind-to this (core: one core per rank)")
    ph.add_argument("--nice", type=int, default=0)
    ph.add_argument("--repeats", type=int, default=3, help="runs of P=1 and P=2, alternating (medians)")
    ph.add_argument("--cache", default=str(REPO / "build" / "minibatch-bench"))
    args = ap.parse_args()
    {"bytes": bytes_section, "time": time_section, "phases": phases_section}[args.what](args)


if __name__ == "__main__":
    main()
