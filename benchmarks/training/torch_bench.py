"""PyTorch on the store (issue 35): the trainer's torch backend against its
numpy backend, and PyG's layers and a user's own module trained through
shgcn.trainer.torchdist (examples/torch_pyg.py) at P = 2 and 4 against one
process, on Cora (hp stores, P = 1, 2, 4).

    python -m benchmarks.training.torch_bench [--repeats 3] [--epochs 200]

For each pair: the largest relative difference of the per-epoch losses, the
bytes every rank counted against the store's prediction, and the median
epoch time after the first (alternating runs; a shared 2-core machine, so the
times are indicative only).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from benchmarks.common import REPO, SHARED, bench_env, build_store, mpirun, table, write_section

TRAIN = REPO / "trainer" / "train.py"
EXAMPLE = REPO / "examples" / "torch_pyg.py"


def _launch(ranks: int, cmd: list[str]) -> None:
    subprocess.run([mpirun(), "-n", str(ranks), *cmd] if ranks > 1 else cmd, check=True, capture_output=True,
                   text=True, env=bench_env(), timeout=1800)


def trainer_run(store: Path, ranks: int, backend: str, epochs: int, log: Path) -> tuple[np.ndarray, float]:
    """(losses per epoch, median epoch seconds after the first) of ``shgcn-train --backend``."""
    _launch(ranks, [sys.executable, str(TRAIN), str(store), "--backend", backend, "--epochs", str(epochs),
                    "--eval-every", str(epochs), "--log", str(log), "--overwrite", "--quiet"])
    recs = [json.loads(line) for line in log.read_text().splitlines()[1:]]
    recs = [r for r in recs if r.get("type", "epoch") == "epoch"]
    return np.array([r["loss"] for r in recs]), float(np.median([r["epoch_time"] for r in recs[1:]]))


def example_run(store: Path, ranks: int, arch: str, epochs: int, log: Path) -> tuple[np.ndarray, float, dict]:
    """(losses, median epoch seconds after the first, the summary record) of examples/torch_pyg.py."""
    _launch(ranks, [sys.executable, str(EXAMPLE), str(store), "--arch", arch, "--epochs", str(epochs),
                    "--log", str(log)])
    recs = [json.loads(line) for line in log.read_text().splitlines()]
    epochs_ = [r for r in recs if "loss" in r]
    return np.array([r["loss"] for r in epochs_]), float(np.median([r["seconds"] for r in epochs_[1:]])), recs[-1]


def rel(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(a - b) / np.abs(b)))


def backend_rows(stores: dict[int, Path], args, tmp: Path) -> list[dict]:
    times: dict[str, list[float]] = {"numpy": [], "torch": []}
    losses: dict[str, np.ndarray] = {}
    for rep in range(args.repeats):
        for backend in ("numpy", "torch") if rep % 2 == 0 else ("torch", "numpy"):
            losses[backend], t = trainer_run(stores[2], 2, backend, args.epochs, tmp / f"{backend}.jsonl")
            times[backend].append(t)
    one, _ = trainer_run(stores[1], 1, "torch", args.epochs, tmp / "torch1.jsonl")
    med = {b: float(np.median(v)) for b, v in times.items()}
    return [{"run": "shgcn-train --backend numpy, P = 2", "loss": f"{losses['numpy'][-1]:.8f}", "diff": "-",
             "bytes": "(the trainer's own check)", "ms": f"{1e3 * med['numpy']:.2f}"},
            {"run": "shgcn-train --backend torch, P = 2", "loss": f"{losses['torch'][-1]:.8f}",
             "diff": f"{rel(losses['torch'], losses['numpy']):.1e} (vs numpy P = 2); "
                     f"{rel(losses['torch'], one):.1e} (vs torch P = 1)",
             "bytes": "(the trainer's own check)", "ms": f"{1e3 * med['torch']:.2f} ({med['torch'] / med['numpy']:.2f}x)"}]


def example_rows(stores: dict[int, Path], args, tmp: Path) -> list[dict]:
    rows = []
    for arch in ("gcn", "sage", "gat", "own"):
        one, t1, _ = example_run(stores[1], 1, arch, args.epochs, tmp / f"{arch}-1.jsonl")
        rows.append({"run": f"examples/torch_pyg.py --arch {arch}, P = 1", "loss": f"{one[-1]:.8f}", "diff": "-",
                     "bytes": "0", "ms": f"{1e3 * t1:.2f}"})
        for ranks in (2, 4):
            many, t, summary = example_run(stores[ranks], ranks, arch, args.epochs, tmp / f"{arch}-{ranks}.jsonl")
            ok = summary["all_bytes"] == summary["all_predicted"] and summary["ranks_equal"] == ranks
            rows.append({"run": f"examples/torch_pyg.py --arch {arch}, P = {ranks}", "loss": f"{many[-1]:.8f}",
                         "diff": f"{rel(many, one):.1e}",
                         "bytes": f"{summary['all_bytes']:,} = predicted {summary['all_predicted']:,}: "
                                  f"{'yes' if ok else 'NO'}", "ms": f"{1e3 * t:.2f}"})
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--epochs", type=int, default=200)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp_:
        tmp = Path(tmp_)
        stores = {}
        for parts in (1, 2, 4):
            stores[parts] = tmp / f"cora-p{parts}.zarr"
            build_store("cora", stores[parts], parts, "--model", "hp", "--data-dir", str(SHARED))
        rows = backend_rows(stores, args, tmp) + example_rows(stores, args, tmp)
    body = table(rows, [("run", "run (Cora, hp store)"), ("loss", f"loss at epoch {args.epochs}"),
                        ("diff", "max relative loss difference, every epoch"),
                        ("bytes", "bytes per epoch, all ranks (counted = predicted)"), ("ms", "median epoch ms")])
    body += (f"\nThe trainer: defaults (GCN 16 hidden, dropout 0.5), {args.repeats} alternating runs of each backend; "
             "its own bytes equal the cost model's in the MPI tests. The example: GCNConv / SAGEConv / GATConv (2 "
             "heads) / OwnGCN (Â H W with torch's sparse CSR product), hidden 16, dropout off, Adam lr 0.01; its "
             "bytes per epoch are the forward exchange of every layer's input and the backward of every layer but the "
             "first, predicted from the store's quality table (volume matrix) and the layer widths. Epoch times on a "
             "shared 2-core machine (oversubscribed at P = 4): indicative only.\n")
    write_section("PyTorch on the store: the torch backend and torchdist against one process (issue 35)", body)


if __name__ == "__main__":
    main()
