"""Train PyG's GCNConv, SAGEConv or GATConv, or your own ``nn.Module``, on a
partitioned store with the store's halo exchange (shgcn.trainer.torchdist).

    pipeline build cora --parts 2 --out stores/cora-p2.zarr
    mpirun -n 2 python examples/torch_pyg.py stores/cora-p2.zarr --arch gcn --eval-whole
    mpirun -n 2 python examples/torch_pyg.py stores/cora-p2.zarr --arch sage --batch-size 512 --sampler rw
    torchrun --nproc-per-node 2 examples/torch_pyg.py stores/cora-p2.zarr --arch sage --device cuda
    srun -n 2 --kill-on-bad-exit=1 python examples/torch_pyg.py stores/cora-p2.zarr --arch gcn   (Slurm, no MPI)

Every rank holds its rows; each layer's input rows that other ranks own
arrive through the graph's exchange (forward) and their gradients go back
(backward). The model is not bound to a rank: its layers take the graph,
``forward(x, graph)`` (PyG's convention), so the same object runs on any
rank's block or on the whole graph (``--eval-whole``: rank 0 evaluates it on
the whole graph in one process, beside the distributed evaluation).

``--batch-size B``: mini-batches of the store (``td.MiniBatches``: the
``--sampler``'s batches, the same at every P, each with its rows of Â,
GraphSAINT's normalisation for ``edge`` and ``rw``, its halo plan and its
graph; the next batch made while this one trains); a step per batch, each
batch's dropout keyed by its number. Without it, full batch.

The loss is the global mean and dropout (``--dropout``, ``td.dropout``:
each vertex's mask keyed by its id, the layer, the epoch and the seed, drawn
on its own rows before the exchange) is the same at every P, so P processes
train what one process trains. At the end each rank's counted bytes are
checked against the store's own prediction (its quality table's volume; for
mini-batches, each batch's volume under the store's partition) and
the run is written as JSON lines (``--log-file``; ``--log`` is the same, but
not under torchrun, whose own options it abbreviates).

``--checkpoint PATH``: rank 0 writes the model and optimizer there (every
``--checkpoint-every`` epochs and at the end; with mini-batches, the loader's
position too); with ``--resume`` the run starts from it (at any P: the model is not bound to a partition) and runs to
``--epochs``, with the losses of a run that was not stopped.

``--device cuda``: each rank computes on GPU ``local rank % GPUs`` of its
node, over NCCL when every rank of the node has a GPU of its own, else over
gloo (the halo rows then go through pinned host memory). No GPU: one line,
exit code 2.

A store for other ranks, a missing, foreign or corrupt store, a stale
launcher environment (RANK/WORLD_SIZE left under mpirun): one line from rank
0 (``torch_pyg: error: ...``, as ``shgcn-train`` says it) and exit code 2 on
every rank; ``open_block`` and ``init_from_env`` raise them alike on every rank.
One rank's failure mid-run (an exception, a full disk under ``--checkpoint``)
is one line naming the rank and the error, and ends every rank at once
(``td.run_main``: ``MPI_Abort`` under mpirun) instead of leaving the others
waiting in their next exchange; a rank that stops answering ends the others
within ``--timeout`` seconds (torch.distributed's limit on a collective).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time

import torch

from shgcn.trainer import torchdist as td


class OwnGCN(torch.nn.Module):
    """A user's own model in a dozen lines: dropout on own rows, Â times the exchanged rows, times W."""

    def __init__(self, dims: list[int], dropout: float = 0.0, seed: int = 0):
        super().__init__()
        self.lins = torch.nn.ModuleList(torch.nn.Linear(i, o) for i, o in zip(dims[:-1], dims[1:]))
        self.drops = torch.nn.ModuleList(td.Dropout(dropout, k, seed) for k in range(len(self.lins)))

    def forward(self, x: torch.Tensor, graph: td.Graph) -> torch.Tensor:
        for k, (drop, lin) in enumerate(zip(self.drops, self.lins)):
            x = drop(x, graph)  # own rows, before the exchange: received rows carry their owner's mask
            x = lin(graph.adjacency() @ graph.exchange(x))  # Â H W: aggregate own + received rows, then transform
            x = x.relu() if k < len(self.lins) - 1 else x
        return x


