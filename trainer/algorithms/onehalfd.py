"""``1.5d`` (cost model: :mod:`shgcn.core.algorithms.onehalfd`): a k x c grid, the c
ranks of process row i holding block row i (see :mod:`shgcn.core.algorithms.grid`).

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

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import scipy.sparse as sp

from shgcn.core.algorithms import assign_pairs, chunk_bounds
from shgcn.core.archs import NORM
from shgcn.core.memory import Held, rank_bytes

from ..backends import Backend
from ..context import Context, Local, finish
from ..exchanges import EXCHANGES, Counters, Exchange, make
from ..graph import Graph, RowOperators
from ..plan import CommPlan, LocalMatrix, local_matrix
from ..wire import Wire
from .base import check_memory, peers
from .rowcomm import RowGather, RowReduce


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


@dataclass(frozen=True)
class RowGrid:
    """What a rank's products on its process row share.

    Attributes
    ----------
    col : the exchange along the grid column (the pairs of my column blocks)
    mine : the column blocks q this rank multiplies
    bounds : (c+1,) the row chunks (:func:`shgcn.core.algorithms.chunk_bounds`)
    reduce_fwd, reduce_fold : the in-row reductions of a product and of a fold
    counters : where every byte is counted (by kind)
    symmetric : Â's pattern is symmetric
    """

    col: Exchange
    mine: list[int]
    bounds: np.ndarray
    reduce_fwd: RowReduce
    reduce_fold: RowReduce
    counters: Counters
    symmetric: bool


class ReduceProduct:
    """P X and Pᵀ G for block row i on a 1.5D row: my column blocks' partial sums, reduced in the row."""

    def __init__(self, lm: LocalMatrix, grid: RowGrid, backend: Backend):
        self.lm, self.g, self.be = lm, grid, backend
        fwd, fold = grid.reduce_fwd, grid.reduce_fold
        self.lo, self.hi = int(grid.bounds[fwd.j]), int(grid.bounds[fwd.j + 1])
        sup = fwd.support
        self.halo_rows = {q: lm.halo[q][sup] for q in grid.mine if q in lm.halo}  # my blocks on my support rows
        self.own_rows = lm.own[self.lo:self.hi]
        self.pos = np.full(lm.n_own, -1, np.int64)  # local row -> position in my fold support
        self.pos[fold.support] = np.arange(fold.support.size)

    @cached_property
    def own_t_rows(self) -> sp.csr_matrix:
        return self.lm.own_t[self.lo:self.hi]

    def _call(self, run):
        """One SpMM's bytes as one entry of the counters' calls."""
        before = self.g.counters.mark()
        out = run()
        self.g.counters.call_done(before)
        return out

    def forward(self, x: Any) -> Any:
        out: dict = {}
        g, be = self.g, self.be
        partial = be.zeros((g.reduce_fwd.support.size, x.shape[1])) if self.halo_rows else None

        def local():
            out["y"] = be.spmm(self.own_rows, x)

        def on_block(q, rows):
            partial[...] += be.spmm(self.halo_rows[q], be.from_host(rows))  # type: ignore[index]

        def run():
            g.col.expand(be.host_rows(x), local, on_block)
            g.counters.absorb(g.col.counters, "rows")
            return be.from_host(g.reduce_fwd.combine(be.to_host(out["y"]),  # the row's messages: host arrays
                                                     None if partial is None else be.to_host(partial)))

        return self._call(run)

    def transpose(self, gr: Any) -> Any:
        if self.g.symmetric:
            return self.forward(gr)
        g, be = self.g, self.be
        parts = {q: be.to_host(be.spmm(self.lm.halo_t[q], gr)) for q in g.mine if q in self.lm.halo}
        out: dict = {}
        acc = be.zeros((g.reduce_fold.support.size, gr.shape[1]))

        def local():
            out["y"] = be.spmm(self.own_t_rows, gr)

        def on_block(rows, buf):
            acc[self.pos[rows]] += be.from_host(buf)

        def run():
            g.col.fold(parts, gr.shape[1], local, on_block)
            g.counters.absorb(g.col.counters, "rows")
            return be.from_host(g.reduce_fold.combine(be.to_host(out["y"]),
                                                      be.to_host(acc) if math.prod(acc.shape) else None))

        return self._call(run)


