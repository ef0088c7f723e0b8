"""The 1.5D algorithm's products (``--algorithm 1.5d``): a k x c grid, the c
ranks of process row i holding block row i (see :mod:`shgcn.core.grid`).

Rank (i, j) multiplies the rows of its chunk of the diagonal block and the
column blocks q with ``a[i, q] = j``, whose rows of H it receives from rank
(q, j) through an ordinary exchange on the grid column's communicator with
the store's plan restricted to those pairs (:func:`column_plan`): p2p or
alltoallv send only the rows the blocks need (sparsity-aware), bcast sends
whole blocks (CAGNET's sparsity-oblivious 1.5D). Then the row combines:

- :class:`ReduceSpMM` (``--row-combine reduce``, CAGNET's): the partial sums
  are reduced within the row (:class:`.rowcomm.RowReduce`); with a directed
  Â the transpose folds each pair's partial sums back along the column
  (the forward's rows, reversed) and reduces them the same way;
- :class:`GatherExchange` (``--row-combine gather``; GAT's): the rows each
  rank received are shared within the row, so every rank of the row sees
  the 1D halo and any layer runs on it unchanged; a fold shares the summed
  partial sums each rank received.

Dense work (GEMMs, activations, the loss) is replicated on the c ranks of
a row: their results are bitwise equal (every sum is made by one rank).
"""

from __future__ import annotations

from functools import cached_property

import numpy as np
import scipy.sparse as sp

from .backend import BACKEND, CPU
from .exchange import Counters, Exchange
from .graph import Graph
from .plan import CommPlan, LocalMatrix
from .rowcomm import RowGather, RowReduce
from .spmm import ScaledSpMM


def column_plan(cp: CommPlan, a: np.ndarray, i: int, j: int) -> CommPlan:
    """Block i's plan restricted to the pairs grid column j carries: send to q
    when ``a[q, i] = j``, receive from q when ``a[i, q] = j`` (halo layout unchanged)."""
    return CommPlan(i, cp.size, cp.offsets, [(q, r) for q, r in cp.send_to if a[q, i] == j],
                    [(q, n) for q, n in cp.recv_from if a[i, q] == j], cp.recv_start, cp.recv_ids)


def fold_supports(cp: CommPlan, a: np.ndarray, c: int) -> list[np.ndarray]:
    """For each grid column t: the rows of my block that rank (., t) of my row
    receives partial sums for in a fold (sorted local ids)."""
    out = []
    for t in range(c):
        rows = [r for q, r in cp.send_to if a[q, cp.rank] == t]
        out.append(np.unique(np.concatenate(rows)) if rows else np.zeros(0, np.int64))
    return out


def forward_supports(lm: LocalMatrix, a: np.ndarray, i: int, c: int) -> list[np.ndarray]:
    """For each grid column t: the rows of block i with a nonzero in a column block that rank (i, t) multiplies."""
    out = []
    for t in range(c):
        hit = np.zeros(lm.n_own, bool)
        for q, m in lm.halo.items():
            if a[i, q] == t:
                hit |= np.diff(m.indptr) > 0
        out.append(np.flatnonzero(hit).astype(np.int64))
    return out


class ReduceSpMM(ScaledSpMM):
    """M X and Mᵀ G for block row i on a 1.5D row (M = diag(left) P, as :class:`.spmm.DistSpMM`)."""

    def __init__(self, lm: LocalMatrix, col: Exchange, mine: list[int], bounds: np.ndarray,
                 reduce_fwd: RowReduce, reduce_fold: RowReduce, counters: Counters, symmetric: bool,
                 left: np.ndarray | None = None, backend: CPU = BACKEND):
        self.lm, self.col, self.mine, self.counters, self.symmetric, self.be = lm, col, mine, counters, symmetric, backend
        self.lo, self.hi = int(bounds[reduce_fwd.j]), int(bounds[reduce_fwd.j + 1])
        self.fwd, self.fold_reduce = reduce_fwd, reduce_fold
        self.left = None if left is None else np.asarray(left, np.float32)[:, None]
        sup = reduce_fwd.support
        self.halo_rows = {q: lm.halo[q][sup] for q in mine if q in lm.halo}  # my blocks on my support rows
        self.own_rows = lm.own[self.lo:self.hi]
        self.pos = np.full(lm.n_own, -1, np.int64)  # local row -> position in my fold support
        self.pos[reduce_fold.support] = np.arange(reduce_fold.support.size)

    @cached_property
    def own_t_rows(self) -> sp.csr_matrix:
        return self.lm.own_t[self.lo:self.hi]

    def _call(self, run):
        """One SpMM's bytes as one entry of the counters' calls."""
        before = self.counters.bytes_sent
        out = run()
        self.counters.calls.append(self.counters.bytes_sent - before)
        return out

    def _product(self, x: np.ndarray) -> np.ndarray:
        out: dict = {}
        partial = np.zeros((self.fwd.support.size, x.shape[1]), np.float32) if self.halo_rows else None

        def local():
            out["y"] = self.be.spmm(self.own_rows, x)

        def on_block(q, rows):
            partial[...] += self.be.spmm(self.halo_rows[q], rows)  # type: ignore[index]

        def run():
            self.col.expand(self.be.to_host(x), local, on_block)
            self.counters.absorb(self.col.counters, "rows")
            return self.fwd.combine(out["y"], partial)

        return self._call(run)

    def _fold(self, g: np.ndarray) -> np.ndarray:
        parts = {q: self.be.to_host(self.be.spmm(self.lm.halo_t[q], g)) for q in self.mine if q in self.lm.halo}
        out: dict = {}
        acc = np.zeros((self.fold_reduce.support.size, g.shape[1]), np.float32)

        def local():
            out["y"] = self.be.spmm(self.own_t_rows, g)

        def on_block(rows, buf):
            acc[self.pos[rows]] += buf

        def run():
            self.col.fold(parts, g.shape[1], local, on_block)
            self.counters.absorb(self.col.counters, "rows")
            return self.fold_reduce.combine(out["y"], acc if acc.size else None)

        return self._call(run)


