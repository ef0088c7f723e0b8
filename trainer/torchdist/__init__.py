"""Bring your own PyTorch model: a store's blocks as torch tensors and its
sparsity-aware halo exchange as a differentiable torch.distributed function
(extra ``pyg``: torch, and torch_geometric for :mod:`.layers`).

::

    from shgcn.trainer import torchdist as td

    td.init_from_env()                         # torchrun, mpirun or one process
    block = td.open_block("stores/cora-p2.zarr")   # this rank's rows of Â, features, labels, masks, plan
    halo = td.Halo(block.plan)                 # own rows -> own rows + the rows other ranks send
    conv = td.gcn_conv(block, halo, 1433, 16)  # PyG's GCNConv on the rank's rows (also sage_conv, gat_conv)
    loss = td.masked_loss(logits, block, block.train_mask)   # the rank's share of the global mean
    loss.backward(); td.sync_gradients(model.parameters()); opt.step()
    td.finish()                                # when every rank is done: the ranks leave in turn

``sys.exit(td.run_main(main, "PROG"))`` ends a job as ``shgcn-train`` does:
one line for a user error (``td.JobError``: one that every rank raises
alike, said once), and one rank's failure mid-run ends the other ranks at
once (``MPI_Abort`` under mpirun) instead of leaving them in a collective.

A model not bound to a rank (PyG's convention, ``forward(x, graph)``): layers
``td.GCNConv(d_in, d_out)`` (also ``SAGEConv``, ``GATConv``) called
``conv(x, graph)`` with ``graph = td.Graph(block)``; ``td.dropout(x, graph,
p, layer, epoch=e, seed=s)`` (or ``td.Dropout``) draws the numpy trainer's
masks, keyed by vertex id, so P ranks train what one process trains with
dropout on; ``td.evaluate_whole(model, path)`` runs the same model object on
the whole graph in one process; ``td.save_checkpoint`` /
``td.load_checkpoint`` (``td.save`` / ``td.load``) resume a run (at any P, for
such a model), with a mini-batch loader's position (``loader=``).
``td.MiniBatches(path, batch_size=b, sampler="node"|"edge"|"rw", seed=s)``
hands out the numpy trainer's mini-batches (the same at every P, each with
its rows of Â, halo plan and graph, the next one made ahead; its
``predicted_rows`` the store's prediction of each batch's exchange).

On GPUs: ``device = td.local_device("cuda")`` (the rank's GPU: its rank on the
node modulo the node's GPUs), ``td.init_from_env(td.choose_backend(device),
device=device)`` (NCCL when every rank has a GPU of its own, else gloo) and
``td.open_block(path, device=device)`` (or ``block.to(device)``); the helpers
run on the block's and their input's device (with gloo, a GPU's halo rows go
through pinned host buffers).

``halo.traffic`` counts the bytes sent per exchange; :func:`predicted_rows`
gives what the store's quality table predicts (rows per exchange and rank).
Named ``torchdist`` (not ``torch``): a folder called ``torch`` beside
``trainer/train.py`` would shadow PyTorch for ``python trainer/train.py``.
The names are imported on first use, so importing this package does not
import torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .block import EDGE_KINDS, HaloPlan, JobError, TorchBlock, batch_rows, open_block, predicted_rows
    from .checkpoint import CheckpointError, graph_identity, load, load_checkpoint, save, save_checkpoint
    from .graph import Graph, evaluate_whole, whole_block
    from .halo import Halo, Traffic
    from .launch import choose_backend, finish, init_from_env, local_device, run_main
    from .layers import GATConv, GCNConv, HaloConv, SAGEConv, gat_conv, gcn_conv, sage_conv
    from .loader import MiniBatches
    from .masks import Dropout, dropout, set_epoch
    from .objective import accuracy, global_sum, masked_loss, sync_gradients

_WHERE = {
    **dict.fromkeys(("EDGE_KINDS", "HaloPlan", "JobError", "TorchBlock", "batch_rows", "open_block", "predicted_rows"),
                    ".block"),
    **dict.fromkeys(("CheckpointError", "graph_identity", "load", "load_checkpoint", "save", "save_checkpoint"),
                    ".checkpoint"),
    **dict.fromkeys(("Dropout", "dropout", "set_epoch"), ".masks"),
    **dict.fromkeys(("Graph", "evaluate_whole", "whole_block"), ".graph"),
    **dict.fromkeys(("Halo", "Traffic"), ".halo"),
    **dict.fromkeys(("choose_backend", "finish", "init_from_env", "local_device", "run_main"), ".launch"),
    **dict.fromkeys(("GATConv", "GCNConv", "HaloConv", "SAGEConv", "gat_conv", "gcn_conv", "sage_conv"), ".layers"),
    "MiniBatches": ".loader",
    **dict.fromkeys(("accuracy", "global_sum", "masked_loss", "sync_gradients"), ".objective"),
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_WHERE[name], __name__), name)


def __dir__() -> list[str]:
    return sorted(_WHERE)


__all__ = ["EDGE_KINDS", "CheckpointError", "Dropout", "GATConv", "GCNConv", "Graph", "Halo", "HaloConv", "HaloPlan",
           "JobError", "MiniBatches", "SAGEConv", "TorchBlock", "Traffic", "accuracy", "batch_rows", "choose_backend",
           "dropout", "evaluate_whole", "finish", "gat_conv", "gcn_conv", "global_sum", "graph_identity",
           "init_from_env", "load", "load_checkpoint", "local_device", "masked_loss", "open_block", "predicted_rows",
           "run_main", "sage_conv", "save", "save_checkpoint", "set_epoch", "sync_gradients", "whole_block"]
