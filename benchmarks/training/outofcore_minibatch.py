"""Mini-batch training out of core (issue 59): ``mpirun -n P shgcn-train STORE --mode minibatch --out-of-core``
on R-MAT stores of growing scale, each rank's anonymous memory against the store's size.

    python -m benchmarks.training.outofcore_minibatch --scale 20 22 [--ranks 2] [--batch-size 8192]
        [--steps 20] [--epochs 2] [--in-memory] [--dir /tmp/shgcn-ooc] [--store PATH ...]

Builds ``rmat:scale=S,edge_factor=16,seed=1 --model rp --parts P`` (random features of width 64, GCN
[64, 16, 16]) unless the store is there (or takes ``--store`` paths), then trains ``--epochs`` epochs of
``--steps`` batches each, out of core (and in memory too with ``--in-memory``, the same losses bit for bit).
Per rank: `RssAnon` (anonymous resident bytes: what the rank holds beyond the page cache that the memory-mapped
store occupies), the largest at a step's end over the run (the run log's ``anon_memory``), beside the modelled
bytes (the header's ``memory``, the model included; out of core :func:`shgcn.core.memory.outofcore_bytes`)
and ``VmHWM`` (``peak_memory``: the peak resident set, page cache pages mapped by the rank included); the
first and last epoch's mean loss; the mean step (the fastest epoch's time over its steps: the machine is
shared) and the setup (the run's wall time less its epochs: the store's checks, the one-time passes).
Every run loads the trainer's numba kernels from a cache that a first, one-step run compiles (in ``--dir``):
the compiler's memory stays in a rank that compiles, so a run after an install would not compare with the others.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.common import table, write_section
from benchmarks.common.runs import bench_env, build_store, mpirun, store_info
from shgcn.core.memory import gib

TITLE = "Mini-batch training out of core: RssAnon per rank against the store's size (issue 59)"


def kernel_cache(where: Path) -> dict:
    """An environment whose numba cache is ``where``, emptied: the trainer's first run then compiles its
    kernels there (numba's compiler keeps about 30 MiB a rank: RssAnon 119.6 against 90.9 MiB warm, 20 steps
    out of core on R-MAT 22, 2026-12-07), and every later run loads them, whatever was installed before. The
    benchmarks run a short first run (:func:`compile_kernels`) so that the runs they compare all start warm."""
    shutil.rmtree(where, ignore_errors=True)
    return {**bench_env(), "NUMBA_CACHE_DIR": str(where)}


def compile_kernels(store: Path, args, log: Path, env: dict) -> list[int]:
    """One step out of core on ``store`` with ``env``'s numba cache cold: each rank's RssAnon (bytes) with the
    kernels compiled in the run, which leaves them in the cache for the measured runs."""
    run = argparse.Namespace(**{**vars(args), "steps": 1, "epochs": 1})
    train(store, run, log, True, env)
    epochs = [json.loads(x) for x in log.read_text().splitlines() if '"type": "epoch"' in x]
    return list(epochs[-1]["anon_memory"])


def train(store: Path, args, log: Path, out_of_core: bool, env: dict | None = None) -> float:
    """Wall seconds of one ``mpirun -n P shgcn-train`` run (it must succeed); ``env``: the run's environment
    (default :func:`benchmarks.common.runs.bench_env`)."""
    cmd = [mpirun(), "-n", str(args.ranks), sys.executable, "-m", "shgcn.trainer", str(store), "--mode", "minibatch",
           "--batch-size", str(args.batch_size), "--batches-per-epoch", str(args.steps), "--epochs", str(args.epochs),
           "--eval-every", str(args.epochs), "--sampler", args.sampler, "--log", str(log), "--overwrite", "--quiet",
           *(["--out-of-core"] if out_of_core else [])]
    t0 = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True, env=env or bench_env(), timeout=args.timeout)
    if res.returncode != 0:
        raise SystemExit(f"training failed ({res.returncode}): {' '.join(cmd)}\n{res.stderr[-3000:]}")
    return time.perf_counter() - t0


def rows_from(log: Path, label: str, nnz: int, wall: float) -> list[dict]:
    recs = [json.loads(x) for x in log.read_text().splitlines()]
    header = next(r for r in recs if r.get("type") == "header")
    epochs = [r for r in recs if r.get("type") == "epoch"]
    anon = [max(e["anon_memory"][r] for e in epochs) for r in range(len(header["memory"]))]
    steps = epochs[0]["steps"]
    step_s = min(e["epoch_time"] for e in epochs) / max(steps, 1)
    setup = wall - sum(e["epoch_time"] for e in epochs)
    return [{"store": label, "nnz": f"{nnz:,}", "rank": r, "RssAnon": gib(anon[r]),
             "modelled": gib(header["memory"][r]), "VmHWM": gib(epochs[-1]["peak_memory"][r]),
             "loss first, last": f"{epochs[0]['loss']:.4f}, {epochs[-1]['loss']:.4f}",
             "step ms": f"{1000 * step_s:.0f}", "setup s": f"{setup:.0f}", "_anon": anon[r],
             "_losses": (epochs[0]["loss"], epochs[-1]["loss"])} for r in range(len(anon))]


def losses(log: Path) -> list[float]:
    return [json.loads(x)["loss"] for x in log.read_text().splitlines() if '"type": "step"' in x]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=int, nargs="*", default=[20, 22])
    ap.add_argument("--store", type=Path, nargs="*", default=[], help="stores to train on besides --scale's")
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=8192)
    ap.add_argument("--steps", type=int, default=20, help="batches per epoch")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--sampler", default="node", choices=("node", "edge", "rw"))
    ap.add_argument("--in-memory", action="store_true", help="train in memory too (and compare the losses)")
    ap.add_argument("--dir", type=Path, default=Path("/tmp/shgcn-ooc"))
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds a run may take")
    args = ap.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    stores = []
    for scale in args.scale:
        store = args.dir / f"rmat{scale}-rp-p{args.ranks}.zarr"
        if not store.exists():
            t0 = time.perf_counter()
            build_store(f"rmat:scale={scale},edge_factor=16,seed=1", store, args.ranks, "--model", "rp")
            print(f"built {store} in {time.perf_counter() - t0:.0f} s", flush=True)
        stores.append((f"R-MAT {scale}", store))
    stores += [(p.name, p) for p in args.store]
    env = kernel_cache(args.dir / "numba-cache")
    cold = compile_kernels(stores[0][1], args, args.dir / "compile.jsonl", env)
    rows, notes = [], [f"The first run, one step on {stores[0][0]} with numba's cache empty (it compiles the "
                       f"kernels), held {' / '.join(gib(a) for a in cold)} a rank; the runs above load them"]
    for label, store in stores:
        nnz = int(store_info(store)["nnz"])
        for ooc in (True, False) if args.in_memory else (True,):
            log = args.dir / f"{store.stem}-{'ooc' if ooc else 'mem'}.jsonl"
            wall = train(store, args, log, ooc, env)
            rows += rows_from(log, f"{label}{'' if ooc else ' (in memory)'}", nnz, wall)
            print(rows[-1], flush=True)
        if args.in_memory:
            same = losses(args.dir / f"{store.stem}-ooc.jsonl") == losses(args.dir / f"{store.stem}-mem.jsonl")
            notes.append(f"{label}: the step losses out of core and in memory are {'' if same else 'NOT '}the same, "
                         "bit for bit")
    cols = [(k, k) for k in ("store", "nnz", "rank", "RssAnon", "modelled", "VmHWM", "loss first, last", "step ms",
                             "setup s")]
    write_section(TITLE, __doc__.split("\n\n", 2)[2] + f"\n\n`mpirun -n {args.ranks}`, `--sampler {args.sampler}`, "
                  f"`--batch-size {args.batch_size}`, {args.steps} batches an epoch, {args.epochs} epochs.\n\n"
                  + table(rows, cols) + ("\n\n" + "; ".join(notes) + "." if notes else ""))


if __name__ == "__main__":
    main()
