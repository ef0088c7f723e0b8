"""2D SUMMA (``--algorithm 2d``), sparsity-oblivious as CAGNET's 2D: the
baseline the communication-avoiding papers compare against.

The grid is s x s over a store of s parts (see :mod:`shgcn.core.grid`).
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
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from shgcn.core.grid import slice_bounds

from .backend import BACKEND, CPU
from .exchange import Counters, Exchange
from .graph import Graph
from .plan import CommPlan, LocalMatrix
from .spmm import ScaledSpMM

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

    def __init__(self, row, col, i: int, j: int, rows: np.ndarray, counters: Counters, backend: CPU = BACKEND):
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
            y += self.be.spmm(unpack(buf, n, int(self.rows[k])), h)
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


class SummaSpMM(ScaledSpMM):
    """M X and Mᵀ G (M = diag(left) P) for block row i, as :class:`.spmm.DistSpMM`, by SUMMA
    (``fwd``: P's blocks; ``bwd``: Pᵀ's, the same for an undirected graph)."""

    symmetric = False  # Pᵀ G by its own blocks, bwd, whatever the graph

    def __init__(self, summa: Summa, fwd: Prepared, bwd: Prepared, left: np.ndarray | None = None):
        self.summa, self.fwd, self.bwd = summa, fwd, bwd
        self.left = None if left is None else np.asarray(left, np.float32)[:, None]

    def _product(self, x: np.ndarray) -> np.ndarray:
        return self.summa.multiply(self.summa.be.to_host(x), *self.fwd)

    def _fold(self, g: np.ndarray) -> np.ndarray:
        return self.summa.multiply(self.summa.be.to_host(g), *self.bwd)


class SummaGraph(Graph):
    """A 2D rank's operators (gcn's Â, sage's mean, gin's sum). Keeps its own
    column blocks and the degrees; the rest of block row i is dropped."""

    def __init__(self, lm: LocalMatrix, lm_t: LocalMatrix | None, cp: CommPlan, cp_t: CommPlan | None,
                 ex: Exchange, summa: Summa, col_gids: np.ndarray):
        super().__init__(lm, ex, lm_t is None, col_gids)
        self.summa = summa
        j = summa.j
        norm = prepare(lm, cp, j)
        pattern = prepare(lm.pattern(), cp, j)
        if lm_t is not None and cp_t is not None:
            self._ops = {"norm": (norm, prepare(lm_t, cp_t, j)), "pattern": (pattern, prepare(lm_t.pattern(), cp_t, j))}
        else:
            self._ops = {"norm": (norm, norm), "pattern": (pattern, pattern)}
        _ = self.degree  # from the whole row, before it is dropped
        self.lm = None  # type: ignore[assignment]  # rank (i, j) keeps block (i, j) only
        self.__dict__.pop("_pattern", None)

    def _spmm(self, kind: str, left) -> SummaSpMM:
        return SummaSpMM(self.summa, *self._ops[kind], left)

    @cached_property
    def norm(self):
        return self._spmm("norm", self.left)

    @cached_property
    def mean(self):
        with np.errstate(divide="ignore"):
            inv = np.where(self.degree > 0, 1.0 / np.maximum(self.degree, 1), 0.0).astype(np.float32)
        return self._spmm("pattern", inv)

    @cached_property
    def sum(self):
        return self._spmm("pattern", None)
