"""Train PyG's GCNConv, SAGEConv or GATConv, or your own ``nn.Module``, on a
partitioned store with the store's halo exchange (shgcn.trainer.torchdist).

    pipeline build cora --parts 2 --out stores/cora-p2.zarr
    mpirun -n 2 python examples/torch_pyg.py stores/cora-p2.zarr --arch gcn
    torchrun --nproc-per-node 2 examples/torch_pyg.py stores/cora-p2.zarr --arch sage

Every rank holds its rows; each layer's input rows that other ranks own
arrive through ``Halo`` (forward) and their gradients go back (backward).
The loss is the global mean, so P processes train what one process trains
(same seed, dropout off). At the end each rank's counted bytes are checked
against the store's own prediction (its quality table's volume) and the run
is written as JSON lines (``--log``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import torch

from shgcn.trainer import torchdist as td


class OwnGCN(torch.nn.Module):
    """A user's own model in ten lines: Â (the block's rows) times the halo-extended input, times W."""

    def __init__(self, block: td.TorchBlock, dims: list[int]):
        super().__init__()
        self.a, self.halo = block.adjacency(), td.Halo(block.plan)
        self.lins = torch.nn.ModuleList(torch.nn.Linear(i, o) for i, o in zip(dims[:-1], dims[1:]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for k, lin in enumerate(self.lins):
            x = lin(self.a @ self.halo(x))  # Â H W: aggregate own + received rows, then transform
            x = x.relu() if k < len(self.lins) - 1 else x
        return x


class PygNet(torch.nn.Module):
    """PyG layers on the rank's rows, ReLU between them; ``halo`` shared by every layer."""

    def __init__(self, block: td.TorchBlock, arch: str, dims: list[int], heads: int):
        super().__init__()
        self.halo = td.Halo(block.plan)
        convs = []
        for k, (d_in, d_out) in enumerate(zip(dims[:-1], dims[1:])):
            if arch == "gat":
                last = k == len(dims) - 2
                convs.append(td.gat_conv(block, self.halo, d_in * (1 if k == 0 else heads), d_out,
                                         heads=1 if last else heads))
            else:
                make = td.gcn_conv if arch == "gcn" else td.sage_conv
                convs.append(make(block, self.halo, d_in, d_out))
        self.convs = torch.nn.ModuleList(convs)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for k, conv in enumerate(self.convs):
            x = conv(x)
            x = torch.nn.functional.elu(x) if k < len(self.convs) - 1 else x
        return x


def widths(arch: str, dims: list[int], heads: int) -> list[int]:
    """The width of every layer's input (what its halo exchange moves per row)."""
    return [d * (heads if arch == "gat" and k > 0 else 1) for k, d in enumerate(dims[:-1])]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("store")
    p.add_argument("--arch", choices=("gcn", "sage", "gat", "own"), default="gcn")
    p.add_argument("--hidden", type=int, nargs="*", default=[16])
    p.add_argument("--heads", type=int, default=2, help="GAT's heads in its hidden layers")
    p.add_argument("--epochs", type=int, default=100)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--log", help="JSON lines: one per epoch (loss, accuracy, bytes), then the traffic check")
    args = p.parse_args(argv)

    torch.set_num_threads(1)  # one core per rank, like shgcn-train
    rank, size = td.init_from_env()
    block = td.open_block(args.store)
    dims = [int(block.x.shape[1]), *args.hidden, block.classes]
    torch.manual_seed(args.seed)  # the same initial weights on every rank
    model = OwnGCN(block, dims) if args.arch == "own" else PygNet(block, args.arch, dims, args.heads)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    records = []
    for epoch in range(args.epochs):
        start = time.perf_counter()
        model.train()
        opt.zero_grad()
        out = model(block.x)
        loss = td.masked_loss(out, block, block.train_mask)
        loss.backward()
        td.sync_gradients(model.parameters())
        opt.step()
        seconds = time.perf_counter() - start
        traffic = model.halo.traffic.reset()
        records.append({"epoch": epoch, "seconds": seconds, "loss": float(td.global_sum(loss.reshape(1))[0]),
                        "train_acc": td.accuracy(out, block, block.train_mask), "bytes_sent": traffic["bytes_sent"],
                        "msgs_sent": traffic["msgs_sent"]})
    model.eval()
    with torch.no_grad():
        out = model(block.x)
    model.halo.traffic.reset()
    check = traffic_check(args, block, dims, records[-1]["bytes_sent"])
    summary = {"summary": True, "val_acc": td.accuracy(out, block, block.val_mask),
               "test_acc": td.accuracy(out, block, block.test_mask), **check}
    if rank == 0:
        print(f"{args.arch} on {size} ranks: loss {records[-1]['loss']:.4f}, val {summary['val_acc']:.3f}, "
              f"test {summary['test_acc']:.3f}; bytes per epoch {check['bytes']} (predicted {check['predicted']})")
    if rank == 0 and args.log:
        with open(args.log, "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in [*records, summary])
    td.finish()  # every rank got here: they leave torch.distributed in turn
    return 0 if check["bytes"] == check["predicted"] else 1


def traffic_check(args: argparse.Namespace, block: td.TorchBlock, dims: list[int], counted: int) -> dict:
    """Every rank's counted bytes per epoch against the store's prediction: each layer's forward sends the
    rows the quality table says this rank sends, at the layer's input width; each backward but the first
    layer's (the features need no gradient) returns the rows it received."""
    sent, recv, _ = td.predicted_rows(args.store)
    w = widths("gcn" if args.arch == "own" else args.arch, dims, args.heads)
    r = block.plan.rank
    predicted = 4 * (int(sent[r]) * sum(w) + int(recv[r]) * sum(w[1:]))
    every = td.global_sum(torch.tensor([counted, predicted, int(counted == predicted)]))
    return {"bytes": counted, "predicted": predicted, "all_bytes": int(every[0]), "all_predicted": int(every[1]),
            "ranks_equal": int(every[2])}


if __name__ == "__main__":
    sys.exit(main())
