"""The device run's CPU part (issue 60): the node's cores, with the stores ``prepare`` made.

1. each split's ranks as the runs start them (:mod:`.probe`): their CPU affinity and numba's thread count
   (a few seconds: first);
2. ``threads_sweep``'s runs (benchmarks/training/threads_sweep.py: the numpy backend's epoch and its gemm, SpMM,
   elementwise and attention times) of GCN, GIN, GraphSAGE and GAT, full batch and mini-batch, at T = 1, 2, 4,
   8, 16 in one rank and at every split P x T = 16 (P = 2, 4, 8, 16 ranks of the P-part store), in the order of
   :func:`plan` (T = 1 and T = 16 of every architecture first: the issue's figure; the splits last);
3. the threads model's fit (``threads_sweep --fit``'s figure, written to OUT/compute-node.json) and the model
   against what was measured: each one-rank run's epoch at T predicted from its T = 1 kernel times and the fitted
   speedups (:func:`model_check`).

OUT/cpu.json is rewritten after every run; runs the budget leaves no time for are recorded as skipped.
``--dry-run``: the tiny stores, T = 1, 2 and P x T = 2.

    python -m benchmarks.device.cpu --stores DIR --out OUT [--budget 216] [--dry-run]
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

from benchmarks.device.common import Part, part_args, sizes, stop_on_signals, store_name
from benchmarks.training import threads_sweep as ts
from benchmarks.training.gpu_bench import launcher, timed

ARCHS = ("gcn", "gin", "sage", "gat")
Key = tuple[str, str, int, int]  # arch, mode, P, T


def plan(archs: tuple[str, ...], threads: list[int], splits: list[tuple[int, int]]) -> list[Key]:
    """The runs, most wanted first (a budget that runs out cuts the last): every architecture's T = 1 and
    largest T in one rank (the speedup the issue asks about), full batch then mini-batch; then the other T; then
    the splits P x T, full batch then mini-batch."""
    keys = [(arch, mode, 1, t) for arch in archs for mode in ts.MODES for t in threads]
    keys += [(arch, mode, p, t) for arch in archs for mode in ts.MODES for p, t in splits]

    def rank(k: Key) -> tuple:
        arch, mode, p, t = k
        tier = 2 if p > 1 else 0 if t in (1, max(threads)) else 1
        return tier, ts.MODES.index(mode), archs.index(arch), p, t

    return sorted(keys, key=rank)


def model_check(med: dict[Key, dict[str, float]], figure: dict) -> list[dict]:
    """Each one-rank run at T > 1 against the threads model: its T = 1 run's epoch with every kernel's time
    divided by its term's fitted speedup at T (gemm: dense, spmm: spmm, elementwise and attention: elem; the
    rest of the epoch unchanged). ``error``: predicted / measured - 1."""
    from shgcn.core.thread_scaling import TERMS, scaling_from_json

    sc = scaling_from_json(figure, "the fitted threads figure")
    term = {"gemm": "dense", "spmm": "spmm", "elementwise": "elem", "attention": "elem"}
    rows = []
    for (arch, mode, p, t), m in sorted(med.items()):
        one = med.get((arch, mode, 1, 1))
        if p != 1 or t == 1 or one is None:
            continue
        rest = one["epoch"] - sum(one[k] for k in ts.KERNELS)
        pred = rest + sum(one[k] / sc.speedup(TERMS.index(term[k]), t, 1.0) for k in ts.KERNELS)
        rows.append({"arch": arch, "mode": mode, "threads": t, "measured": m["epoch"], "predicted": pred,
                     "error": pred / m["epoch"] - 1})
    return rows


def probe(ranks: int, threads: int, timeout: float) -> list[dict] | str:
    """Every rank's :mod:`.probe` record, or why there is none."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "benchmarks.device.probe", "--threads", str(threads), "--out", tmp]
        if ranks > 1:
            cmd = [*launcher(None), "-n", str(ranks), *cmd]
        res, late = timed(cmd, timeout)
        if late or res.returncode != 0:
            why = f"timed out after {timeout:.0f} s" if late else f"exit {res.returncode}"
            return f"{why}: {' / '.join(res.stderr.strip().splitlines()[-2:])}"
        return sorted((json.loads(f.read_text()) for f in Path(tmp).glob("rank-*.json")), key=lambda r: r["rank"])


