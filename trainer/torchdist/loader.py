"""Mini-batches of a store for a torch model (:class:`MiniBatches`): the
numpy trainer's batches (:mod:`shgcn.trainer.minibatch`), as torch blocks.

Batch ``(epoch, step)`` is drawn by the core sampler
(:mod:`shgcn.core.sample`, stream ``TRAIN``, batch number ``epoch * steps +
step``) from the seed alone, so every rank draws the same vertices whatever
the number of ranks; each rank then restricts its block to its share of the
batch (:meth:`shgcn.trainer.minibatch.MiniBatches.view`). A batch
(:class:`MiniBatch`) holds that share as a :class:`~.block.TorchBlock`
whose own rows are the batch's rows of this rank and whose halo is the batch
rows other ranks send for it (Â's rows restricted to the batch, with
GraphSAINT's normalisation when it is on), its plan, and ``batch.graph``
(a :class:`~.graph.Graph`, so a model's ``forward(x, graph)`` runs on a
batch as on a block)::

    loader = td.MiniBatches("stores/cora-p2.zarr", batch_size=512, sampler="node", seed=0)
    for epoch in range(epochs):
        for batch in loader.epoch(epoch):
            logits = model(batch.block.x, batch.graph)
            loss = batch.loss(logits)
            opt.zero_grad(); loss.backward(); td.sync_gradients(model.parameters()); opt.step()

The next batch is made on a helper thread (:class:`~shgcn.trainer.minibatch.PlanAhead`)
while the current one trains; the last batch of an epoch makes the next epoch's
first. Dropout keyed as the numpy trainer's: ``epoch=batch.key``.

The loader has a position, as a stateful ``DataLoader``: the batch after the
last one it handed out (:attr:`MiniBatches.position`). ``loader.epoch(e)``
starts there when ``e`` is the position's epoch (else at step 0), so a run
that restores it (:meth:`MiniBatches.load_state_dict`, or
:func:`~.checkpoint.load_checkpoint` with ``loader=``) and goes on from
``loader.position[0]`` trains, mid-epoch too, the batches the run that was not
stopped trained. A batch is a function of its number and the seed alone: the
position is all the state there is.

:meth:`MiniBatches.predicted_rows` gives what the store predicts a batch's
exchange moves (its hypergraph volume under the store's partition, from the
graph alone): every exchange of ``batch.graph`` sends ``sent[rank]`` rows
forward and returns ``recv[rank]`` rows' gradients backward.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np
import scipy.sparse as sp
import torch
import torch.nn.functional as F

from shgcn import store
from shgcn.core.errors import UserError
from shgcn.core.sample import SAMPLERS, TRAIN, SamplerConfig

from ..config import NORM_BATCHES_MAX
from ..minibatch import BatchSource, BatchView, PlanAhead
from ..minibatch import MiniBatches as Restrictor
from ..plan import comm_plan, full_local
from .block import HaloPlan, TorchBlock, _world, batch_rows, check_block_of, graph_pattern, open_block
from .graph import Graph
from .halo import Halo
from .objective import global_sum, masked_loss


@dataclass
class MiniBatch:
    """One batch's share of this rank.

    Attributes
    ----------
    epoch, step, key : the batch's epoch, step and number (``epoch * steps + step``: its sampler key and the
        key of its dropout masks)
    rows : (b,) int64 tensor, the batch's own rows as local ids of the rank's block (sorted)
    block : TorchBlock of the batch: ``n_own = b`` own rows, then the R batch rows received; its Â rows, x, y,
        masks and node ids are the batch's (``block.node_ids[:b]`` are the rows' original vertex ids)
    loss_weight : (b,) float32 tensor of GraphSAINT's loss weights N / C_v, or None (normalisation off)
    vertices : the batch's vertices over every rank
    train_total : training rows of the whole graph (all ranks): GraphSAINT's loss divides by it
    group : torch.distributed process group of ``graph``'s Halo (None: the default one)
    """

    epoch: int
    step: int
    key: int
    rows: Any
    block: TorchBlock
    loss_weight: Any
    vertices: int
    train_total: int
    group: Any = None
    _graph: Graph | None = field(default=None, repr=False)

    @property
    def graph(self) -> Graph:
        """The batch as a model's ``forward(x, graph)`` takes it: the batch block and a :class:`~.halo.Halo`
        over its plan (made on first use; several ranks need torch.distributed initialized)."""
        if self._graph is None:
            self._graph = Graph(self.block, Halo(self.block.plan, self.group))
        return self._graph

    def loss(self, logits: torch.Tensor) -> torch.Tensor:
        """This rank's share of the step's loss, as the numpy trainer's: with GraphSAINT's normalisation the
        batch's training rows' losses times ``loss_weight`` summed over ``train_total``; without, the mean over
        every rank's training rows of the batch (:func:`~.objective.masked_loss`). ``logits`` (b, C)."""
        b = self.block
        if self.loss_weight is None:
            return masked_loss(logits, b, b.train_mask)
        mask = b.train_mask.to(logits.device)
        y = b.y.to(logits.device)
        if b.multilabel:
            per_row = F.binary_cross_entropy_with_logits(logits[mask], y[mask], reduction="none").sum(1)
        else:
            per_row = F.cross_entropy(logits[mask], y[mask], reduction="none")
        weights = self.loss_weight.to(logits.device)[mask].to(per_row.dtype)
        return (per_row * weights).sum() / max(self.train_total, 1)


