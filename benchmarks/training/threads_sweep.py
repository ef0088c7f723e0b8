"""Threads per kernel (issue 52): the epoch and its gemm, SpMM, elementwise and attention milliseconds for
GCN, GIN, SAGE and GAT, full batch and mini-batch, at T = 1..cores threads in one rank, and at P x T = cores
(ranks of a P-part store, ``--split P:STORE``); and the threads' fit of the epoch model (``--fit FILE``).

    python -m benchmarks.training.threads_sweep STORE [--threads 1,2,4,8,16] [--split 2:STORE2] [--epochs 6]
        [--rounds 1] [--fit FILE] [--write [--title TITLE]]

Each cell is the median over the epochs after the first two (warm-up, compilation), then the median over the
rounds (runs alternate between thread counts inside a round); a mini-batch epoch's kernel times are the sums
over its steps. ``cpu/wall`` is the run's CPU seconds (children's user + system) over its wall seconds: the
cores its threads really kept busy (near 1 at every T: the threads wait on each other or share one core, as
a launcher's binding to one core would make them; the affinity is printed in the header). ``--fit FILE``
writes, per term of the compute model (spmm, dense, elem), the measured speedup over T = 1 at each T (the
geometric mean over the runs), as the ``threads`` figure of a compute-model file (core/thread_scaling.py);
``--write`` records the table in benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.common import machine, mpirun, table, write_section
from shgcn.trainer.threads import affinity_cores

ARCHS = ("gcn", "gin", "sage", "gat")
MODES = ("full", "minibatch")
KERNELS = ("gemm", "spmm", "elementwise", "attention")
TERMS = {"spmm": "spmm", "gemm": "dense", "elementwise": "elem"}  # kernel -> the compute model's term
TITLE = "Threads per kernel: T = 1..cores and P x T = cores (issue 52)"


def cores() -> int:
    """The cores this process may run on (its affinity)."""
    return affinity_cores()


def _cpu_seconds() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def one_run(store: Path, *, arch: str, mode: str, ranks: int, threads: int, epochs: int, hidden: int,
            log: Path, launcher: list[str] | None = None, timeout: float = 1800) -> dict[str, float]:
    """One training run: the median epoch and kernel seconds (epochs after the first two), and cpu/wall.
    ``launcher``: the mpirun command for ``ranks`` > 1 (default: :func:`benchmarks.common.mpirun`). A run that
    fails or takes more than ``timeout`` seconds raises ``subprocess.CalledProcessError`` or
    ``subprocess.TimeoutExpired`` (its process group killed)."""
    from benchmarks.training.gpu_bench import timed

    cmd = [sys.executable, "-m", "shgcn.trainer", str(store), "--arch", arch, "--mode", mode, "--hidden", str(hidden),
           "--epochs", str(epochs), "--eval-every", "100000", "--threads", str(threads), "--quiet", "--log", str(log),
           "--overwrite"]
    if ranks > 1:
        cmd = [*(launcher or [mpirun()]), "-n", str(ranks), *cmd]
    cpu0, t0 = _cpu_seconds(), time.perf_counter()
    res, late = timed(cmd, timeout)
    if late:
        raise subprocess.TimeoutExpired(cmd, timeout, res.stdout, res.stderr)
    if res.returncode != 0:
        raise subprocess.CalledProcessError(res.returncode, cmd, res.stdout, res.stderr)
    wall, cpu = time.perf_counter() - t0, _cpu_seconds() - cpu0
    recs = [json.loads(line) for line in log.read_text().splitlines()[1:]]
    epochs_ = [r for r in recs if r.get("type") == "epoch"]
    kernels: dict[int, dict[str, float]] = {r["epoch"]: {} for r in epochs_}
    for r in recs:  # full batch: the epoch's record; mini-batch: the sum of its steps' (rank 0's)
        if r.get("type") in ("epoch", "step") and r.get("kernel_time"):
            for k, v in r["kernel_time"][0].items():
                kernels[r["epoch"]][k] = kernels[r["epoch"]].get(k, 0.0) + v
    keep = [r["epoch"] for r in epochs_][2:] or [r["epoch"] for r in epochs_][-1:]
    out = {"epoch": float(np.median([r["epoch_time"] for r in epochs_ if r["epoch"] in keep]))}
    for k in KERNELS:
        out[k] = float(np.median([kernels[e].get(k, 0.0) for e in keep]))
    out["cpu_wall"] = cpu / wall
    return out


def sweep(stores: dict[int, Path], *, threads: list[int], archs: list[str], modes: list[str], epochs: int,
          hidden: int, rounds: int) -> dict[tuple, list[dict[str, float]]]:
    """Every (arch, mode, P, T) run ``rounds`` times, the thread counts in alternating order from round to
    round: P = 1 at each T of ``threads``, and each P of ``stores`` above 1 at T = cores // P."""
    splits = [(1, t) for t in threads] + [(p, max(1, cores() // p)) for p in sorted(stores) if p > 1]
    runs: dict[tuple, list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(rounds):
            for arch in archs:
                for mode in modes:
                    for p, t in splits if r % 2 == 0 else splits[::-1]:
                        got = one_run(stores[p], arch=arch, mode=mode, ranks=p, threads=t, epochs=epochs,
                                      hidden=hidden, log=Path(tmp) / "run.jsonl")
                        runs.setdefault((arch, mode, p, t), []).append(got)
                        print(arch, mode, f"{p}x{t}", {k: round(v * (1e3 if k != "cpu_wall" else 1), 1)
                                                       for k, v in got.items()}, flush=True)
    return runs


def medians(runs: dict[tuple, list[dict[str, float]]]) -> dict[tuple, dict[str, float]]:
    return {key: {k: float(np.median([r[k] for r in rs])) for k in rs[0]} for key, rs in runs.items()}


def render(med: dict[tuple, dict[str, float]]) -> str:
    """The table: one row per arch, mode and P x T, milliseconds, and each epoch's speedup over 1 x 1."""
    rows = []
    for (arch, mode, p, t), m in med.items():
        base = med.get((arch, mode, 1, 1), m)["epoch"]
        row = {"arch": arch, "mode": mode, "split": f"{p} x {t}", "epoch": f"{1e3 * m['epoch']:.1f}",
               "speedup": f"{base / m['epoch']:.2f}x", "cpu": f"{m['cpu_wall']:.2f}"}
        row.update({k: f"{1e3 * m[k]:.1f}" if m[k] else "-" for k in KERNELS})
        rows.append(row)
    rows.sort(key=lambda r: (ARCHS.index(r["arch"]) if r["arch"] in ARCHS else 9, r["mode"], r["split"]))
    return table(rows, [("arch", "arch"), ("mode", "mode"), ("split", "P x T"), ("epoch", "epoch ms"),
                        ("speedup", "vs 1 x 1"), ("gemm", "gemm ms"), ("spmm", "spmm ms"),
                        ("elementwise", "elementwise ms"), ("attention", "attention ms"), ("cpu", "cpu/wall")])


def fit(med: dict[tuple, dict[str, float]], source: str) -> dict:
    """The ``threads`` figure of a compute-model file: per term, the speedup over T = 1 at each measured T > 1
    (P = 1 runs; the geometric mean over archs and modes of the kernel's time at T = 1 over its time at T)."""
    speedup: dict[str, dict[str, float]] = {}
    ts = sorted({t for (_, _, p, t) in med if p == 1 and t > 1})
    for kernel, term in TERMS.items():
        for t in ts:
            ratios = [med[a, m, 1, 1][kernel] / med[a, m, 1, t][kernel] for (a, m, p, tt) in med
                      if p == 1 and tt == t and (a, m, 1, 1) in med and med[a, m, 1, t][kernel] > 0
                      and med[a, m, 1, 1][kernel] > 0]
            if ratios:
                speedup.setdefault(term, {})[str(t)] = round(float(np.exp(np.mean(np.log(ratios)))), 3)
    return {"source": source, "speedup": speedup}


def write_fit(path: Path, figure: dict) -> None:
    """Put ``figure`` as the ``threads`` entry of the compute-model file ``path`` (created as one that scales
    this machine's fitted model by 1 when absent)."""
    d = json.loads(path.read_text()) if path.exists() else {"scale_of": "this", "factor": 1.0,
                                                            "source": "this machine's coefficients"}
    d["threads"] = figure
    path.write_text(json.dumps(d, indent=2) + "\n")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("store", type=Path, help="a store of one part (P = 1)")
    p.add_argument("--threads", default=None, help="comma list of T at P = 1 (default: 1..cores)")
    p.add_argument("--split", action="append", default=[], metavar="P:STORE",
                   help="a store of P parts, run at P ranks of cores // P threads (repeatable)")
    p.add_argument("--archs", default=",".join(ARCHS))
    p.add_argument("--modes", default=",".join(MODES))
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--fit", type=Path, metavar="FILE", help="write the threads' figure into this compute-model file")
    p.add_argument("--write", action="store_true", help="record the table in benchmarks/RESULTS.md")
    p.add_argument("--title", default=TITLE, help="the section's title in RESULTS.md")
    args = p.parse_args()
    threads = [int(t) for t in args.threads.split(",")] if args.threads else list(range(1, cores() + 1))
    if 1 not in threads:
        threads = [1, *threads]
    stores = {1: args.store, **{int(s.split(":", 1)[0]): Path(s.split(":", 1)[1]) for s in args.split}}
    print(f"{cores()} cores in this process's affinity (machine: {os.cpu_count()}); load {os.getloadavg()}", flush=True)
    med = medians(sweep(stores, threads=threads, archs=args.archs.split(","), modes=args.modes.split(","),
                        epochs=args.epochs, hidden=args.hidden, rounds=args.rounds))
    body = render(med)
    print(body)
    if args.fit:
        write_fit(args.fit, fit(med, f"benchmarks.training.threads_sweep on {machine()}"))
    if args.write:
        write_section(args.title, body + _notes(args, stores))


def _notes(args: argparse.Namespace, stores: dict[int, Path]) -> str:
    return (f"\nStore {args.store} (P = 1){''.join(f', {s} (P = {p})' for p, s in stores.items() if p > 1)}; "
            f"hidden {args.hidden}, {args.epochs} epochs, the median of epochs 3..{args.epochs} per run, then over "
            f"{args.rounds} round(s); mini-batch: the node sampler's default batch; ms per epoch (mini-batch: "
            f"the sums over its steps). {cores()} cores in the affinity; load average at the end "
            f"{', '.join(f'{x:.1f}' for x in os.getloadavg())}.{_small()}\n")


def _small() -> str:
    """What a run on fewer than 16 cores cannot show (issue 52 asks for T up to 16)."""
    if cores() >= 16:
        return ""
    return (f" No machine of 16 or more cores was at hand: {cores()} cores cannot show the scaling past "
            f"{cores()} threads that issue 52 asks for; fit the threads' figure (--fit) on a machine with the cores.")


if __name__ == "__main__":
    main()
