"""The example's models (examples/torch_pyg.py: PyG's GCNConv, SAGEConv, GATConv and a user's own module, dropout
0.5 keyed by vertex id) trained on ``td.MiniBatches`` of every sampler, each combination in turn in one launch:
``python tests/helpers/torch_minibatch_train.py STORE OUT.json --epochs E`` (under mpirun for several ranks).

Rank 0 writes OUT.json: per ``arch:sampler``, the step losses (each the batch's global loss), every rank's bytes
sent, and what the store predicts of them for those batches. ``--checkpoint PATH --stop E S`` stops each run when
the loader's next batch is step S of epoch E and writes ``td.save(..., loader=loader)`` to ``PATH.arch-sampler``;
``--checkpoint PATH --resume`` goes on from there to ``--epochs``."""

import argparse
import importlib.util
import json
from pathlib import Path

import torch

from shgcn.trainer import torchdist as td

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "torch_pyg.py"
ARCHS, SAMPLERS = ("gcn", "sage", "gat", "own"), ("node", "edge", "rw")


def example():
    spec = importlib.util.spec_from_file_location("torch_pyg_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("store")
    p.add_argument("out")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=150)
    p.add_argument("--combos", default=",".join(f"{a}:{s}" for s in SAMPLERS for a in ARCHS))
    p.add_argument("--checkpoint")
    p.add_argument("--stop", type=int, nargs=2, metavar=("EPOCH", "STEP"))
    p.add_argument("--resume", action="store_true")
    return p.parse_args()


def run(ex, args, block, arch, sampler):
    """One model trained on one sampler's batches: (step losses, bytes sent, bytes predicted) of this rank."""
    dims = [int(block.x.shape[1]), 16, block.classes]
    torch.manual_seed(0)
    model = ex.OwnGCN(dims, 0.5, 0) if arch == "own" else ex.PygNet(arch, dims, 2, 0.5, 0)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    w = ex.widths("gcn" if arch == "own" else arch, dims, 2)
    loader = td.MiniBatches(args.store, batch_size=args.batch_size, sampler=sampler, seed=3, block=block)
    ck = f"{args.checkpoint}.{arch}-{sampler}" if args.checkpoint else None
    if args.resume:
        td.load(ck, model, opt, store_path=args.store, loader=loader)
    losses, counted, predicted = [], 0, 0
    stop = tuple(args.stop) if args.stop else None
    for epoch in range(loader.position[0], args.epochs):
        for batch in loader.epoch(epoch):
            td.set_epoch(model, batch.key)
            opt.zero_grad()
            loss = batch.loss(model(batch.block.x, batch.graph))
            loss.backward()
            td.sync_gradients(model.parameters())
            opt.step()
            losses.append(float(td.global_sum(loss.detach().reshape(1))[0]))
            sent, recv, _ = loader.predicted_rows(batch.epoch, batch.step)
            r = block.plan.rank
            counted += batch.graph.halo.traffic.bytes_sent
            predicted += ex.predicted_bytes(int(sent[r]), int(recv[r]), w)
            if loader.position == stop:
                td.save(ck, model, opt, epoch, store_path=args.store, loader=loader)
                loader.close()
                return losses, counted, predicted
    loader.close()
    return losses, counted, predicted


def main():
    args = parse()
    torch.set_num_threads(1)
    rank, size = td.init_from_env()
    ex = example()
    block = td.open_block(args.store)
    out = {"size": size, "losses": {}, "bytes": {}, "predicted": {}}
    for combo in args.combos.split(","):
        arch, sampler = combo.split(":")
        losses, counted, predicted = run(ex, args, block, arch, sampler)
        every = td.global_sum(torch.zeros(2 * size, dtype=torch.float64).index_put_(
            (torch.tensor([rank, size + rank]),), torch.tensor([counted, predicted], dtype=torch.float64)))
        out["losses"][combo] = losses
        out["bytes"][combo] = every[:size].long().tolist()
        out["predicted"][combo] = every[size:].long().tolist()
    if rank == 0:
        Path(args.out).write_text(json.dumps(out))
    td.finish()


if __name__ == "__main__":
    main()
