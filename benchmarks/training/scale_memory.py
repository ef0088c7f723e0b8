"""The trainer at the build's scale (issue 32): ``mpirun -n P shgcn-train``
on a large R-MAT store, a few epochs, every rank's measured peak memory
against its modelled bytes (the run log's header: ``memory``; its epochs:
``peak_memory``, each rank's ``VmHWM``).

    python -m benchmarks.training.scale_memory --scale 22 [--ranks 2] [--epochs 3] [--model gp] [--dir /tmp/scale]

Builds ``rmat:scale=S,edge_factor=16,seed=1 --model MODEL --parts P`` (every
other option at its default: random features of width 64, GCN [64, 16, 16])
unless the store is there, then trains full batch. The model counts a rank's
block (16 bytes a nonzero: its split by column blocks and the transposed
copies; the memory-mapped block's pages are dropped once split, a directed
store's stored Â^T once checked), features, layer caches and gradients, the
received rows and the model; it leaves out the interpreter, numpy, numba, MPI
and the store's reader (about 200 MiB a rank: :mod:`shgcn.core.memory`).
`beyond`: the measured peak minus the modelled bytes.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.common import table, write_section
from benchmarks.common.runs import bench_env, build_store, mpirun, store_info
from shgcn.core.memory import gib


def train(store: Path, ranks: int, epochs: int, log: Path) -> tuple[float, str]:
    """(wall seconds, the summary line) of one ``mpirun -n ranks shgcn-train`` run."""
    t0 = time.perf_counter()
    res = subprocess.run([mpirun(), "-n", str(ranks), sys.executable, "-m", "shgcn.trainer", str(store), "--epochs",
                          str(epochs), "--log", str(log), "--overwrite"], capture_output=True, text=True,
                         env=bench_env(), timeout=3600)
    if res.returncode != 0:
        raise SystemExit(f"training failed ({res.returncode}):\n{res.stderr[-3000:]}")
    return time.perf_counter() - t0, res.stdout.strip().splitlines()[-1]


def rows_from(log: Path, nnz: int, scale: int) -> list[dict]:
    recs = [json.loads(x) for x in log.read_text().splitlines()]
    header = next(r for r in recs if r.get("type") == "header")
    epochs = [r for r in recs if r.get("type") == "epoch"]
    peak, modelled = epochs[-1]["peak_memory"], header["memory"]
    return [{"scale": scale, "nnz": f"{nnz:,}", "rank": r, "modelled": gib(modelled[r]), "peak": gib(peak[r]),
             "beyond": gib(peak[r] - modelled[r]) if peak[r] >= modelled[r] else "-" + gib(modelled[r] - peak[r]),
             "peak / modelled": f"{peak[r] / modelled[r]:.2f}",
             "epoch s": f"{min(e['epoch_time'] for e in epochs):.1f}"} for r in range(len(peak))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=int, nargs="+", default=[22])
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/shgcn-scale"))
    ap.add_argument("--model", default="gp", help="the partition model of the store (rp: no partitioner's time; "
                    "the largest halo)")
    args = ap.parse_args()
    rows = []
    for scale in args.scale:
        store = args.dir / f"rmat{scale}-{args.model}-p{args.ranks}.zarr"
        if not store.exists():
            build_store(f"rmat:scale={scale},edge_factor=16,seed=1", store, args.ranks, "--model", args.model)
        nnz = int(store_info(store)["nnz"])
        log = args.dir / f"rmat{scale}-{args.model}-p{args.ranks}.jsonl"
        seconds, line = train(store, args.ranks, args.epochs, log)
        print(line, flush=True)
        rows += rows_from(log, nnz, scale)
    cols = [(k, k) for k in ("scale", "nnz", "rank", "modelled", "peak", "beyond", "peak / modelled", "epoch s")]
    write_section("Trainer at the build's scale: modelled memory against the measured peak (issue 32)",
                  __doc__.split("\n\n", 2)[2] + f"\n\n`--model {args.model}`, `mpirun -n {args.ranks}`, "
                  f"{args.epochs} epochs, full batch; `epoch s`: the fastest epoch (the machine is shared).\n\n"
                  + table(rows, cols))


if __name__ == "__main__":
    main()
