"""Exact bytes of one training step under ``--algorithm 1.5d`` and ``2d``
(the layouts of :mod:`.grid`), by kind, as the trainer counts them.

Kinds (the run log's ``bytes_split``):

- ``rows``: rows of H (or partial sums) exchanged along a grid column: the
  1.5D column exchange (p2p, alltoallv, or CAGNET's broadcast of whole
  blocks), the 2D broadcast of H's column slices;
- ``inrow``: within a process row: the 1.5D reduce-scatter of partial sums
  (only the rows a partial touches; every row with ``--exchange bcast``)
  followed by the allgather of the reduced chunks, or the 1.5D gather of
  received rows (GAT), or the 2D allgather of the output slices;
- ``matrix``: the 2D broadcast of Â's blocks along the process row (CSR:
  int32 row pointers, int32 columns, float32 values, in one message).

Messages: a broadcast from a root counts size-1 messages at the root; the
in-row steps send one message to each other rank of the row, empty or not.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .costs import exchanges
from .grid import GridShape, assign_pairs, block_nnz, chunk_bounds, row_supports, slice_bounds

KINDS = ("rows", "inrow", "matrix")


@dataclass
class Call:
    """One SpMM's bytes per rank (P,), by kind, and messages."""

    sent: dict[str, np.ndarray]
    recv: np.ndarray
    msgs: np.ndarray

    @property
    def total(self) -> np.ndarray:
        return sum(self.sent.values(), np.zeros_like(self.recv))


class GridCosts:
    """What the byte counts of one partition on one grid need, computed once.

    Parameters
    ----------
    cost : PartitionCost with ``graph`` and ``part`` (Â's pattern and the partition)
    shape : the grid
    exchange : ``p2p``, ``alltoallv`` or ``bcast`` (the 1.5D column exchange)
    combine : ``reduce`` or ``gather`` (1.5D)
    """

    def __init__(self, cost, shape: GridShape, exchange: str = "p2p", combine: str = "reduce"):
        if cost.graph is None or cost.part is None:
            raise ValueError("the 1.5D and 2D byte counts need the partition's graph and part vector")
        self.cost, self.shape, self.exchange, self.combine = cost, shape, exchange, combine
        k, c = shape.rows, shape.cols
        self.n = cost.rows.astype(np.int64)
        v = cost.volume.astype(np.int64).copy()
        np.fill_diagonal(v, 0)
        self.v = v
        self.blocks = block_nnz(cost.graph, cost.part, k)
        if shape.algorithm == "1.5d":
            self.a = assign_pairs(v, c, oblivious=exchange == "bcast")
            self.chunks = np.diff(np.stack([chunk_bounds(int(m), c) for m in self.n]), axis=1)  # (k, c)
            self.fwd, self.fold = row_supports(cost.graph, cost.part, k, self.a, c)

    # ------------------------------------------------------------ 1.5D

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

    def column(self, w: int, fold: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(k, c) values sent and received, and messages, by the column exchange of one SpMM of width w."""
        if self.exchange == "bcast":
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
            if fold:
                held = self.fold.sum(2)  # the fold's support: partial sums received from the column
            else:
                held = self._pairs()[1]  # the rows received from the column
            return (c - 1) * held * w, (held.sum(1, keepdims=True) - held) * w, msgs
        if self.exchange == "bcast":  # sparsity-oblivious: every row of the block
            t = np.broadcast_to(self.chunks[:, None, :], (k, c, c))
        else:
            t = self.fold if fold else self.fwd
        eye = np.eye(c, dtype=bool)[None]
        rs_send = np.where(eye, 0, t).sum(2)
        rs_recv = np.where(eye, 0, t).sum(1)
        ag_send = (c - 1) * self.chunks
        ag_recv = self.n[:, None] - self.chunks
        return (rs_send + ag_send) * w, (rs_recv + ag_recv) * w, msgs

    # ------------------------------------------------------------ 2D

    def summa(self, w: int, transposed: bool, op: str, itemsize: int) -> Call:
        """One 2D SpMM of width w: bytes per rank (P,), in rank order."""
        s = self.shape.rows
        b = self.blocks.T if transposed else self.blocks  # Âᵀ's blocks are Â's transposed
        if op != "norm":
            b = b - np.diag(self.n)  # the adjacency pattern: Â's blocks without the self loops
        wj = np.diff(slice_bounds(w, s))[None, :]  # (1, s): the columns of grid column j
        n = self.n[:, None]
        mat = 4 * (n + 1) + 8 * b  # bytes of block (i, j) on the wire
        rows = n * wj * (s - 1) * itemsize  # the column broadcast of H's slice (root: its row's block)
        recv = ((self.n.sum() - n) * wj + n * (w - wj)) * itemsize + mat.sum(1, keepdims=True) - mat
        return Call({"rows": rows.ravel(), "inrow": rows.ravel().copy(), "matrix": (mat * (s - 1)).ravel()},
                    recv.ravel(), np.full(s * s, 3 * (s - 1), np.int64))

    # ------------------------------------------------------------ a step

    def call(self, w: int, fold: bool, transposed: bool, op: str, itemsize: int) -> Call:
        """One SpMM of width w (a fold, or Âᵀ's product, or neither)."""
        if self.shape.algorithm == "2d":
            return self.summa(w, transposed, op, itemsize)
        cs, cr, cm = self.column(w, fold)
        rs, rr, rm = self.inrow(w, fold)
        zero = np.zeros(self.shape.ranks, np.int64)
        return Call({"rows": (cs * itemsize).ravel(), "inrow": (rs * itemsize).ravel(), "matrix": zero},
                    ((cr + rr) * itemsize).ravel(), (cm + rm).ravel())


OPS = {"gcn": "norm", "sage": "mean", "gin": "sum", "gat": "norm"}


def step_calls(g: GridCosts, dims: list[int], arch: str = "gcn", heads: list[int] | None = None,
               itemsize: int = 4) -> list[Call]:
    """Every SpMM of one training step in the trainer's order (forward layers,
    then backward from the last layer), each with its bytes per rank."""
    fwd, bwd = exchanges(arch, dims, g.cost.directed, heads)
    op = OPS[arch]
    out = [(w, f, False) for w, f in fwd] + [(w, f, True) for w, f in reversed(bwd)]
    return [g.call(w, fold, transposed, op, itemsize) for w, fold, transposed in out]


def grid_traffic(cost, dims: list[int], shape: GridShape, exchange: str = "p2p", arch: str = "gcn",
                 heads: list[int] | None = None, itemsize: int = 4, combine: str = "reduce") -> dict[str, np.ndarray]:
    """Bytes and messages each rank sends in one training step, as
    :func:`shgcn.core.epoch.rank_traffic` (``bytes_sent``, ``msgs_sent``,
    ``bytes_recv``, (P,) each) plus the split ``rows_bytes``, ``inrow_bytes``,
    ``matrix_bytes`` and ``calls`` ((calls, P): the bytes of every SpMM)."""
    g = GridCosts(cost, shape, exchange, combine)
    calls = step_calls(g, dims, arch, heads, itemsize)
    out = {f"{kind}_bytes": np.sum([c.sent[kind] for c in calls], axis=0).astype(np.int64) for kind in KINDS}
    out["bytes_sent"] = sum(out[f"{kind}_bytes"] for kind in KINDS)
    out["msgs_sent"] = np.sum([c.msgs for c in calls], axis=0).astype(np.int64)
    out["bytes_recv"] = np.sum([c.recv for c in calls], axis=0).astype(np.int64)
    out["calls"] = np.stack([c.total for c in calls]).astype(np.int64)
    return out