def main(argv: list[str] | None = None) -> int:
    a = part_args(__doc__, argv)
    stop_on_signals()
    sz = sizes(a.dry_run)
    cores = ts.cores()
    threads = [t for t in sz.threads if t <= cores] or [1]
    splits = [(p, sz.cores // p) for p in sz.parts if 1 < p <= sz.cores]
    a.out.mkdir(parents=True, exist_ok=True)
    part = Part("cpu", a.out, dry_run=a.dry_run, budget=a.budget,
                extra={"sizes": asdict(sz), "threads": threads, "splits": [list(s) for s in splits],
                       "affinity_cores": cores, "launcher": launcher(None)})
    if cores < sz.cores:
        part.doc["note"] = (f"{cores} cores in this process's affinity, fewer than the {sz.cores} the part is "
                            f"for: T above {cores} and splits are oversubscribed or left out")
    runs: dict[Key, dict] = {}
    med: dict[Key, dict[str, float]] = {}
    done = False

    def save(complete: bool = False) -> None:
        part.doc["runs"] = [{"arch": k[0], "mode": k[1], "ranks": k[2], "threads": k[3], **v} for k, v in runs.items()]
        part.save(complete)

    try:
        probes: dict[str, list[dict] | str] = {}
        for p, t in [(1, max(threads)), *splits]:  # (1) what each rank of a run has: cheap, so first
            probes[f"{p}x{t}"] = probe(p, t, min(60.0, max(5.0, part.left())))
        part.doc["ranks"] = probes
        save()
        with tempfile.TemporaryDirectory() as tmp:
            for key in plan(ARCHS, threads, splits):
                arch, mode, p, t = key
                if part.left() < 15:
                    runs[key] = {"error": "skipped: the budget is spent"}
                    continue
                store = a.stores / store_name(sz.scale, p)
                t0 = time.perf_counter()
                try:
                    got = ts.one_run(store, arch=arch, mode=mode, ranks=p, threads=t, epochs=sz.sweep_epochs,
                                     hidden=sz.hidden, log=Path(tmp) / "run.jsonl", launcher=launcher(None),
                                     timeout=min(180.0, part.left()))
                    med[key] = got
                    runs[key] = {**got, "seconds": round(time.perf_counter() - t0, 1)}
                except subprocess.TimeoutExpired:
                    runs[key] = {"error": f"timed out after {time.perf_counter() - t0:.0f} s"}
                except subprocess.CalledProcessError as e:
                    tail = " / ".join((e.stderr or e.stdout or "").strip().splitlines()[-2:])
                    runs[key] = {"error": f"exit {e.returncode}: {tail}"[:400]}
                except (OSError, ValueError, KeyError) as e:
                    runs[key] = {"error": f"{type(e).__name__}: {e}"[:400]}
                print(arch, mode, f"{p}x{t}", runs[key], file=sys.stderr, flush=True)
                save()
        figure = ts.fit(med, f"benchmarks.device.cpu on {part.doc['machine']['cpu']}, {cores} cores")  # (3)
        part.doc["fit"] = figure
        if figure["speedup"]:
            ts.write_fit(a.out / "compute-node.json", figure)
            rows = model_check(med, figure)
            part.doc["model"] = {"rows": rows, "max_abs_error": max((abs(r["error"]) for r in rows), default=None)}
        done = True
    except KeyboardInterrupt:
        part.doc["stopped"] = "interrupted: the part's time ran out"
    finally:
        part.doc["speedup_t_max"] = {f"{arch} {mode}": float(med[arch, mode, 1, 1]["epoch"] /
                                                              med[arch, mode, 1, max(threads)]["epoch"])
                                     for arch in ARCHS for mode in ts.MODES
                                     if (arch, mode, 1, 1) in med and (arch, mode, 1, max(threads)) in med}
        save(complete=done)
    return 0


if __name__ == "__main__":
    sys.exit(main())