class PygNet(torch.nn.Module):
    """PyG layers that take the graph (``td.GCNConv``, ``td.SAGEConv``, ``td.GATConv``), ELU between them,
    dropout before each."""

    def __init__(self, arch: str, dims: list[int], heads: int, dropout: float = 0.0, seed: int = 0):
        super().__init__()
        convs = []
        for k, (d_in, d_out) in enumerate(zip(dims[:-1], dims[1:])):
            if arch == "gat":
                last = k == len(dims) - 2
                convs.append(td.GATConv(d_in * (1 if k == 0 else heads), d_out, heads=1 if last else heads))
            else:
                convs.append((td.GCNConv if arch == "gcn" else td.SAGEConv)(d_in, d_out))
        self.convs = torch.nn.ModuleList(convs)
        self.drops = torch.nn.ModuleList(td.Dropout(dropout, k, seed) for k in range(len(convs)))

    def forward(self, x: torch.Tensor, graph: td.Graph) -> torch.Tensor:
        for k, (drop, conv) in enumerate(zip(self.drops, self.convs)):
            x = conv(drop(x, graph), graph)
            x = torch.nn.functional.elu(x) if k < len(self.convs) - 1 else x
        return x


def widths(arch: str, dims: list[int], heads: int) -> list[int]:
    """The width of every layer's input (what its halo exchange moves per row)."""
    return [d * (heads if arch == "gat" and k > 0 else 1) for k, d in enumerate(dims[:-1])]


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("store")
    p.add_argument("--arch", choices=("gcn", "sage", "gat", "own"), default="gcn")
    p.add_argument("--hidden", type=int, nargs="*", default=[16])
    p.add_argument("--heads", type=int, default=2, help="GAT's heads in its hidden layers")
    p.add_argument("--epochs", type=int, default=100, help="the epochs of the whole run (a resumed one too)")
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--dropout", type=float, default=0.5,
                   help="rate before every layer (td.dropout: the same masks at every P; 0: none)")
    p.add_argument("--seed", type=int, default=0, help="initial weights, dropout masks and mini-batches")
    p.add_argument("--batch-size", type=int, default=0, metavar="B",
                   help="mini-batches of about B vertices (td.MiniBatches); 0: full batch")
    p.add_argument("--sampler", choices=("node", "edge", "rw"), default="node",
                   help="the mini-batches' sampler (edge and rw with GraphSAINT's normalisation)")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="cuda: each rank on GPU local rank %% GPUs (NCCL when every rank has its own, else gloo)")
    p.add_argument("--log-file", "--log", dest="log",
                   help="JSON lines: one per epoch (loss, accuracy, bytes), then the summary")
    p.add_argument("--eval-whole", action="store_true",
                   help="rank 0 also evaluates the trained model on the whole graph in one process")
    p.add_argument("--checkpoint", metavar="PATH", help="write the model and optimizer here (rank 0, atomically)")
    p.add_argument("--checkpoint-every", type=int, default=0, metavar="N", help="also every N epochs")
    p.add_argument("--resume", action="store_true", help="start from --checkpoint (its epoch, weights, optimizer)")
    p.add_argument("--timeout", type=float, default=300.0, metavar="S",
                   help="seconds a collective waits for a rank that stopped answering before the job ends")
    args = p.parse_args(argv)
    if args.resume and not args.checkpoint:
        p.error("--resume needs --checkpoint PATH")
    if args.batch_size < 0:
        p.error(f"--batch-size {args.batch_size}: must be >= 0 (0: full batch)")
    if not 0 < args.timeout < 10**7:  # timedelta's range, and a wait that ends
        p.error(f"--timeout {args.timeout:g}: seconds, more than 0 and below 1e7")
    return args


