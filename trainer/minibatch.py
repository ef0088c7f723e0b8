"""One rank's share of a mini-batch: the plan, local matrix and node data
restricted to the batch, derived from the full-batch ones.

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

A step's plan costs O(what the batch touches), not O(n): the batch's own
rows select their nonzeros and their send entries through CSR indexes built
once (:func:`segments`), so the per-step work shrinks with the rank's share
of the batch as ranks are added.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

import numba
import numpy as np
import scipy.sparse as sp

from shgcn.core.csr import segments
from shgcn.core.sample import NORM, TRAIN, Sampler, SamplerConfig

from .plan import CommPlan, LocalMatrix


@dataclass
class BatchView:
    """Attributes: rows (b,) own local row ids in the batch; cp, lm: the
    restricted plan and matrix; vertices: the batch size (all ranks);
    halo_new (R,) global new ids of the received columns; left (b,) the row
    scale of GraphSAINT's aggregator normalization, or None."""

    rows: np.ndarray
    cp: CommPlan
    lm: LocalMatrix
    vertices: int
    halo_new: np.ndarray
    left: np.ndarray | None = None


@numba.njit(cache=True, nogil=True)
def batch_entries(indptr, indices, rows, gcol, in_batch):
    """The nonzeros of CSR rows ``rows`` (in order) whose column is in the batch: (positions into ``indices``,
    the index into ``rows`` of each), in row order, positions ascending within a row: what
    ``segments(indptr, rows)`` filtered by ``in_batch[gcol[indices[pos]]]`` gives, in one pass over the
    rows' nonzeros instead of a pass per numpy operation and (nnz,) temporaries (issue 59: the plan's largest
    part, ~1/4 of a soc-slashdot0902 batch's row entries kept)."""
    total = 0
    for i in range(rows.size):
        total += indptr[rows[i] + 1] - indptr[rows[i]]
    pos = np.empty(total, np.int64)
    seg = np.empty(total, np.int64)
    k = 0
    for i in range(rows.size):
        for p in range(indptr[rows[i]], indptr[rows[i] + 1]):
            if in_batch[gcol[indices[p]]]:
                pos[k] = p
                seg[k] = i
                k += 1
    pos = pos[:k].copy()
    seg = seg[:k].copy()
    return pos, seg


@numba.njit(cache=True, nogil=True)
def live_entries(row_ptr, row_ent, pin_ptr, pins, rows, in_batch, n_entries):
    """(n_entries,) bool: the send entries of own rows ``rows`` (entries of row j:
    ``row_ent[row_ptr[j]:row_ptr[j + 1]]``) with a pin in the batch (pins of entry e:
    ``pins[pin_ptr[e]:pin_ptr[e + 1]]``, global new ids), in one pass over the batch rows' entries and their
    pins, stopping at an entry's first pin in the batch (what two ``segments`` and their (pins,) temporaries did)."""
    live = np.zeros(n_entries, np.bool_)
    for i in range(rows.size):
        for k in range(row_ptr[rows[i]], row_ptr[rows[i] + 1]):
            e = row_ent[k]
            for p in range(pin_ptr[e], pin_ptr[e + 1]):
                if in_batch[pins[p]]:
                    live[e] = True
                    break
    return live


def _csr(rows: np.ndarray, cols: np.ndarray, vals: np.ndarray, shape: tuple[int, int]) -> sp.csr_matrix:
    """CSR from entries already in row order; int32 indices where they fit (scipy's own choice: given int64
    ones, it scans them and copies them to int32 on every batch)."""
    idx = np.int32 if max(shape[1], rows.size) < 2**31 else np.int64
    indptr = np.zeros(shape[0] + 1, idx)
    np.cumsum(np.bincount(rows, minlength=shape[0]), out=indptr[1:])
    return sp.csr_matrix((vals, cols.astype(idx, copy=False), indptr), shape=shape)


@dataclass(frozen=True)
class BatchSource:
    """What a rank restricts to each batch.

    Attributes
    ----------
    full : (n_own, n_own + R) csr_matrix, the rank's local rows of Â
    cp : CommPlan, the full-batch plan
    inverse : (n,) int64, original vertex index -> new id
    n : vertices of the graph
    sampler : the sampler's configuration (kind, size, walk length, seed)
    adj : csr_matrix or None, the graph the sampler walks on (edge, rw)
    columns : (n_own, n) csr_matrix whose row j is column j of Â (global new ids)
    """

    full: sp.csr_matrix
    cp: CommPlan
    inverse: np.ndarray
    n: int
    sampler: SamplerConfig
    adj: sp.csr_matrix | None
    columns: sp.csr_matrix


def _halo_blocks(entries: tuple[np.ndarray, np.ndarray, np.ndarray], recv_start: np.ndarray,
                 recv_from: list[tuple[int, int]], b_own: int) -> dict[int, sp.csr_matrix]:
    """The batch's received columns split by sender: ``entries`` (rows, halo positions, values) in row order."""
    r, col, vals = entries
    out = {}
    for q, _ in recv_from:  # a loop over neighbour ranks
        lo, hi = recv_start[q], recv_start[q + 1]
        m = (col >= lo) & (col < hi)
        out[q] = _csr(r[m], col[m] - lo, vals[m], (b_own, int(hi - lo)))
    return out


