"""Trainer speed and bytes on soc-slashdot0902 (random:128 features, 16
random classes, 2 layers, hidden 128), from real runs of trainer/train.py.

- epoch time at P=1 (one thread) next to PyG's GCNConv on one thread (when a
  Python with torch_geometric is given with --pyg-python; skipped otherwise);
- P=2 versus P=1 (the machine has 2 cores): speedup;
- P=4: p2p on the hp store, bcast on the same store, p2p on the rp store:
  bytes per epoch and epoch time (P=4 on 2 cores is oversubscribed: the
  bytes are exact, the times are not representative).

    python -m benchmarks.training.trainer_bench [--epochs 30] [--pyg-python /path/to/python]
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

from benchmarks.common import REPO, SHARED, build_store, mpirun, table, write_section

TRAIN = REPO / "trainer" / "train.py"
WARMUP = 3


def build(tmp: Path, parts: int, model: str) -> Path:
    out = tmp / f"slash-{model}-p{parts}.zarr"
    if not out.exists():
        build_store("soc-slashdot0902", out, parts, "--model", model, "--features", "random:128", "--labels",
                    "random:16", "--data-dir", str(SHARED))
    return out


def train(store: Path, ranks: int, epochs: int, exchange: str = "p2p", threads: int | None = None) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "run.jsonl"
        cmd = [sys.executable, str(TRAIN), str(store), "--epochs", str(epochs), "--hidden", "128", "--dropout", "0.5",
               "--exchange", exchange, "--eval-every", str(epochs), "--log", str(log), "--quiet"]
        if ranks > 1:
            cmd = [mpirun(), "-n", str(ranks), *cmd]
        env = dict(os.environ)
        if threads:
            env.update({v: str(threads) for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")})
        subprocess.run(cmd, check=True, env=env)
        recs = [json.loads(line) for line in log.read_text().splitlines()][1:]
    steady = recs[WARMUP:]
    return {
        "epoch_time": float(np.median([r["epoch_time"] for r in steady])),
        "comm_time": float(np.median([max(r["comm_time"]) for r in steady])),
        "bytes": int(np.sum(steady[0]["bytes_sent"])),
        "max_bytes": int(np.max(steady[0]["bytes_sent"])),
        "msgs": int(np.sum(steady[0]["msgs_sent"])),
    }


PYG_SCRIPT = r"""
import sys, time, json
import numpy as np, torch
from torch_geometric.nn import GCNConv
torch.set_num_threads(1)
z = np.load(sys.argv[1]); epochs = int(sys.argv[2])
ei = torch.from_numpy(np.stack([z["col"], z["row"]]).astype(np.int64))  # messages flow column -> row, as Â X
x = torch.from_numpy(z["x"]); y = torch.from_numpy(z["y"].astype(np.int64)); mask = torch.from_numpy(z["train"])
class Net(torch.nn.Module):
    def __init__(s):
        super().__init__(); s.c1 = GCNConv(x.shape[1], 128, cached=True); s.c2 = GCNConv(128, int(y.max()) + 1, cached=True)
    def forward(s):
        h = torch.nn.functional.dropout(x, 0.5, s.training)
        h = torch.relu(s.c1(h, ei)); h = torch.nn.functional.dropout(h, 0.5, s.training)
        return s.c2(h, ei)
m = Net(); opt = torch.optim.Adam(m.parameters(), lr=0.01)
times = []
for e in range(epochs):
    t = time.perf_counter(); m.train(); opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(m()[mask], y[mask]); loss.backward(); opt.step()
    times.append(time.perf_counter() - t)
