"""Mini-batch training out of core (``--mode minibatch --out-of-core``): a rank holds the batch, not its block.

The block's arrays (Â's rows and its transposed rows, the features, labels, masks and vertex ids) stay
memory-mapped views of the store's chunk files (their pages in the page cache, not in the rank's anonymous
memory). Each step gathers the batch's rows from them, vectorized (:func:`shgcn.core.csr.segments`: the
batch rows' CSR segments by ``np.repeat`` and ``cumsum``, no loop over vertices), and restricts them to the
batch: the same plan, local matrix and node data, bit for bit, as :class:`shgcn.trainer.minibatch.MiniBatches`
derives from the whole block in memory (tested), in O(what the batch's rows touch) memory:

- the receiver's side: the batch rows' nonzeros (``indptr[rows]`` segments of ``indices`` and ``data``) whose
  column (own, or ``recv_ids`` of the halo) is in the batch (a ``searchsorted`` on the sorted batch);
- the sender's side: the batch rows' rows of Â^T (Â itself when symmetric): own row j goes to rank q when a
  pin of column j in q's range is in the batch; the stored send lists are sorted by row, so the lists come out
  in their stored order without reading them;
- the node data of the batch's rows (:class:`MappedRows`, :class:`MappedFeatures`, :class:`MappedMask`).

What the whole graph or block needs once is written to file-backed scratch arrays (:class:`Scratch`, under
``TMPDIR``; page cache, not anonymous memory): the inverse permutation (original id -> new id: (n,) int64),
and for the edge and rw samplers the input graph's row pointer ((n + 1,) int64) and the edge sampler's
cumulative weights ((E,) float64, summed in order, so the draws are the in-memory sampler's bit for bit);
GraphSAINT's counts and scales ((n_own,) and (nnz,)). The samplers then read the memory-mapped graph on each
draw: the edge sampler a binary search per drawn edge in the cumulative weights (and one in the row pointer
for its row), the rw sampler two row-pointer reads and one indices read per walk step, each a page of the
store or the scratch that may have to come from disk when the page cache does not hold it.

Evaluation: the in-memory mini-batch evaluates on the whole graph (a full-batch forward, whose activations
are the block's). Out of core it evaluates on k = ceil(n / B) fixed batches that cover every vertex once
(batch j: the new ids ``v`` with ``v % k == j``), each the subgraph induced on its vertices as a training batch's,
so the validation and test accuracy are a mini-batch estimate, not the full graph's: that is why out of core is
an option and not the default (the training losses are the same, bit for bit on the numpy backend).
"""


from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from shgcn import store
from shgcn.core.csr import segments
from shgcn.core.memory import batch_fan_in, outofcore_bytes
from shgcn.core.sample import NORM, TRAIN, Sampler, SamplerConfig

from . import mapped
from .mapped import MappedSampler, Scratch, inverse_permutation, member
from .minibatch import BatchView, _csr, _halo_blocks
from .plan import CommPlan, LocalMatrix


@dataclass(frozen=True)
class MappedBlock:
    """A rank's block as the out-of-core batches read it: Â's rows (``indptr``, ``indices``, ``data``, the halo's
    global ids ``recv_ids`` and its senders' ``recv_ptr``) and Â^T's (``t_indptr``, ``t_indices``,
    ``t_recv_ids``; Â's own when symmetric), memory-mapped; ``lo``, ``n_own``; the job's ``offsets``."""

    lo: int
    n_own: int
    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    recv_ids: np.ndarray
    recv_ptr: np.ndarray
    t_indptr: np.ndarray
    t_indices: np.ndarray
    t_recv_ids: np.ndarray
    offsets: np.ndarray
    rank: int

    @classmethod
    def of(cls, block: store.RankBlock, offsets: np.ndarray, rank: int) -> MappedBlock:
        p = block.plan
        t = block.transpose if block.transpose is not None else p
        return cls(block.offset, block.n_own, p.indptr, p.indices, p.data, p.recv_ids,
                   np.asarray(p.recv_ptr, np.int64), t.indptr, t.indices, t.recv_ids, np.asarray(offsets, np.int64),
                   rank)

    @property
    def nnz(self) -> int:
        return int(self.indptr[-1])

    def gids(self, cols: np.ndarray, recv_ids: np.ndarray) -> np.ndarray:
        """Global new ids of local columns ``cols`` (own, then the halo's ``recv_ids``)."""
        g = cols + self.lo
        halo = cols >= self.n_own
        g[halo] = recv_ids[cols[halo] - self.n_own]
        return g