def check_args(args: argparse.Namespace) -> None:
    """What no run can use, refused before torch.distributed starts: one line on every rank alike (td.JobError,
    said once, exit 2), not torch's RuntimeError or a model of 0-wide layers that trains."""
    bad = [f"--epochs {args.epochs}: must be >= 1" if args.epochs < 1 else "",
           f"--hidden {' '.join(map(str, args.hidden))}: widths must be >= 1" if any(h < 1 for h in args.hidden) else "",
           f"--heads {args.heads}: must be >= 1" if args.heads < 1 else "",
           f"--lr {args.lr}: must be a finite number > 0" if not (math.isfinite(args.lr) and args.lr > 0) else "",
           f"--dropout {args.dropout}: must be in [0, 1)" if not 0 <= args.dropout < 1 else "",
           f"--checkpoint-every {args.checkpoint_every}: must be >= 0" if args.checkpoint_every < 0 else "",
           f"--seed {args.seed}: must be in 0..2^63-1" if not 0 <= args.seed < 2**63 else ""]
    first = next((b for b in bad if b), None)
    if first is not None:
        raise td.JobError(first)


def epoch_step(model: torch.nn.Module, opt: torch.optim.Optimizer, graph: td.Graph, epoch: int) -> dict:
    """One full-batch epoch: the record of its loss (the global mean), train accuracy and bytes."""
    block = graph.block
    start = time.perf_counter()
    model.train()
    td.set_epoch(model, epoch)  # the epoch keys the dropout masks
    opt.zero_grad()
    out = model(block.x, graph)
    loss = td.masked_loss(out, block, block.train_mask)
    loss.backward()
    td.sync_gradients(model.parameters())
    opt.step()
    if block.device.type == "cuda":
        torch.cuda.synchronize(block.device)  # the epoch's kernels are done before it is timed
    seconds = time.perf_counter() - start
    traffic = graph.halo.traffic.reset()
    return {"epoch": epoch, "seconds": seconds, "loss": float(td.global_sum(loss.reshape(1))[0]),
            "train_acc": td.accuracy(out, block, block.train_mask), "bytes_sent": traffic["bytes_sent"],
            "msgs_sent": traffic["msgs_sent"]}


def batch_epoch(model: torch.nn.Module, opt: torch.optim.Optimizer, loader: td.MiniBatches, epoch: int,
                w: list[int]) -> dict:
    """One epoch of mini-batches: the record of its step losses (each the batch's global loss), their mean,
    and the bytes this rank sent against the store's prediction for those batches (widths ``w``)."""
    start = time.perf_counter()
    model.train()
    losses, counted, predicted, msgs = [], 0, 0, 0
    for batch in loader.epoch(epoch):
        td.set_epoch(model, batch.key)  # the batch's number keys its dropout masks (the numpy trainer's)
        opt.zero_grad()
        loss = batch.loss(model(batch.block.x, batch.graph))
        loss.backward()
        td.sync_gradients(model.parameters())
        opt.step()
        losses.append(float(td.global_sum(loss.detach().reshape(1))[0]))
        traffic = batch.graph.halo.traffic
        sent, recv, _ = loader.predicted_rows(batch.epoch, batch.step)
        counted, msgs = counted + traffic.bytes_sent, msgs + traffic.msgs_sent
        predicted += predicted_bytes(int(sent[loader.block.plan.rank]), int(recv[loader.block.plan.rank]), w)
    return {"epoch": epoch, "seconds": time.perf_counter() - start, "loss": sum(losses) / max(len(losses), 1),
            "step_losses": losses, "bytes_sent": counted, "predicted_bytes": predicted, "msgs_sent": msgs}


def predicted_bytes(sent: int, recv: int, w: list[int]) -> int:
    """A rank's bytes of one step: each layer's forward sends ``sent`` rows at the layer's input width; each
    backward but the first layer's (the features need no gradient) returns the ``recv`` rows it received."""
    return 4 * (sent * sum(w) + recv * sum(w[1:]))