print(json.dumps({"epoch_time": float(np.median(times[3:])), "torch": torch.__version__}))
"""


def pyg(python: str, store: Path, epochs: int) -> dict | None:
    from shgcn import store as st

    s = st.open_store(store)
    b = s.rank(0)
    rows = np.repeat(np.arange(b.n_own), np.diff(b.plan.indptr))
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "g.npz"
        keep = rows != np.asarray(b.plan.indices)  # GCNConv adds its own self loops
        np.savez(f, row=rows[keep], col=np.asarray(b.plan.indices)[keep], x=np.asarray(b.features),
                 y=np.asarray(b.labels), train=np.asarray(b.train_mask))
        script = Path(tmp) / "pyg.py"
        script.write_text(PYG_SCRIPT)
        res = subprocess.run([python, str(script), str(f), str(epochs)], capture_output=True, text=True)
    if res.returncode != 0:
        print(res.stderr, file=sys.stderr)
        return None
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--pyg-python", help="a Python interpreter that has torch and torch_geometric")
    ap.add_argument("--stores", help="directory to keep the built stores in (default: a temporary one)")
    args = ap.parse_args()
    ctx = tempfile.TemporaryDirectory() if not args.stores else None
    tmp = Path(args.stores or ctx.name)
    tmp.mkdir(parents=True, exist_ok=True)
    hp1, hp2, hp4, rp4 = build(tmp, 1, "hp"), build(tmp, 2, "hp"), build(tmp, 4, "hp"), build(tmp, 4, "rp")

    one_thread = train(hp1, 1, args.epochs, threads=1)
    p1 = train(hp1, 1, args.epochs)
    p2 = train(hp2, 2, args.epochs)
    rows = [{"run": "P=1, 1 thread", "epoch": f"{one_thread['epoch_time'] * 1000:.1f}"},
            {"run": "P=1, 2 BLAS threads", "epoch": f"{p1['epoch_time'] * 1000:.1f}"},
            {"run": "P=2 p2p hp", "epoch": f"{p2['epoch_time'] * 1000:.1f}", "comm": f"{p2['comm_time'] * 1000:.1f}",
             "bytes": f"{p2['bytes']:,}", "speedup": f"{p1['epoch_time'] / p2['epoch_time']:.2f}"}]
    if args.pyg_python:
        r = pyg(args.pyg_python, hp1, args.epochs)
        if r:
            rows.append({"run": f"PyG GCNConv, 1 thread (torch {r['torch']})", "epoch": f"{r['epoch_time'] * 1000:.1f}"})
            rows[0]["vs PyG"] = f"{one_thread['epoch_time'] / r['epoch_time']:.2f}"
    else:
        rows.append({"run": "PyG GCNConv", "epoch": "skipped (no --pyg-python)"})
    for label, store, ex in (("P=4 p2p hp", hp4, "p2p"), ("P=4 bcast hp", hp4, "bcast"), ("P=4 p2p rp", rp4, "p2p")):
        r = train(store, 4, args.epochs, exchange=ex)
        rows.append({"run": label, "epoch": f"{r['epoch_time'] * 1000:.1f}", "comm": f"{r['comm_time'] * 1000:.1f}",
                     "bytes": f"{r['bytes']:,}", "max bytes": f"{r['max_bytes']:,}", "msgs": r["msgs"]})
    cols = [("run", "run"), ("epoch", "epoch ms (median)"), ("comm", "comm wait ms (slowest rank)"),
            ("bytes", "bytes sent per epoch (all ranks)"), ("max bytes", "max bytes one rank"), ("msgs", "messages"),
            ("speedup", "speedup vs P=1"), ("vs PyG", "ours / PyG")]
    body = table(rows, cols) + (
        f"\n{args.epochs} epochs, median of epochs {WARMUP + 1}..{args.epochs}; dropout 0.5; training step only "
        "(forward + backward + allreduce; evaluation once at the end). Targets (issue 4): P=1 at most 0.2 of PyG's "
        "epoch time; P=2 speedup at least 1.6. P=4 runs 4 ranks on 2 cores.\n")
    write_section("Trainer: soc-slashdot0902, hidden 128", body)
    if ctx:
        ctx.cleanup()


if __name__ == "__main__":
    main()