class ReduceGraph(Graph):
    """A 1.5D row's operators: Â, the mean and the sum, as :class:`ReduceSpMM` (gcn, sage, gin).

    ``grid``: (column exchange, my column blocks, chunk bounds, forward
    RowReduce, fold RowReduce, the shared counters)."""

    def __init__(self, lm: LocalMatrix, ex: Exchange, symmetric: bool, col_gids: np.ndarray, grid: tuple):
        super().__init__(lm, ex, symmetric, col_gids)
        self.grid = grid

    def _spmm(self, lm: LocalMatrix, left) -> ReduceSpMM:
        col, mine, bounds, fwd, fold, counters = self.grid
        return ReduceSpMM(lm, col, mine, bounds, fwd, fold, counters, self.symmetric, left, self.be)

    @cached_property
    def norm(self):
        return self._spmm(self.lm, self.left)

    @cached_property
    def mean(self):
        with np.errstate(divide="ignore"):
            inv = np.where(self.degree > 0, 1.0 / np.maximum(self.degree, 1), 0.0).astype(np.float32)
        return self._spmm(self._pattern, inv)

    @cached_property
    def sum(self):
        return self._spmm(self._pattern, None)


class GatherExchange(Exchange):
    """The 1D exchange's interface on a 1.5D row: a column exchange of my pairs,
    then the row shares what each rank received; blocks reach ``on_block``
    in sender order, partial sums in grid column order, on every rank of the row."""

    name = "gather"

    def __init__(self, col: Exchange, row_comm, cp: CommPlan, a: np.ndarray, folds: list[np.ndarray]):
        super().__init__(None, cp)
        self.col, self.a, self.folds = col, a, folds
        self.row = RowGather(row_comm, self.counters)
        self.c = row_comm.size
        self.pos = np.full(int(cp.offsets[cp.rank + 1] - cp.offsets[cp.rank]), -1, np.int64)
        self.pos[folds[row_comm.rank]] = np.arange(folds[row_comm.rank].size)

    def _blocks(self, t: int) -> list[tuple[int, int]]:
        return [(q, n) for q, n in self.cp.recv_from if self.a[self.cp.rank, q] == t]

    def _expand(self, x, local, on_block):
        got: dict[int, np.ndarray] = {}
        self.col.expand(x, local, lambda q, rows: got.__setitem__(q, rows))
        self.counters.absorb(self.col.counters, "rows")
        j, d = self.row.comm.rank, x.shape[1]
        mine = [got[q] for q, _ in self._blocks(j)]
        joined = np.concatenate(mine) if mine else np.zeros((0, d), np.float32)
        shared = self.row.share(joined, [sum(n for _, n in self._blocks(t)) for t in range(self.c)])
        for t in range(self.c):
            at = 0
            for q, n in self._blocks(t):
                got[q] = shared[t][at:at + n]
                at += n
        for q in sorted(got):
            on_block(q, got[q])

    def _fold(self, parts, d, local, on_block):
        j = self.row.comm.rank
        acc = np.zeros((self.folds[j].size, d), np.float32)

        def add(rows, buf):
            acc[self.pos[rows]] += buf

        self.col.fold({q: parts[q] for q, _ in self._blocks(j)}, d, local, add)
        self.counters.absorb(self.col.counters, "rows")
        shared = self.row.share(acc, [f.size for f in self.folds])
        for t in range(self.c):
            if self.folds[t].size:
                on_block(self.folds[t], shared[t])