class OutOfCoreBatches:
    """:class:`shgcn.trainer.minibatch.MiniBatches`'s batches from a memory-mapped block (same interface:
    ``steps``, ``sampler``, ``loss_weight``, ``batch_number``, ``view``; and ``view_of`` any sorted batch)."""

    def __init__(self, blk: MappedBlock, sampler: Sampler, inverse: np.ndarray, scratch: Scratch, *, steps: int,
                 saint: bool, norm_batches: int):
        self.blk, self.sampler, self.inverse, self.n = blk, sampler, inverse, sampler.n
        self.steps, self.saint, self.scratch = steps, saint, scratch
        self.size = int(blk.offsets.size - 1)
        self.loss_weight: Any = None
        self.row_scale: Any = None
        self.edge_scale: Any = None
        if saint:
            self._saint_norm(norm_batches)

    def batch_number(self, epoch: int, step: int) -> int:
        return epoch * self.steps + step

    def fan_in(self, indptr: np.ndarray) -> float:
        """The expected nonzeros of a batch row of the CSR rows ``indptr`` (read in slices)."""
        total, squares = int(indptr[-1]), 0.0
        for lo in range(0, self.blk.n_own, mapped.CHUNK):  # a loop over slices
            d = np.diff(np.asarray(indptr[lo:lo + mapped.CHUNK + 1])).astype(np.float64)
            squares += float((d * d).sum())
        cfg = self.sampler.cfg
        return batch_fan_in(self.blk.n_own, total, squares, cfg.kind, cfg.walk_length)

    def memory(self, job) -> int:
        """This rank's modelled bytes beyond the page cache and the model (:func:`shgcn.core.memory.outofcore_bytes`)."""
        blk = self.blk
        share = blk.n_own / max(self.n, 1)
        return outofcore_bytes(job, self.sampler.cfg.size, share, self.fan_in(blk.indptr), self.fan_in(blk.t_indptr),
                               self.size)

    def batch(self, k: int, stream: int) -> np.ndarray:
        """(b,) int64 sorted new ids of batch ``k`` of ``stream``."""
        return np.sort(np.asarray(self.inverse[self.sampler.batch(k, stream)], np.int64))

    def _kept(self, batch: np.ndarray, rows: np.ndarray):
        """The batch rows' nonzeros whose column is in the batch: (positions in the block's arrays, row index
        into ``rows``, local column)."""
        blk = self.blk
        pos, r = segments(blk.indptr, rows)
        c = np.asarray(blk.indices[pos], np.int64)
        keep = member(batch, blk.gids(c, blk.recv_ids))
        return pos[keep], r[keep], c[keep]

    def _own_rows(self, batch: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        offsets = np.searchsorted(batch, self.blk.offsets).astype(np.int64)
        return offsets, batch[offsets[self.blk.rank]:offsets[self.blk.rank + 1]] - self.blk.lo

    def _saint_norm(self, batches: int) -> None:
        """:meth:`MiniBatches._saint_norm`'s counts and scales, counted batch by batch over the nonzeros each
        touches, into scratch arrays."""
        blk, sc = self.blk, self.scratch
        cv = sc.array("saint_cv", (blk.n_own,), np.int64)
        cuv = sc.array("saint_cuv", (blk.nnz,), np.int64)
        for k in range(batches):  # a loop over batches, vectorized inside
            batch = self.batch(k, NORM)
            _, rows = self._own_rows(batch)
            cv[rows] += 1
            pos, _, _ = self._kept(batch, rows)
            cuv[pos] += 1  # positions are distinct
        self.loss_weight = sc.array("saint_loss_weight", (blk.n_own,), np.float32)
        self.row_scale = sc.array("saint_row_scale", (blk.n_own,), np.float32)
        self.edge_scale = sc.array("saint_edge_scale", (blk.nnz,), np.float32)
        with np.errstate(divide="ignore", invalid="ignore"):
            for lo in range(0, blk.n_own, mapped.CHUNK):  # a loop over slices
                c = np.asarray(cv[lo:lo + mapped.CHUNK])
                self.loss_weight[lo:lo + mapped.CHUNK] = np.where(c > 0, batches / np.maximum(c, 1), 0.0).astype(np.float32)
                self.row_scale[lo:lo + mapped.CHUNK] = c.astype(np.float32)
            for lo in range(0, blk.nnz, mapped.CHUNK):  # a loop over slices
                c = np.asarray(cuv[lo:lo + mapped.CHUNK])
                self.edge_scale[lo:lo + mapped.CHUNK] = np.where(c > 0, 1.0 / np.maximum(c, 1), 0.0).astype(np.float32)

    def view(self, epoch: int, step: int) -> BatchView:
        return self.view_of(self.batch(self.batch_number(epoch, step), TRAIN))

    def view_of(self, batch: np.ndarray, normalized: bool = True) -> BatchView:
        """The sorted batch ``batch`` (global new ids) restricted to this rank, as :meth:`MiniBatches.view`
        (``normalized``: with GraphSAINT's scales when they are on)."""
        blk, size, rank = self.blk, self.size, self.blk.rank
        offsets, rows = self._own_rows(batch)
        b_own = rows.size
        send_to = self._send_lists(batch, rows)
        pos, r, c = self._kept(batch, rows)
        halo = c >= blk.n_own
        used, halo_pos = np.unique(c[halo] - blk.n_own, return_inverse=True)  # received rows, in halo order
        sender = np.searchsorted(blk.recv_ptr, used, side="right") - 1
        counts = np.bincount(sender, minlength=size)
        recv_start = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        recv_from = [(q, int(counts[q])) for q in range(size) if q != rank and counts[q] > 0]
        halo_new = np.asarray(blk.recv_ids[used], np.int64)
        bcp = CommPlan(rank, size, offsets, send_to, recv_from, recv_start,
                       np.searchsorted(batch, halo_new).astype(np.int64), batch=batch)
        new_col = np.empty(c.size, np.int64)
        new_col[~halo] = np.searchsorted(rows, c[~halo])
        new_col[halo] = halo_pos.reshape(-1)
        vals = np.asarray(blk.data[pos])
        if self.edge_scale is not None and normalized:
            vals = vals * np.asarray(self.edge_scale[pos])
        lm = LocalMatrix(own=_csr(r[~halo], new_col[~halo], vals[~halo], (b_own, b_own)),
                         halo=_halo_blocks((r[halo], new_col[halo], vals[halo]), recv_start, recv_from, b_own))
        left = np.asarray(self.row_scale[rows]) if self.row_scale is not None and normalized else None
        return BatchView(rows=rows, cp=bcp, lm=lm, vertices=int(offsets[-1]), halo_new=halo_new, left=left)

    def _send_lists(self, batch: np.ndarray, rows: np.ndarray) -> list[tuple[int, np.ndarray]]:
        """Positions among ``rows`` to send per neighbour q: own row j when a pin of column j (a nonzero of
        row j of Â^T) owned by q is in the batch; ascending, as the stored (sorted) send lists filtered."""
        blk = self.blk
        if rows.size == 0:
            return []
        pos, j = segments(blk.t_indptr, rows)
        g = blk.gids(np.asarray(blk.t_indices[pos], np.int64), blk.t_recv_ids)
        live = member(batch, g)
        q = np.searchsorted(blk.offsets, g[live], side="right") - 1
        other = q != blk.rank
        keys = np.unique(q[other] * rows.size + j[live][other])
        qs, at = keys // rows.size, keys % rows.size
        cuts = np.searchsorted(qs, np.arange(self.size + 1))
        return [(q_, at[cuts[q_]:cuts[q_ + 1]]) for q_ in range(self.size) if cuts[q_ + 1] > cuts[q_]]

    def eval_counts(self, ctx) -> np.ndarray:
        """The validation and test counts of ``ctx``'s model (a :class:`~.context.BatchContext`) summed over
        :meth:`eval_batches`, each the subgraph induced on its vertices (GraphSAINT's normalization off): no
        step holds the block."""
        d, t, ex = ctx.data, ctx.targets, ctx.exchange
        counts = np.zeros(2 * t.width)
        for batch in self.eval_batches():  # a loop over batches, the same on every rank
            v = self.view_of(batch, normalized=False)
            rows = v.rows
            with ex.using(v.cp):
                logits, _ = ctx.model.forward(d.x[rows], ctx.batch_graph(v), None)
            labels = d.labels[rows]
            counts += np.concatenate([t.counts(logits, labels, d.val[rows]), t.counts(logits, labels, d.test[rows])])
        return counts

    def eval_batches(self) -> Iterator[np.ndarray]:
        """The evaluation's batches: k = ceil(n / B) of them for batches of B vertices, batch j the new ids
        ``v % k == j`` (each vertex once, each batch about B vertices whatever the steps of an epoch)."""
        k = max(1, -(-self.n // max(self.sampler.cfg.size, 1)))
        for j in range(k):  # a loop over batches
            yield np.arange(j, self.n, k, dtype=np.int64)


def batches(s: store.Store, block: store.RankBlock, rank: int, cfg: SamplerConfig, *, steps: int, saint: bool,
            norm_batches: int, verify: bool = True, scratch: Scratch | None = None) -> OutOfCoreBatches:
    """The out-of-core batches of ``block`` (block row ``rank``) of ``s``."""
    sc = scratch or Scratch()
    return OutOfCoreBatches(MappedBlock.of(block, s.offsets, rank), MappedSampler(s, cfg, sc, verify),
                            inverse_permutation(s, sc), sc, steps=steps, saint=saint, norm_batches=norm_batches)
