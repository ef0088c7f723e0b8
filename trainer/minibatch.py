"""One rank's share of a mini-batch: the plan, local matrix and node data
restricted to the batch, derived from the full-batch ones with masks.

Every rank re-draws batch (epoch, step) from the shared sampler (stream
``TRAIN``), so all ranks know every batch vertex. Row j goes from its owner
r to rank q in a batch exactly when j is in the batch and some batch row of
q has a nonzero in column j. The receiver sees that in its own rows; the
sender sees it in column j of Â, which it holds: its own row j when Â is
symmetric, its row j of the stored Â^T block when Â is directed. Both sides
filter the same ordered lists of the full plan with the same rule, so the
messages line up without any index exchange. Ids are renumbered compactly
over the batch (new ids in order), which keeps the contiguous per-rank
ranges that ``bcast`` needs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from shgcn.store.sample import NORM, TRAIN, Sampler, SamplerConfig

from .plan import CommPlan, LocalMatrix, split_local


@dataclass
class BatchView:
    """Attributes: rows (b,) own local row ids in the batch; cp, lm: the
    restricted plan and matrix; vertices: the batch size (all ranks)."""

    rows: np.ndarray
    cp: CommPlan
    lm: LocalMatrix
    vertices: int


class MiniBatches:
    """Re-draws batches and restricts a rank's plan to them.

    Parameters
    ----------
    full : (n_own, n_own + R) csr_matrix, the rank's local rows of Â
    cp : CommPlan, the full-batch plan
    inverse : (n,) int64, original vertex index -> new id
    adj : csr_matrix or None, the graph the sampler walks on (edge, rw)
    saint : bool, apply GraphSAINT's aggregator normalization
    norm_batches : int, batches pre-sampled for the normalization counts
    """

    def __init__(self, full: sp.csr_matrix, cp: CommPlan, inverse: np.ndarray, n: int, scfg: SamplerConfig,
                 adj: sp.csr_matrix | None, steps: int, saint: bool, norm_batches: int, columns: sp.csr_matrix):
        self.full, self.cp, self.inverse, self.n = full, cp, inverse, n
        self._entries(columns)
        self.steps = steps
        graph = adj if adj is not None else sp.csr_matrix((n, n), dtype=np.float32)
        self.sampler = Sampler(graph, scfg)
        self.lo = int(cp.offsets[cp.rank])
        self.n_own = full.shape[0]
        self._row_of_nnz = np.repeat(np.arange(self.n_own), np.diff(full.indptr))
        self._sender = np.repeat(np.arange(cp.size), np.diff(cp.recv_start))  # of each received row
        self.saint = saint
        self.loss_weight = None
        self.edge_scale = None
        if saint:
            self.loss_weight, self.edge_scale = self._saint_norm(norm_batches)

    def _entries(self, columns: sp.csr_matrix) -> None:
        """For every send entry (q, j), the rows of rank q with a nonzero in
        column j (global new ids), from ``columns``: (n_own, n) csr whose row j
        is column j of Â."""
        qs = np.concatenate([np.full(r.size, q) for q, r in self.cp.send_to] or [np.zeros(0, np.int64)])
        js = np.concatenate([r for _, r in self.cp.send_to] or [np.zeros(0, np.int64)]).astype(np.int64)
        ptr = columns.indptr
        lengths = ptr[js + 1] - ptr[js]
        pos = np.repeat(ptr[js] - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths) + np.arange(lengths.sum())
        cols = columns.indices[pos].astype(np.int64)
        entry = np.repeat(np.arange(js.size), lengths)
        dest = qs[entry]
        keep = (cols >= self.cp.offsets[dest]) & (cols < self.cp.offsets[dest + 1])
        self._ent_j = js + self.cp.offsets[self.cp.rank]  # global new id of the row sent
        self._ent_of_pin, self._ent_pins = entry[keep], cols[keep]
        self._ent_start = np.concatenate([[0], np.cumsum([r.size for _, r in self.cp.send_to])]).astype(np.int64)

    def _mask(self, k: int, stream: int) -> np.ndarray:
        in_batch = np.zeros(self.n, bool)
        in_batch[self.inverse[self.sampler.batch(k, stream)]] = True
        return in_batch

    def _masks(self, in_batch: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        own = in_batch[self.lo:self.lo + self.n_own]
        return own, np.concatenate([own, in_batch[self.cp.recv_ids]])

    def _saint_norm(self, batches: int) -> tuple[np.ndarray, np.ndarray]:
        """Per own row: loss weight N / C_v; per local nonzero (v, u): the
        aggregator scale C_v / C_uv (0 where the pair was never sampled)."""
        cv = np.zeros(self.n_own, np.int64)
        cuv = np.zeros(self.full.nnz, np.int64)
        for k in range(batches):  # a loop over batches, vectorized inside
            own, cols = self._masks(self._mask(k, NORM))
            cv += own
            cuv += own[self._row_of_nnz] & cols[self.full.indices]
        with np.errstate(divide="ignore", invalid="ignore"):
            loss_w = np.where(cv > 0, batches / np.maximum(cv, 1), 0.0)
            scale = np.where(cuv > 0, cv[self._row_of_nnz] / np.maximum(cuv, 1), 0.0)
        return loss_w.astype(np.float32), scale.astype(np.float32)

    def batch_number(self, epoch: int, step: int) -> int:
        return epoch * self.steps + step

    def view(self, epoch: int, step: int) -> BatchView:
        in_batch = self._mask(self.batch_number(epoch, step), TRAIN)
        own, cols = self._masks(in_batch)
        rows = np.flatnonzero(own)
        compact = np.cumsum(in_batch) - 1  # new id -> position among batch vertices
        offsets = np.concatenate([[0], np.cumsum(in_batch)])[self.cp.offsets]
        pos_own = np.cumsum(own) - 1
        # sender: entry (q, j) is live when j and one of its rows in q are in the batch
        live = np.bincount(self._ent_of_pin[in_batch[self._ent_pins]], minlength=self._ent_j.size) > 0
        live &= in_batch[self._ent_j]
        send_to = []
        for i, (q, r) in enumerate(self.cp.send_to):  # a loop over neighbour ranks
            sel = r[live[self._ent_start[i]:self._ent_start[i + 1]]]
            if sel.size:
                send_to.append((q, pos_own[sel]))
        # receiver: halo column c is needed when c is in the batch and a batch row has a nonzero in it
        sub = self.full[rows]
        used = np.zeros(self.full.shape[1], bool)
        used[sub.indices] = True
        recv_in = in_batch[self.cp.recv_ids] & used[self.n_own:]
        cols = np.concatenate([own, recv_in])
        counts = np.bincount(self._sender[recv_in], minlength=self.cp.size)
        recv_start = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        recv_from = [(q, int(counts[q])) for q in range(self.cp.size) if q != self.cp.rank and counts[q] > 0]
        cp = CommPlan(self.cp.rank, self.cp.size, offsets.astype(np.int64), send_to, recv_from, recv_start,
                      compact[self.cp.recv_ids[recv_in]].astype(np.int64))
        if self.edge_scale is not None:
            sub = sp.csr_matrix((sub.data * self.edge_scale[self._nnz_of_rows(rows)], sub.indices, sub.indptr),
                                shape=sub.shape)
        sub = sub[:, np.flatnonzero(cols)].tocsr()
        return BatchView(rows=rows, cp=cp, lm=split_local(sub, cp), vertices=int(in_batch.sum()))

    def _nnz_of_rows(self, rows: np.ndarray) -> np.ndarray:
        ptr = self.full.indptr
        lengths = ptr[rows + 1] - ptr[rows]
        starts = np.repeat(ptr[rows] - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths)
        return starts + np.arange(int(lengths.sum()))
