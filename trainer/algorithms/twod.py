"""``2d``: SUMMA (cost model: :mod:`shgcn.core.algorithms.twod`), sparsity-oblivious as CAGNET's 2D: the
baseline the communication-avoiding papers compare against.

The grid is s x s over a store of s parts (see :mod:`shgcn.core.algorithms.grid`).
Simplification (stated in the README): the store's s row blocks are split
into s column blocks at runtime, so rank (i, j) opens block i, keeps block
(i, j) of Â (the columns part j owns) and drops the rest; and H is held
whole by every rank of process row i, so the dense work (GEMMs,
activations, the loss) is replicated along the row, and each SpMM ends
with an allgather of the output's column slices along the row (where
CAGNET keeps H in 2D and multiplies by W with another SUMMA).

One SpMM of width w, Y_i = sum_k A_ik H_k: rank (i, j) computes column
slice j of Y_i in s stages; in stage k, rank (i, k) broadcasts A_ik along
process row i (CSR: int32 row pointers, int32 columns, float32 values, one
message) and rank (k, j) broadcasts H_k's slice j along grid column j.
The transpose uses Âᵀ's blocks (the store's transposed plan of a directed
graph; Â's own for an undirected one).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import scipy.sparse as sp

from shgcn.core.algorithms import slice_bounds
from shgcn.core.archs import NORM
from shgcn.core.memory import Held, rank_bytes

from ..backends import Backend
from ..context import Context, Local, finish
from ..exchanges import Counters
from ..graph import PATTERN, Graph
from ..plan import CommPlan, LocalMatrix, comm_plan, local_matrix
from .base import check_memory, column_owner, peers

_TAG_AG = 31


def column_blocks(lm: LocalMatrix, cp: CommPlan) -> list[sp.csr_matrix]:
    """Block row i split into its s column blocks, each with the full column range of its part."""
    off = cp.offsets
    out = []
    for k in range(cp.size):
        n_k = int(off[k + 1] - off[k])
        if k == cp.rank:
            out.append(sp.csr_matrix(lm.own, dtype=np.float32))
        elif k in lm.halo:
            m = lm.halo[k]
            cols = cp.recv_ids[cp.recv_start[k]:cp.recv_start[k + 1]] - off[k]
            out.append(sp.csr_matrix((m.data, cols[m.indices], m.indptr), shape=(lm.n_own, n_k), dtype=np.float32))
        else:
            out.append(sp.csr_matrix((lm.n_own, n_k), dtype=np.float32))
    return out


def pack(m: sp.csr_matrix) -> np.ndarray:
    """A CSR block as one int32 buffer: row pointers, columns, values (float32 bits)."""
    return np.concatenate([m.indptr.astype(np.int32), m.indices.astype(np.int32),
                           np.ascontiguousarray(m.data, np.float32).view(np.int32)])


def unpack(buf: np.ndarray, n: int, cols: int) -> sp.csr_matrix:
    nnz = (buf.size - n - 1) // 2
    return sp.csr_matrix((buf[n + 1 + nnz:].view(np.float32), buf[n + 1:n + 1 + nnz], buf[:n + 1]), shape=(n, cols))


class Summa:
    """What every 2D product of a rank shares: its place, communicators, block sizes and counters."""

    def __init__(self, row, col, position: tuple[int, int], rows: np.ndarray, counters: Counters, backend: Backend):
        i, j = position
        self.row, self.col, self.i, self.j = row, col, i, j
        self.s = row.size
        self.rows = np.asarray(rows, np.int64)
        self.counters, self.be = counters, backend

    def _bcast(self, comm, buf: np.ndarray, root: int, kind: str) -> None:
        t0 = time.perf_counter()
        comm.Bcast(buf, root=root)
        self.counters.comm_time += time.perf_counter() - t0
        if comm.rank == root:
            self.counters.sent(kind, buf.nbytes * (comm.size - 1), comm.size - 1)
        else:
            self.counters.bytes_recv += buf.nbytes

    def multiply(self, x: np.ndarray, packed: np.ndarray, sizes: np.ndarray) -> np.ndarray:
        """(n_i, w) rows of A X on every rank of the row; ``packed``: my block, ``sizes``: the buffer length of each A_ik."""
        before = self.counters.bytes_sent
        n, w = x.shape
        b = slice_bounds(w, self.s)
        lo, hi = int(b[self.j]), int(b[self.j + 1])
        xs = np.ascontiguousarray(x[:, lo:hi], np.float32)
        y = np.zeros((n, hi - lo), np.float32)
        for k in range(self.s):
            buf = packed if k == self.j else np.empty(int(sizes[k]), np.int32)
            self._bcast(self.row, buf, k, "matrix")
            h = xs if k == self.i else np.empty((int(self.rows[k]), hi - lo), np.float32)
            self._bcast(self.col, h, k, "rows")
            y += self.be.to_host(self.be.spmm(unpack(buf, n, int(self.rows[k])), self.be.from_host(h)))
        out = self._allgather(y, b)
        self.counters.calls.append(self.counters.bytes_sent - before)
        return out

    def _allgather(self, y: np.ndarray, b: np.ndarray) -> np.ndarray:
        from mpi4py import MPI

        n = y.shape[0]
        out = np.empty((n, int(b[-1])), np.float32)
        others = [t for t in range(self.s) if t != self.j]
        bufs = {t: np.empty((n, int(b[t + 1] - b[t])), np.float32) for t in others}
        reqs = [self.row.Irecv(bufs[t], source=t, tag=_TAG_AG) for t in others]
        reqs += [self.row.Isend(y, dest=t, tag=_TAG_AG) for t in others]
        self.counters.sent("inrow", y.nbytes * len(others), len(others))
        self.counters.bytes_recv += sum(x.nbytes for x in bufs.values())
        t0 = time.perf_counter()
        MPI.Request.Waitall(reqs)
        self.counters.comm_time += time.perf_counter() - t0
        bufs[self.j] = y
        for t in range(self.s):
            out[:, b[t]:b[t + 1]] = bufs[t]
        return out


Prepared = tuple[np.ndarray, np.ndarray]  # my block packed, and the buffer length of every block of my row


def prepare(m: LocalMatrix, plan: CommPlan, j: int) -> Prepared:
    """Block j of a block row, packed, and the sizes of all its blocks (the rest is dropped)."""
    blocks = column_blocks(m, plan)
    return pack(blocks[j]), np.array([b.shape[0] + 1 + 2 * b.nnz for b in blocks], np.int64)


class SummaProduct:
    """P X and Pᵀ G for block row i by SUMMA (``fwd``: P's blocks; ``bwd``: Pᵀ's, the same for an undirected
    graph): both ways a product with its own blocks."""

    def __init__(self, summa: Summa, fwd: Prepared, bwd: Prepared):
        self.summa, self.fwd, self.bwd = summa, fwd, bwd

    def forward(self, x: Any) -> Any:
        be = self.summa.be  # SUMMA's broadcasts move host arrays
        return be.from_host(self.summa.multiply(be.to_host(x), *self.fwd))

    def transpose(self, g: Any) -> Any:
        be = self.summa.be
        return be.from_host(self.summa.multiply(be.to_host(g), *self.bwd))


class SummaOperators:
    """A 2D rank's operators (gcn's Â, sage's mean, gin's sum): rank (i, j) keeps its own column blocks of
    block row i (the rest is dropped once they are prepared) and the degrees of the whole row."""

    def __init__(self, lm: LocalMatrix, lm_t: LocalMatrix | None, cp: CommPlan, cp_t: CommPlan | None,
                 summa: Summa):
        self.summa, self.be = summa, summa.be
        self.n_own = lm.n_own
        j = summa.j
        pattern = lm.pattern()
        norm_p, pattern_p = prepare(lm, cp, j), prepare(pattern, cp, j)
        if lm_t is not None and cp_t is not None:
            self._ops = {NORM: (norm_p, prepare(lm_t, cp_t, j)), PATTERN: (pattern_p, prepare(lm_t.pattern(), cp_t, j))}
        else:
            self._ops = {NORM: (norm_p, norm_p), PATTERN: (pattern_p, pattern_p)}
        self.degree = (np.diff(pattern.own.indptr) + sum((np.diff(m.indptr) for m in pattern.halo.values()),
                                                         np.zeros(self.n_own, np.int64))).astype(np.float32)

    def product(self, matrix: str) -> SummaProduct:
        return SummaProduct(self.summa, *self._ops[matrix])


def connect(local: Local, comm) -> Context:
    """The grid's row and column communicators and the SUMMA products; then the memory check."""
    cp, block = local.cp, local.block
    i, j = local.position
    row = comm.Split(i, j)  # the s ranks of block row i, ranked by grid column
    col = comm.Split(j, i)  # the s ranks of grid column j, ranked by block row
    counters = Counters()  # SUMMA's broadcasts count their own messages
    summa = Summa(row, col, (i, j), np.diff(cp.offsets), counters, local.backend)
    lm = local_matrix(block.plan, cp)
    cp_t = comm_plan(block.transpose, i, cp.offsets) if block.transpose is not None else None
    lm_t = local_matrix(block.transpose, cp_t) if block.transpose is not None and cp_t is not None else None
    ops = SummaOperators(lm, lm_t, cp, cp_t, summa)
    sender = column_owner(np.asarray(block.plan.indices), block.n_own, cp)
    per_block = np.bincount(sender, minlength=cp.size)
    memory = int(rank_bytes(Held(block.n_own, int(per_block[j]), 0, int(per_block.max())), local.job))
    return finish(local, counters=counters, graph=Graph(ops, local.col_gids(local.data.gids, cp.recv_ids)),
                  peers=peers(local, comm), memory=memory, memory_all=check_memory(local, memory, comm))
