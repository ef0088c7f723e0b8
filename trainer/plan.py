"""A rank's stored plan turned, once, into what the SpMMs need: the local
matrix split by column block (own rows, then one block per sending rank), its
transposes for the fold, and the neighbour lists."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from shgcn.store import Plan, release_pages


@dataclass
class CommPlan:
    """Rows exchanged by one rank for one SpMM (widths are per call).

    Attributes
    ----------
    rank, size : int
    offsets : (P+1,) int64, every rank's range of new ids
    send_to : list of (q, rows) with rows an int64 array of local row ids, q != rank
    recv_from : list of (q, count) in rank order, q != rank
    recv_start : (P+1,) int64, halo position of each sender's rows
    recv_ids : (R,) int64, global new ids of the halo rows
    batch : (b,) int64, the batch's vertices (sorted global new ids; ``recv_ids`` and ``offsets`` then count
        positions among them), or None for the full graph
    """

    rank: int
    size: int
    offsets: np.ndarray
    send_to: list[tuple[int, np.ndarray]]
    recv_from: list[tuple[int, int]]
    recv_start: np.ndarray
    recv_ids: np.ndarray
    batch: np.ndarray | None = None

    @property
    def send_rows(self) -> int:
        return sum(r.size for _, r in self.send_to)

    @property
    def recv_rows(self) -> int:
        return int(self.recv_start[-1])


def comm_plan(plan: Plan, rank: int, offsets: np.ndarray) -> CommPlan:
    size = offsets.size - 1
    sp_ = np.asarray(plan.send_ptr)
    rows = np.asarray(plan.send_rows, dtype=np.int64)
    rp = np.asarray(plan.recv_ptr)
    send_to = [(q, rows[sp_[q]:sp_[q + 1]]) for q in range(size) if q != rank and sp_[q + 1] > sp_[q]]
    recv_from = [(q, int(rp[q + 1] - rp[q])) for q in range(size) if q != rank and rp[q + 1] > rp[q]]
    return CommPlan(rank, size, np.asarray(offsets), send_to, recv_from, rp.astype(np.int64),
                    np.asarray(plan.recv_ids, dtype=np.int64))


def empty_plan(rank: int, offsets: np.ndarray) -> CommPlan:
    """A plan that exchanges nothing (an out-of-core exchange's between batches)."""
    size = offsets.size - 1
    return CommPlan(rank, size, np.asarray(offsets), [], [], np.zeros(size + 1, np.int64), np.zeros(0, np.int64))


@dataclass
class LocalMatrix:
    """A rank's rows of a matrix, split by column block.

    ``own`` (n_own x n_own) multiplies own rows; ``halo[q]`` (n_own x R_q)
    multiplies the rows received from q. ``own_t`` and ``halo_t`` are their
    transposes, used to compute the rank's contribution to M^T G (directed
    graphs only), formed on first use.
    """

    own: sp.csr_matrix
    halo: dict[int, sp.csr_matrix]
    _own_t: sp.csr_matrix | None = None
    _halo_t: dict[int, sp.csr_matrix] | None = None
    _full: sp.csr_matrix | None = None

    @property
    def n_own(self) -> int:
        return self.own.shape[0]

    @property
    def own_t(self) -> sp.csr_matrix:
        if self._own_t is None:
            self._own_t = self.own.T.tocsr()
        return self._own_t

    @property
    def halo_t(self) -> dict[int, sp.csr_matrix]:
        if self._halo_t is None:
            self._halo_t = {q: m.T.tocsr() for q, m in self.halo.items()}
        return self._halo_t

    @property
    def full(self) -> sp.csr_matrix:
        """(n_own, n_own + R) the blocks side by side: own columns, then each sender's (local column ids)."""
        if self._full is None:
            blocks = [self.own, *self.halo.values()]
            self._full = sp.hstack(blocks, format="csr", dtype=np.float32) if len(blocks) > 1 else self.own
        return self._full

    def halo_nnz(self) -> np.ndarray:
        """(n_own,) nonzeros of each row in received columns."""
        out = np.zeros(self.n_own, np.int64)
        for m in self.halo.values():
            out += np.diff(m.indptr)
        return out

    def pattern(self) -> LocalMatrix:
        """The same blocks with every value 1 and the diagonal (self loops) dropped: the graph's adjacency."""
        return LocalMatrix(own=_binary(self.own, drop_diagonal=True),
                           halo={q: _binary(m, drop_diagonal=False) for q, m in self.halo.items()})


def _binary(m: sp.csr_matrix, drop_diagonal: bool) -> sp.csr_matrix:
    """Ones on the pattern of ``m`` (without its diagonal if asked)."""
    rows = np.repeat(np.arange(m.shape[0]), np.diff(m.indptr))
    keep = m.indices != rows if drop_diagonal else np.ones(m.nnz, bool)
    ptr = np.zeros(m.shape[0] + 1, np.int64)
    np.cumsum(np.bincount(rows[keep], minlength=m.shape[0]), out=ptr[1:])
    return sp.csr_matrix((np.ones(int(ptr[-1]), np.float32), m.indices[keep], ptr), shape=m.shape)


def full_local(plan: Plan, cp: CommPlan) -> sp.csr_matrix:
    """(n_own, n_own + R) csr_matrix of a rank's rows, local column ids."""
    n = plan.n_own
    return sp.csr_matrix((np.asarray(plan.data), np.asarray(plan.indices), np.asarray(plan.indptr)),
                         shape=(n, n + cp.recv_rows))


def local_matrix(plan: Plan, cp: CommPlan) -> LocalMatrix:
    """The stored plan split by column block; the stored arrays' pages are then dropped from this process
    (a memory-mapped block is read once: the rank holds the split, not the block and the split)."""
    lm = split_local(full_local(plan, cp), cp)
    release_pages(plan.data, plan.indices, plan.indptr)
    return lm


def split_local(full: sp.csr_matrix, cp: CommPlan) -> LocalMatrix:
    """Split local rows by column block: own columns, then each sender's (each a CSR column slice: row order
    kept, no copy of ``full`` beside the blocks; sorted indices, as the stored rows are)."""
    n = full.shape[0]
    blocks = [full[:, :n], *(full[:, n + cp.recv_start[q]:n + cp.recv_start[q + 1]] for q, _ in cp.recv_from)]
    for m in blocks:
        if not m.has_sorted_indices:
            m.sort_indices()
    return LocalMatrix(own=blocks[0], halo={q: m for (q, _), m in zip(cp.recv_from, blocks[1:])})
