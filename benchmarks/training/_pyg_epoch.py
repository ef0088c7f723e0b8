"""PyG's layers on the same graph and widths as ``shgcn-train --arch``: run
by an interpreter that has torch and torch_geometric (one thread unless
``--threads``).

    python -m benchmarks.training._pyg_epoch GRAPH.npz ARCH EPOCHS HIDDEN [--heads 8] [--dropout 0.5] [--lr 0.01]
        [--weight-decay 5e-4] [--seed 0] [--eval] [--device cpu|cuda] [--threads 1] [--skip 3] [--normalized]
        [--gat-hidden H] [--gat-epochs E]

GRAPH.npz holds row, col (edges col -> row, no self loops), x, y, train,
val, test (as benchmarks/training/arch_bench.py writes them). Prints one JSON line:
the median epoch time (training step: forward, backward, Adam) after 3
warm-up epochs (``--skip``), and with --eval the test accuracy after the last epoch.
Weight decay applies to the first layer's parameters (as the trainer; PyG's
GCN example does the same).

``--device cuda`` runs on the GPU, each epoch timed between two
``torch.cuda.synchronize()``. ``--normalized``: GCN is ``GCNConv(normalize=False)``
on the store's Â with its values as ``edge_weight`` (arrays a_row, a_col,
a_val of GRAPH.npz: Â's entries, self loops included, as
benchmarks/training/gpu_bench.py writes them) instead of PyG's own
normalization of the pattern. ARCH ``csr``: a plain GCN on torch's sparse CSR
product, ``Â @ lin(H)`` per layer (needs a_row, a_col, a_val too). ARCH may be
a comma list (``gcn,sage,gin,gat,csr``): each is trained in turn in this one
process (torch, PyG and the GPU started once), one JSON line as each ends;
``--gat-hidden`` and ``--gat-epochs`` give GAT its own width per head and
epochs.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch_geometric.nn import GATConv, GCNConv, GINConv, SAGEConv


def layer(arch: str, d_in: int, d_out: int, heads: int, last: bool, attn: float, normalized: bool = False):
    if arch == "gcn":
        return GCNConv(d_in, d_out, cached=True, normalize=not normalized)
    if arch == "sage":
        return SAGEConv(d_in, d_out)  # mean aggregation, root weight
    if arch == "gin":
        mlp = torch.nn.Sequential(torch.nn.Linear(d_in, d_out), torch.nn.ReLU(), torch.nn.Linear(d_out, d_out))
        return GINConv(mlp, train_eps=True)
    return GATConv(d_in, d_out, heads=1 if last else heads, concat=not last, dropout=attn)


class Net(torch.nn.Module):
    def __init__(self, arch: str, dims: list[int], heads: int, dropout: float, normalized: bool = False):
        super().__init__()
        self.arch, self.dropout = arch, dropout
        convs, d_in = [], dims[0]
        for k, d in enumerate(dims[1:]):
            last = k == len(dims) - 2
            convs.append(layer(arch, d_in, d, heads, last, dropout, normalized))
            d_in = d * (heads if arch == "gat" and not last else 1)
        self.convs = torch.nn.ModuleList(convs)

    def forward(self, x, ei, ew=None):
        for k, conv in enumerate(self.convs):
            x = F.dropout(x, self.dropout, self.training)
            x = conv(x, ei) if ew is None else conv(x, ei, ew)
            if k < len(self.convs) - 1:
                x = F.elu(x) if self.arch == "gat" else F.relu(x)
        return x


class CsrGCN(torch.nn.Module):
    """A plain GCN without PyG: ``Â @ lin(H)`` per layer, Â a torch sparse CSR tensor (``forward(x, a)``)."""

    def __init__(self, dims: list[int], dropout: float):
        super().__init__()
        self.dropout = dropout
        self.convs = torch.nn.ModuleList(torch.nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:]))

    def forward(self, x, a, ew=None):
        for k, lin in enumerate(self.convs):
            x = F.dropout(x, self.dropout, self.training)
            x = a @ lin(x)
            if k < len(self.convs) - 1:
                x = F.relu(x)
        return x


def a_hat(z, n: int, device):
    """Â (arrays a_row, a_col, a_val of the npz) as a sparse CSR tensor on ``device``."""
    row, col, val = (np.asarray(z[k]) for k in ("a_row", "a_col", "a_val"))
    order = np.lexsort((col, row))
    crow = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(row, minlength=n), out=crow[1:])
    return torch.sparse_csr_tensor(torch.from_numpy(crow), torch.from_numpy(col[order].astype(np.int64)),
                                   torch.from_numpy(val[order].astype(np.float32)), (n, n)).to(device)


def graph_inputs(z, arch: str, normalized: bool, n: int, device):
    """(what the model takes as its graph, the edge weights or None): the pattern's edge_index; with
    ``normalized`` GCN's edge_index of Â and its values; for ``csr`` Â itself."""
    if arch == "csr":
        return a_hat(z, n, device), None
    if normalized and arch == "gcn":
        ei = np.stack([z["a_col"], z["a_row"]]).astype(np.int64)
        return torch.from_numpy(ei).to(device), torch.from_numpy(z["a_val"].astype(np.float32)).to(device)
    ei = torch.from_numpy(np.stack([z["col"], z["row"]]).astype(np.int64))  # messages flow column -> row
    return ei.to(device), None