class MiniBatches:
    """The batches of one rank's block, epoch by epoch (see the module docstring). Made by every rank (its
    ``train_total`` is a sum over the ranks).

    Parameters
    ----------
    path : the store (a path or an open :class:`~shgcn.store.Store`)
    batch_size : target vertices per batch (exact for ``node``; see :mod:`shgcn.core.sample`)
    sampler : ``node``, ``edge`` or ``rw``
    seed : the sampler's seed (the numpy trainer's ``--seed``)
    steps : batches per epoch (None: ``ceil(n / batch_size)``, the numpy trainer's default)
    walk_length : the ``rw`` sampler's
    saint : GraphSAINT's normalisation (None: on for ``edge`` and ``rw``, as ``--saint auto``)
    norm_batches : batches pre-sampled for its counts (``--norm-batches``)
    block : this rank's :class:`~.block.TorchBlock` if already opened (None: :func:`~.block.open_block`)
    out_of_core : leave the block in the store (memory-mapped) and read each batch's rows from it, as
        ``shgcn-train --out-of-core`` (:mod:`shgcn.trainer.outofcore`): the same batches bit for bit; ``block``
        is then a :class:`MappedTorchBlock`
    rank, size : default torch.distributed's (one process when it is not initialized)
    device : where the batches' tensors go (None: the block's device)
    ahead : make the next batch on a helper thread while the current one trains
    group : the process group of the batches' Halo

    Attributes
    ----------
    block : the rank's whole block; ``steps``; ``train_total`` (training rows of all ranks)
    position : (epoch, step) of the next batch :meth:`epoch` and ``iter`` hand out
    """

    def __init__(self, path: str | Path | store.Store, *, batch_size: int, sampler: str = "node", seed: int = 0,
                 steps: int | None = None, walk_length: int = 2, saint: bool | None = None, norm_batches: int = 50,
                 block: TorchBlock | None = None, rank: int | None = None, size: int | None = None,
                 device: Any = None, ahead: bool = True, group: Any = None, out_of_core: bool = False):
        if sampler not in SAMPLERS:
            raise UserError(f"MiniBatches(sampler={sampler!r}): choose from {', '.join(SAMPLERS.names())}")
        if steps is not None and steps < 1 or not 1 <= norm_batches <= NORM_BATCHES_MAX:
            raise UserError(f"MiniBatches: steps ({steps}) and norm_batches ({norm_batches}) must be >= 1 (norm_batches "
                            f"at most {NORM_BATCHES_MAX:,})")
        s = path if isinstance(path, store.Store) else store.open_store(path)
        rank_given = rank is not None
        rank, size = _world(rank, size)
        n = int(s.attrs["n"])
        cfg = SamplerConfig(kind=sampler, size=int(batch_size), walk_length=walk_length, seed=seed)
        cfg.check(n)
        self.steps = int(steps) if steps is not None else -(-n // cfg.size)
        use_saint = SAMPLERS[sampler].saint if saint is None else bool(saint)
        self.block: Any
        if out_of_core:  # the block stays memory-mapped: every batch reads its rows (shgcn.trainer.outofcore)
            from .. import outofcore

            if size != s.parts:
                raise UserError(f"{s.path}: the store has {s.parts} parts but the job has {size} rank"
                                f"{'s' * (size != 1)}; run with mpirun -n {s.parts}")
            self.block = MappedTorchBlock(s, s.rank(rank), rank, size, device or "cpu")
            self._mb: Any = outofcore.batches(s, self.block.b, rank, cfg, steps=self.steps, saint=use_saint,
                                                  norm_batches=norm_batches)
            self._perm = s.permutation_mapped()
        else:
            if block is not None:
                check_block_of(s, block, rank if rank_given else None)
            self.block = block if block is not None else open_block(s, rank, size, device=device or "cpu")
            if device is not None:
                self.block = self.block.to(device)
            self._mb = Restrictor(_source(s, self.block.plan.rank, cfg), self.steps, use_saint, norm_batches)
            self._perm = np.asarray(s.permutation(), np.int64)
        self._store = s
        self._pattern: tuple[Any, np.ndarray] | None = None  # Â's pattern and the partition, read on first use
        # what a checkpoint's loader must match to resume here (the batches, not the ranks)
        self.config = {"n": n, "sampler": sampler, "batch_size": cfg.size, "seed": int(seed), "steps": self.steps,
                       "walk_length": int(walk_length), "normalisation": use_saint, "norm_batches": int(norm_batches)}
        self.train_total = int(global_sum(self.block.train_mask.sum().reshape(1))[0])
        self.group = group
        # PlanAhead runs ``.view(epoch, step)`` of what it is given, on its thread: here this loader's (a MiniBatch)
        self._plans = PlanAhead(self, threaded=ahead)  # type: ignore[arg-type]
        self._epoch, self._step = 0, 0

    def __len__(self) -> int:
        return self.steps

    @property
    def position(self) -> tuple[int, int]:
        """(epoch, step) of the next batch handed out: after batch (e, s), (e, s + 1), or (e + 1, 0) at the
        epoch's end."""
        return self._epoch, self._step

    def set_epoch(self, epoch: int) -> None:
        """Start ``iter(loader)`` at step 0 of ``epoch`` (as a DataLoader's sampler's ``set_epoch``)."""
        self.set_position(epoch, 0)

    def set_position(self, epoch: int, step: int = 0) -> None:
        """Hand out batch ``step`` of ``epoch`` next."""
        if int(epoch) < 0 or not 0 <= int(step) < self.steps:
            raise UserError(f"MiniBatches: position ({epoch}, {step}) is not an epoch >= 0 and a step in "
                            f"0..{self.steps - 1}")
        self._epoch, self._step = int(epoch), int(step)

    def __iter__(self) -> Iterator[MiniBatch]:
        return self.epoch(self._epoch)

    def epoch(self, epoch: int) -> Iterator[MiniBatch]:
        """The batches of ``epoch`` in order, from the position's step when ``epoch`` is the position's epoch
        (a resumed run), else from step 0; each next one (the next epoch's first, after the last) made ahead
        while the caller trains on this one."""
        if isinstance(epoch, bool) or not isinstance(epoch, (int, np.integer)) or epoch < 0:
            raise UserError(f"MiniBatches.epoch({epoch!r}): the epoch must be an integer >= 0")
        start = self._step if int(epoch) == self._epoch else 0
        self._epoch, self._step = int(epoch), start
        for step in range(start, self.steps):
            nxt = (epoch, step + 1) if step + 1 < self.steps else (epoch + 1, 0)
            self._plans.ahead(*nxt)
            batch = cast(MiniBatch, self._plans.get(epoch, step))
            self._epoch, self._step = nxt
            yield batch

    def state_dict(self) -> dict[str, Any]:
        """The position and the configuration of the batches (what :meth:`load_state_dict` takes)."""
        return {"epoch": self._epoch, "step": self._step, "config": dict(self.config)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Go on from a saved position; a loader of other batches (another sampler, size, seed, steps or graph
        size) is refused in one line (:class:`~shgcn.core.errors.UserError`); the number of ranks may differ."""
        if not isinstance(state, dict) or not {"epoch", "step", "config"} <= state.keys():
            raise UserError(f"MiniBatches.load_state_dict: {type(state).__name__} is not a loader's state_dict() "
                            "(a dict of epoch, step and config)")
        saved = dict(state.get("config", {}))
        if saved != self.config:
            diff = ", ".join(f"{k} {saved.get(k)} (here {v})" for k, v in self.config.items() if saved.get(k) != v)
            raise UserError(f"MiniBatches: the saved position is of other batches: {diff}")
        self.set_position(int(state["epoch"]), int(state["step"]))

    def predicted_rows(self, epoch: int, step: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """What the store predicts batch ``step`` of ``epoch`` moves per exchange, from the graph and the store's
        partition alone (:func:`~.block.batch_rows`): (sent rows (P,), received rows (P,), messages sent (P,))
        of every rank. The batch's ``graph.halo.traffic`` counts, per forward exchange of width d, ``4 d
        sent[rank]`` bytes, and per backward one ``4 d recv[rank]``."""
        if self._pattern is None:
            self._pattern = graph_pattern(self._store)
        pattern, part = self._pattern
        vertices = self._mb.sampler.batch(self._mb.batch_number(epoch, step), TRAIN)
        return batch_rows(pattern, part, self.block.plan.size, vertices)

    def batch(self, epoch: int, step: int) -> MiniBatch:
        """Batch ``step`` of ``epoch`` (made now, or taken from the helper thread if it made it)."""
        if not 0 <= step < self.steps:
            raise UserError(f"MiniBatches.batch: step {step} is not in 0..{self.steps - 1}")
        return cast(MiniBatch, self._plans.get(epoch, step))

    def view(self, epoch: int, step: int) -> MiniBatch:
        """The batch made from the numpy trainer's view of it (what the helper thread runs)."""
        v = self._mb.view(epoch, step)
        key = self._mb.batch_number(epoch, step)
        rows = torch.from_numpy(np.ascontiguousarray(v.rows, np.int64))
        weights = self._mb.loss_weight
        lw = torch.from_numpy(np.ascontiguousarray(weights[v.rows])) if weights is not None else None
        block = batch_block(self.block, v, self._perm)
        dev = self.block.device
        return MiniBatch(epoch, step, key, rows.to(dev), block, lw.to(dev) if lw is not None else None,
                         v.vertices, self.train_total, self.group)

    def close(self) -> None:
        """Stop the helper thread (a batch it is making is finished first)."""
        self._plans.close()

    def __enter__(self) -> MiniBatches:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _source(s: store.Store, rank: int, cfg: SamplerConfig) -> BatchSource:
    """What the numpy trainer restricts to each batch, for ``rank``'s block of ``s`` (as ``--mode minibatch``)."""
    n = int(s.attrs["n"])
    b = s.rank(rank, verify=False)
    cp = comm_plan(b.plan, rank, s.offsets)
    inverse = np.empty(n, np.int64)
    inverse[s.permutation()] = np.arange(n)
    tplan = b.transpose if b.transpose is not None else b.plan  # column j of Â for each own row j
    ids = np.concatenate([np.arange(b.offset, b.offset + b.n_own), np.asarray(tplan.recv_ids)])
    columns = sp.csr_matrix((np.ones(len(tplan.indices), np.int8), ids[np.asarray(tplan.indices)],
                             np.asarray(tplan.indptr)), shape=(b.n_own, n))
    return BatchSource(full=full_local(b.plan, cp), cp=cp, inverse=inverse, n=n, sampler=cfg,
                       adj=s.graph() if cfg.spec.needs_graph else None, columns=columns)


class _Counted:
    """A count that answers ``.sum().reshape(1)`` as a tensor's does (``train_total``'s global sum)."""

    def __init__(self, count: int):
        self.count = count

    def sum(self) -> Any:
        return torch.tensor([self.count], dtype=torch.int64)


class MappedTorchBlock:
    """A rank's block left in the store (``MiniBatches(..., out_of_core=True)``): what :func:`batch_block` takes
    of a :class:`~.block.TorchBlock` (``rows(own)``: the rows' x, y, masks and node ids as :func:`~.block.open_block`
    makes them, read from the memory-mapped store per batch), and the job's ``plan.rank`` and ``plan.size``."""

    def __init__(self, s: store.Store, b: store.RankBlock, rank: int, size: int, device: Any):
        from types import SimpleNamespace

        from .block import as_device

        self.b = b
        self.device = as_device(device)
        self.n, self.classes = int(s.attrs["n"]), int(s.attrs["classes"])
        self.directed, self.multilabel = bool(s.attrs["directed"]), s.attrs.get("label_kind") == "multi"
        self.plan = SimpleNamespace(rank=rank, size=size)
        count = 0
        for lo in range(0, b.n_own, 1 << 20):  # a loop over slices
            own = np.arange(lo, min(b.n_own, lo + (1 << 20)))
            count += int(np.count_nonzero(self._mask(b.train_mask, own)))
        store.release_pages(b.train_mask, b.labels)
        self.train_mask = _Counted(count)

    def _known(self, own: np.ndarray) -> np.ndarray:
        labels = np.asarray(self.b.labels[own])
        return np.asarray(labels.any(1) if self.multilabel else labels >= 0)

    def _mask(self, m: np.ndarray, own: np.ndarray) -> np.ndarray:
        return np.asarray(m[own], bool) & self._known(own)

    def rows(self, own: np.ndarray) -> dict[str, Any]:
        b = self.b
        labels = np.asarray(b.labels[own])
        return {"x": torch.from_numpy(np.asarray(b.features[own], np.float32)),
                "y": torch.from_numpy(labels.astype(np.float32) if self.multilabel else labels.astype(np.int64)),
                "train_mask": torch.from_numpy(self._mask(b.train_mask, own)),
                "val_mask": torch.from_numpy(self._mask(b.val_mask, own)),
                "test_mask": torch.from_numpy(self._mask(b.test_mask, own)),
                "node_ids": torch.from_numpy(np.asarray(b.node_index[own], np.int64))}


def batch_block(block: TorchBlock | MappedTorchBlock, v: BatchView, perm: np.ndarray) -> TorchBlock:
    """The batch view ``v`` of ``block`` as a TorchBlock on the block's device.

    Its Â rows are ``diag(v.left) [own | halo from each sender]`` (GraphSAINT's row scale when set), columns in
    local batch ids (own batch rows, then received rows by sender); ``perm`` (n,) maps global new ids to
    original vertex ids (the halo rows' node ids)."""
    cp = v.cp
    b = int(v.rows.size)
    n_halo = int(cp.recv_start[-1])
    parts = [v.lm.own] + [v.lm.halo[q] for q, _ in cp.recv_from]  # senders in rank order: the halo's order
    a = sp.hstack(parts, format="csr") if len(parts) > 1 else sp.csr_matrix(v.lm.own)
    a.sort_indices()
    values = np.asarray(a.data, np.float32)
    rows_of = np.repeat(np.arange(b, dtype=np.int64), np.diff(a.indptr))
    if v.left is not None:
        values = values * np.asarray(v.left, np.float32)[rows_of]
    plan = HaloPlan(cp.rank, cp.size, b, n_halo,
                    [(q, torch.from_numpy(np.ascontiguousarray(r, np.int64))) for q, r in cp.send_to],
                    [(q, int(cp.recv_start[q]), c) for q, c in cp.recv_from])
    dev = block.device
    halo_ids = torch.from_numpy(np.asarray(perm[np.asarray(v.halo_new, np.int64)], np.int64))
    if isinstance(block, MappedTorchBlock):  # read from the store, on the host, moved below with the rest
        mine = block.rows(np.asarray(v.rows, np.int64))
    else:
        own = torch.from_numpy(np.ascontiguousarray(v.rows, np.int64)).to(dev)
        mine = {"x": block.x[own], "y": block.y[own], "train_mask": block.train_mask[own],
                "val_mask": block.val_mask[own], "test_mask": block.test_mask[own], "node_ids": block.node_ids[own]}
        halo_ids = halo_ids.to(dev)
    node_ids = torch.cat([mine.pop("node_ids"), halo_ids])
    out = TorchBlock(
        plan=plan, rows=torch.from_numpy(rows_of), cols=torch.from_numpy(a.indices.astype(np.int64)),
        values=torch.from_numpy(values), node_ids=node_ids, n=block.n, classes=block.classes,
        directed=block.directed, multilabel=block.multilabel, **mine)
    return out if dev.type == "cpu" else out.to(dev)
