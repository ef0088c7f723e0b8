"""``1.5d``: CAGNET's 1.5D algorithm with replication c, sparsity-aware as
Mukhopadhyay et al.'s (or oblivious with ``--exchange bcast``): a k x c grid
(:mod:`.grid`), the c ranks of a process row holding the same block row.

Bytes by kind (the run log's ``bytes_split``):

- ``rows``: rows of H (or partial sums) exchanged along a grid column: the
  column exchange (p2p, alltoallv: the rows needed; bcast: CAGNET's
  broadcast of whole blocks);
- ``inrow``: within a process row: the reduce-scatter of partial sums (only
  the rows a partial touches; every row with an oblivious exchange) followed
  by the allgather of the reduced chunks, or the gather of received rows
  (``--row-combine gather``, GAT's).

Messages: a broadcast from a root counts size-1 messages at the root; the
in-row steps send one message to each other rank of the row, empty or not.

Time per SpMM of width w on rank (i, j): the column exchange (p2p overlaps
the rank's chunk of the diagonal block: ``max(α m + β b, t_own) + t_rest``;
alltoallv ``α (k-1) + β b`` then the product; bcast one broadcast among the
k ranks of the column per block the column carries), then the in-row step
(reduce-scatter and allgather, or the gather: each ``α (c-1) + β b``); the
dense work counts every row of the block row (replicated on the row's
ranks), then one allreduce of the weight gradients among all P ranks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..collectives import bcast_time
from ..costs import Job
from ..errors import UserError
from ..exchanges import EXCHANGES
from ..machine import Channel, Machine
from ..memory import Held, rank_bytes
from ..options import Option
from ..partition import PartitionCost
from .base import AlgorithmCost, Call, dense_seconds, gradient_allreduce, sum_calls
from .grid import GridShape, assign_pairs, block_nnz, chunk_bounds, row_supports, rows_by_columns

COMBINES = ("auto", "reduce", "gather")
# 1.5D's own options
REPLICATION = Option("--replication", 1, "1.5d: ranks per block row; they split the off-diagonal column blocks and "
                     "reduce their partial sums", type=int, low=1, metavar="C")
ROW_COMBINE = Option("--row-combine", "auto", "1.5d: reduce the row's partial sums (CAGNET's), or share the rows each "
                     "rank received; auto: gather for an architecture whose aggregation is not a product (GAT's "
                     "softmax is not a sum of partial products), reduce otherwise", choices=COMBINES)
KINDS = ("rows", "inrow", "matrix")


class RowGrid:
    """What the byte counts of one partition on a k x c grid need, computed once.

    Parameters
    ----------
    cost : PartitionCost with ``graph`` and ``part`` (Â's pattern and the partition)
    shape : the grid
    oblivious : the column exchange sends whole blocks (``bcast``)
    combine : ``reduce`` or ``gather``
    """

    def __init__(self, cost: PartitionCost, shape: GridShape, oblivious: bool = False, combine: str = "reduce"):
        if cost.graph is None or cost.part is None:
            raise ValueError("the 1.5D byte counts need the partition's graph and part vector")
        self.cost, self.shape, self.oblivious, self.combine = cost, shape, oblivious, combine
        k, c = shape.rows, shape.cols
        self.n = cost.rows.astype(np.int64)
        v = cost.volume.astype(np.int64).copy()
        np.fill_diagonal(v, 0)
        self.v = v
        self.blocks = block_nnz(cost.graph, cost.part, k)
        self.a = assign_pairs(v, c, oblivious=oblivious)
        self.chunks = np.diff(np.stack([chunk_bounds(int(m), c) for m in self.n]), axis=1)  # (k, c)
        self.fwd, self.fold = row_supports(cost.graph, cost.part, k, self.a, c)

    def _pairs(self):
        """(k, c) rows each rank sends and receives in an expand of the column exchange, and messages."""
        k, c = self.shape.rows, self.shape.cols
        send, recv = np.zeros((k, c), np.int64), np.zeros((k, c), np.int64)
        ms, mr = np.zeros((k, c), np.int64), np.zeros((k, c), np.int64)
        for j in range(c):
            mine = self.a == j  # mine[i, q]: rank (i, j) multiplies block (i, q)
            recv[:, j] = (self.v.T * mine).sum(1)
            send[:, j] = (self.v * mine.T).sum(1)
            mr[:, j] = ((self.v.T > 0) & mine).sum(1)
            ms[:, j] = ((self.v > 0) & mine.T).sum(1)
        return send, recv, ms, mr

    def _bcast_column(self, w: int, fold: bool):
        """CAGNET's 1.5D column step: grid column j broadcasts (or reduces onto) the blocks q = j mod c."""
        k, c = self.shape.rows, self.shape.cols
        i = np.arange(k)[:, None]
        j = np.arange(c)[None, :]
        root = (i % c) == j
        col = np.arange(k) % c
        total = np.bincount(col, weights=self.n, minlength=c).astype(np.int64)[None, :]
        others = total - np.where(root, self.n[:, None], 0)  # the blocks of the other roots of grid column j
        nroots = np.bincount(col, minlength=c)[None, :] - root
        as_root = np.where(root, self.n[:, None] * (k - 1), 0)
        if fold:
            return others * w, as_root * w, nroots
        return as_root * w, others * w, np.where(root, k - 1, 0)

    def packed(self, directed: bool) -> np.ndarray:
        """(k, c) rows each rank copies into send buffers at once: its column exchange's (sparsity-oblivious:
        its whole block, when it is a root), or under reduce its row reduce's partial sums for the other
        chunks when more (the two run in turn; with a directed Â the fold's supports too)."""
        k, c = self.shape.rows, self.shape.cols
        if self.oblivious:
            root = (np.arange(k)[:, None] % c) == np.arange(c)[None, :]
            col = np.where(root, self.n[:, None], 0)
        else:
            col = self._pairs()[0]
        if self.combine != "reduce" or c == 1:
            return col
        if self.oblivious:
            return np.maximum(col, self.n[:, None] - self.chunks)
        eye = np.eye(c, dtype=bool)[None]
        rs = [np.where(eye, 0, t).sum(2) for t in ((self.fwd, self.fold) if directed else (self.fwd,))]
        return np.maximum(col, np.maximum.reduce(rs))

    def column(self, w: int, fold: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(k, c) values sent and received, and messages, by the column exchange of one SpMM of width w."""
        if self.oblivious:
            return self._bcast_column(w, fold)
        send, recv, ms, mr = self._pairs()
        return (recv * w, send * w, mr) if fold else (send * w, recv * w, ms)

    def inrow(self, w: int, fold: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(k, c) values sent and received, and messages, within the process rows."""
        k, c = self.shape.rows, self.shape.cols
        if c == 1:
            z = np.zeros((k, 1), np.int64)
            return z, z, z
        msgs = np.full((k, c), 2 * (c - 1) if self.combine == "reduce" else c - 1, np.int64)
        if self.combine == "gather":
            held = self.fold.sum(2) if fold else self._pairs()[1]  # partial sums / rows received from the column
            return (c - 1) * held * w, (held.sum(1, keepdims=True) - held) * w, msgs
        if self.oblivious:  # sparsity-oblivious: every row of the block
            t = np.broadcast_to(self.chunks[:, None, :], (k, c, c))
        else:
            t = self.fold if fold else self.fwd
        eye = np.eye(c, dtype=bool)[None]
        rs_send = np.where(eye, 0, t).sum(2)
        rs_recv = np.where(eye, 0, t).sum(1)
        ag_send = (c - 1) * self.chunks
        ag_recv = self.n[:, None] - self.chunks
        return (rs_send + ag_send) * w, (rs_recv + ag_recv) * w, msgs

    def call(self, w: int, fold: bool, itemsize: int) -> Call:
        """One SpMM of width w (a fold, or neither)."""
        cs, cr, cm = self.column(w, fold)
        rs, rr, rm = self.inrow(w, fold)
        zero = np.zeros(self.shape.ranks, np.int64)
        return Call({"rows": (cs * itemsize).ravel(), "inrow": (rs * itemsize).ravel(), "matrix": zero},
                    ((cr + rr) * itemsize).ravel(), (cm + rm).ravel())

    def nonzeros(self) -> tuple[np.ndarray, np.ndarray]:
        """(k, c) nonzeros each rank multiplies per column of H, and those of its own (overlapped) part."""
        c = self.shape.cols
        diag = np.diag(self.blocks).astype(float)
        own = diag[:, None] * self.chunks / np.maximum(self.n[:, None], 1)
        off = self.blocks - np.diag(diag.astype(np.int64))
        halo = np.stack([(off * (self.a == j)).sum(1) for j in range(c)], axis=1).astype(float)
        return own + halo, own


def _duplex(ch: Channel, msgs, send, recv):
    """A step in which every rank sends and receives at once (values, 4 bytes each)."""
    return ch.alpha * msgs + ch.beta * np.maximum(send, recv) * 4


class OneHalfD(AlgorithmCost):
    name = "1.5d"
    description = "a k x c grid, each block row on c ranks (mpirun -n k*c; --replication c)"
    kinds = KINDS
    replicates = True
    options = (REPLICATION, ROW_COMBINE)

    def replication(self, options: Mapping[str, Any]) -> int:
        return int(REPLICATION.value(options))

    def shape(self, ranks: int, parts: int, replication: int = 1) -> GridShape:
        return rows_by_columns(self.name, ranks, parts, replication)

    def shape_for(self, parts: int, replication: int = 1) -> GridShape:
        return GridShape(self.name, parts, replication)

    def plans(self, ranks: int, replications: list[int]) -> list[tuple[int, int]]:
        return [(c, ranks // c) for c in replications if c > 1 and ranks % c == 0]

    def no_grid(self, ranks: int, replications: list[int]) -> str:
        return (f"--algorithm {self.name} runs on P / c parts for a --replication c > 1 that divides P, and no c of "
                f"{','.join(map(str, replications))} divides {ranks}")

    def combine_for(self, job: Job, options: Mapping[str, Any]) -> str:
        return self.combine(job, ROW_COMBINE.value(options))

    def combine(self, job: Job, combine: str) -> str:
        """``reduce`` (partial sums reduced within the row, CAGNET's; the default of the layers that aggregate by
        a product) or ``gather`` (the received rows shared within the row; attention's, whose softmax over a
        row's neighbours is not a sum of partial products)."""
        if combine not in COMBINES:
            raise UserError(f"--row-combine {combine!r}: choose from {', '.join(COMBINES)}")
        if combine == "auto":
            return "reduce" if job.spec.by_product else "gather"
        if combine == "reduce" and not job.spec.by_product:
            raise UserError(f"--arch {job.arch} under --algorithm 1.5d needs --row-combine gather (its aggregation "
                            "is not a sum of partial products)")
        return combine

    def check(self, job: Job, minibatch: bool) -> None:
        super().check(job, minibatch)
        ex = EXCHANGES.get_spec(job.exchange)
        if ex.node_aware:
            raise UserError(f"--exchange {job.exchange} runs on --algorithm 1d only")
        if self.combine(job, job.combine) == "gather" and not ex.sparsity_aware:
            raise UserError("--row-combine gather (GAT's) needs a sparsity-aware --exchange (p2p or alltoallv) "
                            f"under --algorithm 1.5d ({job.exchange} is CAGNET's sparsity-oblivious 1.5D, which "
                            "reduces partial sums)")

    def _grid(self, cost: PartitionCost, job: Job) -> RowGrid:
        oblivious = not EXCHANGES.get_spec(job.exchange).sparsity_aware
        return RowGrid(cost, self.shape_for(cost.parts, job.replication), oblivious, self.combine(job, job.combine))

    def traffic(self, cost: PartitionCost, job: Job) -> dict[str, np.ndarray]:
        g = self._grid(cost, job)
        return sum_calls([g.call(w, fold, job.itemsize) for w, fold, _ in job.calls(cost.directed)], self.kinds)

    def _column_time(self, g: RowGrid, w: int, fold: bool, ch: Channel, collective: bool) -> np.ndarray:
        """(k, c) seconds of the column exchange of one SpMM."""
        k, c = g.shape.rows, g.shape.cols
        if g.oblivious:
            col = np.arange(k) % c
            per_col = np.array([float(np.sum(bcast_time(g.n[col == j] * w * 4, k, ch))) for j in range(c)])
            return np.broadcast_to(per_col[None, :], (k, c)).copy() if k > 1 else np.zeros((k, c))
        send, recv, _ = g.column(w, fold)
        ms, mr = g.column(1, fold)[2], g.column(1, not fold)[2]
        msgs = np.full((k, c), k - 1) if collective else np.maximum(ms, mr)
        return np.where(send + recv > 0, _duplex(ch, msgs, send, recv), 0.0)

    def _inrow_time(self, g: RowGrid, w: int, fold: bool, ch: Channel) -> np.ndarray:
        c = g.shape.cols
        if c == 1:
            return np.zeros((g.shape.rows, 1))
        send, recv, _ = g.inrow(w, fold)
        steps = 2 if g.combine == "reduce" else 1
        return _duplex(ch, steps * (c - 1), send, recv)

    def times(self, cost: PartitionCost, job: Job, machine: Machine) -> dict[str, Any]:
        g = self._grid(cost, job)
        ex = EXCHANGES.get_spec(job.exchange)
        shape = g.shape
        ch = machine.flat_path(shape.ranks)
        nnz, own = g.nonzeros()
        slow = machine.oversubscription(shape.ranks)
        spmm, comm = np.zeros(nnz.shape), np.zeros(nnz.shape)
        for w, fold, _ in job.calls(cost.directed):
            t_own = machine.compute.spmm * own * w * slow if ex.overlaps else np.zeros(nnz.shape)
            col = self._column_time(g, w, fold, ch, collective=ex.collective)
            comm += np.maximum(col, t_own) - t_own + self._inrow_time(g, w, fold, ch)
            spmm += machine.compute.spmm * nnz * w * slow
        rows = np.broadcast_to(g.n[:, None].astype(float), nnz.shape)
        dense = dense_seconds(rows, job, machine, shape.ranks)
        comm += gradient_allreduce(job.dims, machine, shape.ranks)
        total = (spmm + dense + comm).ravel()
        return {"compute": (spmm + dense).ravel(), "comm": comm.ravel(), "total": total, "epoch": float(total.max())}

    def memory(self, cost: PartitionCost, job: Job) -> np.ndarray:
        c = job.replication
        n = np.repeat(cost.rows.astype(np.int64), c)
        load = np.repeat(cost.load.astype(np.int64), c)
        v = cost.volume.astype(np.int64).copy()
        np.fill_diagonal(v, 0)
        g = self._grid(cost, job)
        if self.combine(job, job.combine) == "gather":
            halo = np.repeat(v.sum(0), c)
        else:
            halo = n + g.column(1, False)[1].ravel()
        return np.asarray(rank_bytes(Held(n, load, halo, sent=g.packed(cost.directed).ravel()), job))
