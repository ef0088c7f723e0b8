"""The graph a model runs on, given to its ``forward`` (:class:`Graph`):
one rank's block with its halo exchange, or the whole graph in one process
(:func:`whole_block`), so that one model object trains distributed and is
evaluated on the whole graph (:func:`evaluate_whole`), PyG's convention of
``forward(x, edge_index)``.

A layer asks the graph for its input rows (:meth:`Graph.exchange`: own rows
``(n_own, d)`` in, own rows then received rows ``(n_own + R, d)`` out) and
its edges (:meth:`Graph.edges`, :meth:`Graph.adjacency`), and gives
``n_own`` output rows. On the whole graph ``n_own`` is every vertex, in
original order, and nothing is exchanged.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from shgcn import store

from .block import HaloPlan, TorchBlock, as_device, open_block
from .halo import Halo
from .objective import accuracy, masked_loss


class Graph:
    """A block and its exchange, as a layer's ``forward`` takes them (see the module docstring).

    Parameters
    ----------
    block : a rank's :class:`~.block.TorchBlock` (:func:`~.block.open_block`) or the whole graph's
        (:func:`whole_block`)
    halo : its :class:`~.halo.Halo` (None: a new one over ``group``; a one-rank block needs none)
    group : torch.distributed process group of the new Halo (None: the default one)

    Attributes
    ----------
    block, halo : as given; ``halo.traffic`` counts the bytes of every exchange
    n_own, n_local : output rows, input rows (own plus received) of a layer
    node_ids : (n_local,) int64 original vertex ids of the input rows (the dropout masks' keys)
    """

    def __init__(self, block: TorchBlock, halo: Halo | None = None, group: Any = None):
        self.block = block
        self.halo = halo if halo is not None else Halo(block.plan, group)
        self._edges: dict[str, tuple[torch.Tensor, torch.Tensor | None]] = {}
        self._adjacency: torch.Tensor | None = None

    @property
    def n_own(self) -> int:
        return self.block.n_own

    @property
    def n_local(self) -> int:
        return self.block.n_local

    @property
    def node_ids(self) -> torch.Tensor:
        return self.block.node_ids

    @property
    def device(self) -> torch.device:
        return self.block.device

    def exchange(self, x: torch.Tensor) -> torch.Tensor:
        """(n_own, d) own rows in, (n_own + R, d) own then received rows out (differentiable; ``x`` itself when
        the block spans one rank)."""
        if self.block.plan.size == 1 and self.block.plan.n_halo == 0:
            if x.shape[0] != self.n_own:
                raise ValueError(f"Graph.exchange: {x.shape[0]} rows given, the graph has {self.n_own}")
            return x
        return self.halo(x)

    def edges(self, kind: str = "norm") -> tuple[torch.Tensor, torch.Tensor | None]:
        """PyG's ``(edge_index, edge_weight)`` of kind ``norm``, ``pattern`` or ``attention``
        (:meth:`~.block.TorchBlock.edges`), made once per kind."""
        if kind not in self._edges:
            self._edges[kind] = self.block.edges(kind)
        return self._edges[kind]

    def adjacency(self) -> torch.Tensor:
        """(n_own, n_local) sparse CSR Â (:meth:`~.block.TorchBlock.adjacency`), made once."""
        if self._adjacency is None:
            self._adjacency = self.block.adjacency()
        return self._adjacency

    def to(self, device: Any) -> Graph:
        """The graph with its block on ``device`` (a new Graph sharing this one's Halo and its traffic)."""
        return Graph(self.block.to(device), self.halo)


def whole_block(path: str | Path | store.Store, device: Any = "cpu", verify: bool = True) -> TorchBlock:
    """The whole graph of the store at ``path`` as a one-rank :class:`~.block.TorchBlock` in original vertex
    order (row ``v`` is vertex ``v``; Â's nonzeros in CSR order), whatever the store's number of ranks: its
    blocks read one at a time, every rank's rows put in place. Its sums (:func:`~.objective.masked_loss`,
    :func:`~.objective.accuracy`) are its own, so one rank of a job can evaluate it alone."""
    dev = as_device(device)
    s = path if isinstance(path, store.Store) else store.open_store(path)
    n = int(s.attrs["n"])
    rows, cols, values, own, pieces = [], [], [], [], []
    for r in range(s.parts):
        b = open_block(s, r, s.parts, verify=verify)
        rows.append(b.node_ids[b.rows])
        cols.append(b.node_ids[b.cols])
        values.append(b.values)
        own.append(b.node_ids[: b.n_own])
        pieces.append(b)
    rows_, cols_ = torch.cat(rows), torch.cat(cols)
    order = torch.from_numpy(np.lexsort((cols_.numpy(), rows_.numpy())))
    where = torch.cat(own)

    def place(name: str) -> torch.Tensor:
        part = torch.cat([getattr(b, name) for b in pieces])
        out = part.new_zeros((n, *part.shape[1:]))
        out[where] = part
        return out

    first = pieces[0]
    block = TorchBlock(
        plan=HaloPlan(0, 1, n, 0, [], []), rows=rows_[order], cols=cols_[order], values=torch.cat(values)[order],
        x=place("x"), y=place("y"), train_mask=place("train_mask"), val_mask=place("val_mask"),
        test_mask=place("test_mask"), node_ids=torch.arange(n, dtype=torch.int64), n=n, classes=first.classes,
        directed=first.directed, multilabel=first.multilabel)
    return block if dev.type == "cpu" else block.to(dev)


def evaluate_whole(model: torch.nn.Module, path: str | Path | store.Store | TorchBlock, device: Any = None,
                   verify: bool = True) -> dict[str, float]:
    """``model`` (a module whose ``forward(x, graph)`` takes a :class:`Graph`) evaluated on the whole graph in
    this process: {"loss": the training rows' mean loss, "train_acc", "val_acc", "test_acc"}.

    ``path``: a store (any number of ranks) or a block from :func:`whole_block`; ``device``: where to compute
    (None: the model's parameters' device). The model is put in ``eval()`` mode and back; no gradient.
    No collective runs: one rank of a distributed job may call it alone."""
    if device is None:
        device = next((p.device for p in model.parameters()), torch.device("cpu"))
    block = path.to(device) if isinstance(path, TorchBlock) else whole_block(path, device, verify)
    graph = Graph(block)
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            out = model(block.x, graph)
    finally:
        model.train(was_training)
    return {"loss": float(masked_loss(out, block, block.train_mask)),
            **{f"{m}_acc": accuracy(out, block, getattr(block, f"{m}_mask")) for m in ("train", "val", "test")}}