class ReduceOperators:
    """A 1.5D row's operators (gcn, sage, gin): Â and its pattern as :class:`ReduceProduct`."""

    def __init__(self, lm: LocalMatrix, grid: RowGrid, backend: Backend):
        self.lm, self.grid, self.be = lm, grid, backend
        self.n_own = lm.n_own

    @cached_property
    def pattern(self) -> LocalMatrix:
        return self.lm.pattern()

    def product(self, matrix: str) -> ReduceProduct:
        return ReduceProduct(self.lm if matrix == NORM else self.pattern, self.grid, self.be)

    @cached_property
    def degree(self) -> np.ndarray:
        p = self.pattern
        return (np.diff(p.own.indptr) + sum((np.diff(m.indptr) for m in p.halo.values()),
                                            np.zeros(self.n_own, np.int64))).astype(np.float32)


class GatherExchange(Exchange):
    """The 1D exchange's interface on a 1.5D row: a column exchange of my pairs,
    then the row shares what each rank received; blocks reach ``on_block``
    in sender order, partial sums in grid column order, on every rank of the row."""

    name = "gather"

    def __init__(self, col: Exchange, row_comm, cp: CommPlan, a: np.ndarray, folds: list[np.ndarray]):
        super().__init__(None, cp, col.wire)
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


def connect(local: Local, comm) -> Context:
    """The grid's communicators, the assignment of column blocks, the products; then the memory check."""
    cfg, cp, job = local.cfg, local.cp, local.job
    i, j = local.position
    c = local.shape.cols
    row = comm.Split(i, j)  # the c ranks of block row i, ranked by grid column
    col = comm.Split(j, i)  # the k ranks of grid column j, ranked by block row
    sends = np.diff(np.asarray(local.block.plan.send_ptr)).astype(np.int64)  # rows block i sends to each part
    volume = np.array(comm.allgather(sends), np.int64)[::c]
    oblivious = not EXCHANGES.get(cfg.exchange).spec.sparsity_aware
    a = assign_pairs(volume, c, oblivious=oblivious)
    col_cp = column_plan(cp, a, i, j)
    roots = [q for q in range(cp.size) if q % c == j] if oblivious else None
    options: dict[str, Any] = {"roots": roots} if oblivious else {}
    col_ex = make(cfg.exchange, col, col_cp, Wire(cfg.exchange_dtype), None, **options,
                  **EXCHANGES.get(cfg.exchange).own(cfg.options))
    column_rows = sum(n for _, n in col_cp.recv_from) if roots is None else \
        int(sum(cp.offsets[q + 1] - cp.offsets[q] for q in roots if q != i))
    lm = local_matrix(local.block.plan, cp)
    gids = local.col_gids(local.data.gids, cp.recv_ids)
    n = lm.n_own
    sent = (n if i % c == j else 0) if oblivious else col_cp.send_rows  # bcast: its block, copied as a root
    if job.combine == "gather":
        ex = GatherExchange(col_ex, row, cp, a, fold_supports(cp, a, c))
        counters = ex.counters
        ops: Any = RowOperators(lm, ex, local.symmetric, local.backend)
        halo = cp.recv_rows
    else:
        if oblivious:  # CAGNET's: every row of the block is reduced
            fwd_sup = fold_sup = [np.arange(n, dtype=np.int64)] * c
        else:
            fwd_sup, fold_sup = forward_supports(lm, a, i, c), fold_supports(cp, a, c)
        counters = Counters()  # the grid's products count their own messages
        bounds = chunk_bounds(n, c)
        mine = sorted(q for q in lm.halo if a[i, q] == j)
        fwd_rr, fold_rr = RowReduce(row, bounds, fwd_sup, counters), RowReduce(row, bounds, fold_sup, counters)
        grid = RowGrid(col_ex, mine, bounds, fwd_rr, fold_rr, counters, local.symmetric)
        ops = ReduceOperators(lm, grid, local.backend)
        halo = n + column_rows  # the partial sums, and the rows of my column blocks
        sent = max(sent, fwd_rr.packed, 0 if local.symmetric else fold_rr.packed)  # the reduce's partial sums
    memory = int(rank_bytes(Held(n, int(local.block.plan.indices.shape[0]), halo, sent=sent), job))
    return finish(local, counters=counters, graph=Graph(ops, gids), peers=peers(local, comm), memory=memory,
                  memory_all=check_memory(local, memory, comm))