def evaluate(model: torch.nn.Module, graph: td.Graph) -> dict:
    """The distributed evaluation: the training rows' loss, validation and test accuracy over every rank."""
    block = graph.block
    model.eval()
    with torch.no_grad():
        out = model(block.x, graph)
    graph.halo.traffic.reset()
    loss = td.masked_loss(out, block, block.train_mask)
    return {"eval_loss": float(td.global_sum(loss.reshape(1))[0]), "val_acc": td.accuracy(out, block, block.val_mask),
            "test_acc": td.accuracy(out, block, block.test_mask)}


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    check_args(args)
    torch.set_num_threads(1)  # one core per rank, like shgcn-train
    device = td.local_device(args.device)  # checked before anything starts: no GPU, one line
    backend = td.choose_backend(device)
    rank, size = td.init_from_env(backend, timeout_s=args.timeout, device=device)
    graph = td.Graph(td.open_block(args.store, device=device))
    block = graph.block
    dims = [int(block.x.shape[1]), *args.hidden, block.classes]
    torch.manual_seed(args.seed)  # the same initial weights on every rank (made on the CPU: the same on any device)
    model = OwnGCN(dims, args.dropout, args.seed) if args.arch == "own" else \
        PygNet(args.arch, dims, args.heads, args.dropout, args.seed)
    model.to(device)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    loader = td.MiniBatches(args.store, batch_size=args.batch_size, sampler=args.sampler, seed=args.seed,
                            block=block) if args.batch_size else None
    first = td.load_checkpoint(args.checkpoint, model, opt, store_path=args.store, loader=loader)["epoch"] \
        if args.resume else 0
    if first >= args.epochs:  # the same on every rank: said once (td.JobError)
        raise td.JobError(f"{args.checkpoint}: already at epoch {first}, nothing left of --epochs {args.epochs}")
    w = widths("gcn" if args.arch == "own" else args.arch, dims, args.heads)
    records = []
    for epoch in range(first, args.epochs):
        records.append(batch_epoch(model, opt, loader, epoch, w) if loader is not None else
                       epoch_step(model, opt, graph, epoch))
        done = epoch + 1
        if args.checkpoint and (done == args.epochs or args.checkpoint_every and done % args.checkpoint_every == 0):
            td.save_checkpoint(args.checkpoint, model, opt, done, store_path=args.store, loader=loader)
    if loader is not None:
        loader.close()
    check = traffic_check(args, block, w, records)
    summary = {"summary": True, **evaluate(model, graph), "device": str(device), "backend": backend, **check}
    if args.eval_whole and rank == 0:  # the same model object on the whole graph, in this process alone
        summary.update({f"whole_{k}": v for k, v in td.evaluate_whole(model, args.store).items()})
    report(args, rank, size, records, summary)
    td.finish()  # every rank got here: they leave torch.distributed in turn
    return 0 if check["bytes"] == check["predicted"] else 1


def report(args: argparse.Namespace, rank: int, size: int, records: list[dict], summary: dict) -> None:
    """Rank 0 prints the run's last line and writes the log."""
    if rank != 0:
        return
    whole = f"; whole graph: test {summary['whole_test_acc']:.3f}" if "whole_test_acc" in summary else ""
    print(f"{args.arch} on {size} ranks ({summary['device']}, {summary['backend']}): loss {records[-1]['loss']:.4f}, "
          f"val {summary['val_acc']:.3f}, test {summary['test_acc']:.3f}{whole}; "
          f"bytes {'of the batches' if args.batch_size else 'per epoch'} {summary['bytes']} "
          f"(predicted {summary['predicted']})")
    if args.log:
        with open(args.log, "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in [*records, summary])


def traffic_check(args: argparse.Namespace, block: td.TorchBlock, w: list[int], records: list[dict]) -> dict:
    """Every rank's counted bytes against the store's prediction (:func:`predicted_bytes` of its rows): full
    batch, the last epoch's against the rows the quality table says this rank sends and receives; mini-batch,
    the run's against the sum of each batch's prediction (:meth:`td.MiniBatches.predicted_rows`)."""
    if args.batch_size:
        counted, predicted = sum(r["bytes_sent"] for r in records), sum(r["predicted_bytes"] for r in records)
    else:
        sent, recv, _ = td.predicted_rows(args.store)
        r = block.plan.rank
        counted, predicted = records[-1]["bytes_sent"], predicted_bytes(int(sent[r]), int(recv[r]), w)
    every = td.global_sum(torch.tensor([counted, predicted, int(counted == predicted)]))
    return {"bytes": counted, "predicted": predicted, "all_bytes": int(every[0]), "all_predicted": int(every[1]),
            "ranks_equal": int(every[2])}


if __name__ == "__main__":
    # one line and exit 2 for the user's input (no GPU, a store for other ranks...), said once when every rank
    # raised it; one rank's own failure: its line, and every rank ended at once (MPI_Abort under mpirun)
    sys.exit(td.run_main(main, "torch_pyg"))