def sync(device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def train(a, arch: str, z, device) -> dict:
    """Train ``arch`` for its epochs: the median epoch after the warm-up, and with --eval the test accuracy."""
    torch.manual_seed(a.seed)
    gat = arch == "gat"
    epochs, hidden = (a.gat_epochs or a.epochs, a.gat_hidden or a.hidden) if gat else (a.epochs, a.hidden)
    x = torch.from_numpy(z["x"].astype(np.float32)).to(device)
    y = torch.from_numpy(z["y"].astype(np.int64)).to(device)
    ei, ew = graph_inputs(z, arch, a.normalized, x.shape[0], device)
    train, test = torch.from_numpy(z["train"]).to(device), torch.from_numpy(z["test"]).to(device)
    classes = int(y.max()) + 1
    dims = [x.shape[1], hidden, classes]
    model = (CsrGCN(dims, a.dropout) if arch == "csr" else Net(arch, dims, a.heads, a.dropout, a.normalized)).to(device)
    first = list(model.convs[0].parameters())
    rest = [p for c in model.convs[1:] for p in c.parameters()]
    opt = torch.optim.Adam([{"params": first, "weight_decay": a.weight_decay}, {"params": rest, "weight_decay": 0}],
                           lr=a.lr)
    times = []
    for _ in range(epochs):
        sync(device)
        t0 = time.perf_counter()
        model.train()
        opt.zero_grad()
        loss = F.cross_entropy(model(x, ei, ew)[train], y[train])
        loss.backward()
        opt.step()
        sync(device)
        times.append(time.perf_counter() - t0)
    counted = times[a.skip:] if len(times) > a.skip else times
    out = {"epoch_time": float(np.median(counted)), "torch": torch.__version__, "arch": arch, "device": str(device),
           "epochs_timed": len(counted), "first_epoch": times[0], "loss": loss.item()}
    if a.eval:
        model.eval()
        with torch.no_grad():
            pred = model(x, ei, ew).argmax(1)
        out["test_acc"] = float((pred[test] == y[test]).float().mean())
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("graph")
    ap.add_argument("arch", help="gcn, sage, gin, gat or csr; or a comma list, run in turn (one JSON line each)")
    ap.add_argument("epochs", type=int)
    ap.add_argument("hidden", type=int)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--dropout", type=float, default=0.5)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--weight-decay", type=float, default=5e-4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--eval", action="store_true")
    ap.add_argument("--device", default="cpu", help="cpu or cuda")
    ap.add_argument("--threads", type=int, default=1, help="torch's intra-op threads")
    ap.add_argument("--skip", type=int, default=3, help="warm-up epochs not counted")
    ap.add_argument("--normalized", action="store_true", help="gcn: GCNConv(normalize=False) on Â's values")
    ap.add_argument("--gat-hidden", type=int, help="gat: hidden width per head (default: HIDDEN)")
    ap.add_argument("--gat-epochs", type=int, help="gat: epochs (default: EPOCHS)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    device = torch.device(a.device)
    z = np.load(a.graph)
    for arch in a.arch.split(","):
        print(json.dumps(train(a, arch, z, device)), flush=True)


if __name__ == "__main__":
    main()
