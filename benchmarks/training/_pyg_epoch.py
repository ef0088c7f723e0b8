"""PyG's layers on the same graph and widths as ``shgcn-train --arch``: run
by an interpreter that has torch and torch_geometric (one thread).

    python -m benchmarks.training._pyg_epoch GRAPH.npz ARCH EPOCHS HIDDEN [--heads 8] [--dropout 0.5] [--lr 0.01]
        [--weight-decay 5e-4] [--seed 0] [--eval]

GRAPH.npz holds row, col (edges col -> row, no self loops), x, y, train,
val, test (as benchmarks/training/arch_bench.py writes them). Prints one JSON line:
the median epoch time (training step: forward, backward, Adam) after 3
warm-up epochs, and with --eval the test accuracy after the last epoch.
Weight decay applies to the first layer's parameters (as the trainer; PyG's
GCN example does the same).
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch_geometric.nn import GATConv, GCNConv, GINConv, SAGEConv


def layer(arch: str, d_in: int, d_out: int, heads: int, last: bool, attn: float):
    if arch == "gcn":
        return GCNConv(d_in, d_out, cached=True)
    if arch == "sage":
        return SAGEConv(d_in, d_out)  # mean aggregation, root weight
    if arch == "gin":
        mlp = torch.nn.Sequential(torch.nn.Linear(d_in, d_out), torch.nn.ReLU(), torch.nn.Linear(d_out, d_out))
        return GINConv(mlp, train_eps=True)
    return GATConv(d_in, d_out, heads=1 if last else heads, concat=not last, dropout=attn)


class Net(torch.nn.Module):
    def __init__(self, arch: str, dims: list[int], heads: int, dropout: float):
        super().__init__()
        self.arch, self.dropout = arch, dropout
        convs, d_in = [], dims[0]
        for k, d in enumerate(dims[1:]):
            last = k == len(dims) - 2
            convs.append(layer(arch, d_in, d, heads, last, dropout))
            d_in = d * (heads if arch == "gat" and not last else 1)
        self.convs = torch.nn.ModuleList(convs)

    def forward(self, x, ei):
        for k, conv in enumerate(self.convs):
            x = F.dropout(x, self.dropout, self.training)
            x = conv(x, ei)
            if k < len(self.convs) - 1:
                x = F.elu(x) if self.arch == "gat" else F.relu(x)
        return x


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("graph")
    ap.add_argument("arch")
    ap.add_argument("epochs", type=int)
    ap.add_argument("hidden", type=int)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--dropout", type=float, default=0.5)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--weight-decay", type=float, default=5e-4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--eval", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(a.seed)
    z = np.load(a.graph)
    ei = torch.from_numpy(np.stack([z["col"], z["row"]]).astype(np.int64))  # messages flow column -> row
    x = torch.from_numpy(z["x"].astype(np.float32))
    y = torch.from_numpy(z["y"].astype(np.int64))
    train, test = torch.from_numpy(z["train"]), torch.from_numpy(z["test"])
    classes = int(y.max()) + 1
    model = Net(a.arch, [x.shape[1], a.hidden, classes], a.heads, a.dropout)
    first = list(model.convs[0].parameters())
    rest = [p for c in model.convs[1:] for p in c.parameters()]
    opt = torch.optim.Adam([{"params": first, "weight_decay": a.weight_decay}, {"params": rest, "weight_decay": 0}],
                           lr=a.lr)
    times = []
    for _ in range(a.epochs):
        t0 = time.perf_counter()
        model.train()
        opt.zero_grad()
        loss = F.cross_entropy(model(x, ei)[train], y[train])
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    out = {"epoch_time": float(np.median(times[3:] if len(times) > 3 else times)), "torch": torch.__version__}
    if a.eval:
        model.eval()
        with torch.no_grad():
            pred = model(x, ei).argmax(1)
        out["test_acc"] = float((pred[test] == y[test]).float().mean())
    print(json.dumps(out))


if __name__ == "__main__":
    main()