class MiniBatches:
    """Re-draws batches and restricts a rank's plan to them.

    Parameters
    ----------
    src : what to restrict (:class:`BatchSource`)
    steps : batches per epoch
    saint : bool, apply GraphSAINT's aggregator normalization
    norm_batches : int, batches pre-sampled for the normalization counts
    """

    def __init__(self, src: BatchSource, steps: int, saint: bool, norm_batches: int):
        full, cp, n = src.full, src.cp, src.n
        self.full, self.cp, self.inverse, self.n = full, cp, src.inverse, n
        self.steps = steps
        columns = src.columns
        graph = src.adj if src.adj is not None else sp.csr_matrix((n, n), dtype=np.float32)
        self.sampler = Sampler(graph, src.sampler)
        self.lo = int(cp.offsets[cp.rank])
        self.n_own = full.shape[0]
        self._indptr = full.indptr.astype(np.int64)
        self._indices = full.indices  # as stored (int32 below 2^31 columns): batch_entries reads it every step
        self._row_of_nnz = np.repeat(np.arange(self.n_own), np.diff(full.indptr))
        self._sender = np.repeat(np.arange(cp.size), np.diff(cp.recv_start))  # of each received row
        # local column -> global new id (own rows first, then the halo)
        self._gcol = np.concatenate([np.arange(self.lo, self.lo + self.n_own), cp.recv_ids]).astype(np.int64)
        self._entries(columns)
        self.saint = saint
        self.loss_weight = None
        self.edge_scale = None
        self.row_scale = None
        if saint:
            self.loss_weight, self.row_scale, self.edge_scale = self._saint_norm(norm_batches)

    def _entries(self, columns: sp.csr_matrix) -> None:
        """Index the send entries (q, j) of the full plan: for each, the rows
        of rank q with a nonzero in column j (global new ids), and for each
        own row j, its entries (CSR both ways)."""
        sizes = [r.size for _, r in self.cp.send_to]
        qs = np.repeat(np.array([q for q, _ in self.cp.send_to], np.int64), sizes)
        js = np.concatenate([r for _, r in self.cp.send_to] or [np.zeros(0, np.int64)]).astype(np.int64)
        pos, entry = segments(columns.indptr.astype(np.int64), js)
        cols = columns.indices[pos].astype(np.int64)
        dest = qs[entry]
        keep = (cols >= self.cp.offsets[dest]) & (cols < self.cp.offsets[dest + 1])
        self._ent_row = js  # local row sent by each entry
        self._ent_start = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)  # entries of each send_to
        self._pin_ptr = np.zeros(js.size + 1, np.int64)
        np.cumsum(np.bincount(entry[keep], minlength=js.size), out=self._pin_ptr[1:])
        self._pins = cols[keep]  # in entry order (segments keeps it)
        self._row_ent = np.argsort(js, kind="stable")  # entries of own row j: _row_ent[_row_ptr[j]:_row_ptr[j+1]]
        self._row_ptr = np.zeros(self.n_own + 1, np.int64)
        np.cumsum(np.bincount(js, minlength=self.n_own), out=self._row_ptr[1:])

    def _mask(self, k: int, stream: int) -> np.ndarray:
        in_batch = np.zeros(self.n, bool)
        in_batch[self.inverse[self.sampler.batch(k, stream)]] = True
        return in_batch

    def _masks(self, in_batch: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        own = in_batch[self.lo:self.lo + self.n_own]
        return own, np.concatenate([own, in_batch[self.cp.recv_ids]])

    def _saint_norm(self, batches: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per own row: loss weight N / C_v and C_v; per local nonzero (v, u):
        1 / C_uv (0 where the pair was never sampled). The aggregator scale
        C_v / C_uv is diag(C_v) times a symmetric matrix when Â is, so its
        transpose is the same expand of rows scaled by C_v (:class:`.spmm.DistSpMM`)."""
        cv = np.zeros(self.n_own, np.int64)
        cuv = np.zeros(self.full.nnz, np.int64)
        for k in range(batches):  # a loop over batches, vectorized inside
            own, cols = self._masks(self._mask(k, NORM))
            cv += own
            cuv += own[self._row_of_nnz] & cols[self.full.indices]
        with np.errstate(divide="ignore", invalid="ignore"):
            loss_w = np.where(cv > 0, batches / np.maximum(cv, 1), 0.0)
            inv = np.where(cuv > 0, 1.0 / np.maximum(cuv, 1), 0.0)
        return loss_w.astype(np.float32), cv.astype(np.float32), inv.astype(np.float32)

    def batch_number(self, epoch: int, step: int) -> int:
        return epoch * self.steps + step

    def view(self, epoch: int, step: int) -> BatchView:
        """The batch (epoch, step) restricted to this rank: its own rows,
        plan and local matrix."""
        cp, n_own = self.cp, self.n_own
        in_batch = self._mask(self.batch_number(epoch, step), TRAIN)
        batch = np.flatnonzero(in_batch)  # new ids, sorted
        offsets = np.searchsorted(batch, cp.offsets).astype(np.int64)
        rows = batch[offsets[cp.rank]:offsets[cp.rank + 1]] - self.lo
        b_own = rows.size
        own_pos = np.full(n_own, -1, np.int64)
        own_pos[rows] = np.arange(b_own)
        send_to = self._send_lists(in_batch, rows, own_pos)

        # receiver: the batch rows' nonzeros whose column is in the batch
        pos, r = batch_entries(self._indptr, self._indices, rows, self._gcol, in_batch)
        c = self._indices[pos]
        halo = c >= n_own
        recv_in = np.zeros(self._gcol.size - n_own, bool)
        recv_in[c[halo] - n_own] = True
        counts = np.bincount(self._sender[recv_in], minlength=cp.size)
        recv_start = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        recv_from = [(q, int(counts[q])) for q in range(cp.size) if q != cp.rank and counts[q] > 0]
        compact = np.searchsorted(batch, self._gcol[n_own:][recv_in])  # position among the batch's vertices
        bcp = CommPlan(cp.rank, cp.size, offsets, send_to, recv_from, recv_start, compact.astype(np.int64),
                       batch=batch)

        # local columns of the batch: own batch rows, then the received rows by sender
        new_col = np.empty(c.size, np.int64)
        new_col[~halo] = own_pos[c[~halo]]
        halo_pos = np.cumsum(recv_in) - 1
        new_col[halo] = halo_pos[c[halo] - n_own]
        vals = self.full.data[pos]
        if self.edge_scale is not None:
            vals = vals * self.edge_scale[pos]
        lm = LocalMatrix(own=_csr(r[~halo], new_col[~halo], vals[~halo], (b_own, b_own)),
                         halo=_halo_blocks((r[halo], new_col[halo], vals[halo]), recv_start, recv_from, b_own))
        left = self.row_scale[rows] if self.row_scale is not None else None
        return BatchView(rows=rows, cp=bcp, lm=lm, vertices=int(offsets[-1]),
                         halo_new=self._gcol[n_own:][recv_in], left=left)

    def _send_lists(self, in_batch: np.ndarray, rows: np.ndarray, own_pos: np.ndarray
                    ) -> list[tuple[int, np.ndarray]]:
        """Rows to send per neighbour: entry (q, j) is live when j is in the
        batch (``rows``, local ids) and one of its rows in q is too; the
        stored order of each list is kept. Returns positions among ``rows``
        (``own_pos``: local row -> position)."""
        live_ents = np.flatnonzero(live_entries(self._row_ptr, self._row_ent, self._pin_ptr, self._pins, rows,
                                                in_batch, self._ent_row.size))  # ascending
        cuts = np.searchsorted(live_ents, self._ent_start)
        out = []
        for i, (q, _) in enumerate(self.cp.send_to):  # a loop over neighbour ranks
            sel = live_ents[cuts[i]:cuts[i + 1]]
            if sel.size:
                out.append((q, own_pos[self._ent_row[sel]]))
        return out


class Batches(Protocol):
    """What the training loop asks of a mini-batch source (:class:`MiniBatches`, or out of core
    :class:`shgcn.trainer.outofcore.OutOfCoreBatches`)."""

    steps: int
    sampler: Sampler
    loss_weight: Any

    def batch_number(self, epoch: int, step: int) -> int: ...

    def view(self, epoch: int, step: int) -> Any: ...


class PlanAhead:
    """Builds batch views one step ahead.

    ``ahead(epoch, step)`` starts the view of that step in a helper thread
    (``threaded``); ``get(epoch, step)`` returns it, built now if nobody asked
    ahead. Either way the training loop asks for the next view while the
    step's allreduce completes. The thread makes it while the step computes
    and waits on its exchanges (numpy and scipy release the GIL); that pays
    when a core is free for it. With one rank per core (2 ranks on this
    2-core machine) it measured no faster and its GIL hand-offs lengthened
    the exchange waits, so the default builds inline (the views are pure
    functions of the batch number: the same either way, tested).
    """

    def __init__(self, mb: Batches, threaded: bool = True):
        self.mb = mb
        self.pool = ThreadPoolExecutor(1, thread_name_prefix="plan") if threaded else None
        self.pending: dict[tuple[int, int], Future] = {}

    def ahead(self, epoch: int, step: int) -> None:
        if self.pool is not None and (epoch, step) not in self.pending:
            self.pending[epoch, step] = self.pool.submit(self.mb.view, epoch, step)

    def get(self, epoch: int, step: int) -> BatchView:
        fut = self.pending.pop((epoch, step), None)
        return fut.result() if fut is not None else self.mb.view(epoch, step)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
