"""``2d``: SUMMA on an s x s grid over an s-part store, sparsity-oblivious as
CAGNET's 2D: the baseline the communication-avoiding papers compare against.

Bytes by kind: ``rows`` (the broadcast of H's column slices down the grid
column), ``inrow`` (the allgather of the output's slices along the row),
``matrix`` (the broadcast of Â's blocks along the row: CSR, int32 row
pointers, int32 columns, float32 values, one message). Per SpMM of width w,
stage k: block (i, k) of Â along row i and slice j of H_k down grid column
j, each a broadcast among s ranks, then the allgather along the row. The
product counts a 1/s share of the block row's nonzeros; the dense work is
replicated along the row.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..archs import NORM
from ..collectives import bcast_time
from ..costs import Job
from ..errors import UserError
from ..machine import Channel, Machine
from ..memory import Held, rank_bytes
from ..partition import PartitionCost
from .base import AlgorithmCost, Call, dense_seconds, gradient_allreduce, sum_calls
from .grid import GridShape, block_nnz, slice_bounds

KINDS = ("rows", "inrow", "matrix")


class Blocks:
    """What the byte counts of one partition on an s x s grid need: rows per part, Â's (s, s) block nonzeros."""

    def __init__(self, cost: PartitionCost):
        if cost.graph is None or cost.part is None:
            raise ValueError("the 2D byte counts need the partition's graph and part vector")
        self.s = cost.parts
        self.n = cost.rows.astype(np.int64)
        self.blocks = block_nnz(cost.graph, cost.part, self.s)

    def of(self, transposed: bool, operator: str) -> np.ndarray:
        """(s, s) nonzeros of the operator's blocks (Âᵀ's are Â's transposed; the pattern has no self loops)."""
        b = self.blocks.T if transposed else self.blocks
        return b if operator == NORM else b - np.diag(self.n)

    def call(self, w: int, transposed: bool, operator: str, itemsize: int) -> Call:
        """One 2D SpMM of width w: bytes per rank (P,), in rank order."""
        s = self.s
        b = self.of(transposed, operator)
        wj = np.diff(slice_bounds(w, s))[None, :]  # (1, s): the columns of grid column j
        n = self.n[:, None]
        mat = 4 * (n + 1) + 8 * b  # bytes of block (i, j) on the wire
        rows = n * wj * (s - 1) * itemsize  # the column broadcast of H's slice (root: its row's block)
        recv = ((self.n.sum() - n) * wj + n * (w - wj)) * itemsize + mat.sum(1, keepdims=True) - mat
        return Call({"rows": rows.ravel(), "inrow": rows.ravel().copy(), "matrix": (mat * (s - 1)).ravel()},
                    recv.ravel(), np.full(s * s, 3 * (s - 1), np.int64))

    def time(self, w: int, transposed: bool, operator: str, ch: Channel) -> np.ndarray:
        """(s, s) seconds of one SpMM's communication."""
        s = self.s
        b = self.of(transposed, operator)
        wj = np.diff(slice_bounds(w, s))
        mat = 4 * (self.n[:, None] + 1) + 8 * b
        out = np.zeros((s, s))
        for k in range(s):  # stage k: block (i, k) along row i, slice j of H_k along column j
            out += np.asarray(bcast_time(mat[:, k], s, ch))[:, None] + \
                np.asarray(bcast_time(self.n[k] * wj * 4, s, ch))[None, :]
        n = self.n[:, None]
        sent, recv = n * wj[None, :] * (s - 1), n * (w - wj[None, :])
        return out + ch.alpha * (s - 1) + ch.beta * np.maximum(sent, recv) * 4


class TwoD(AlgorithmCost):
    name = "2d"
    description = "SUMMA on an s x s grid over an s-part store (mpirun -n s*s; sparsity-oblivious, CAGNET's 2D)"
    kinds = KINDS
    own_exchange = "summa"

    def no_grid(self, ranks: int, replications: list[int]) -> str:
        return f"--algorithm {self.name} runs on a square number of ranks, and {ranks} is not one"

    def shape(self, ranks: int, parts: int, replication: int = 1) -> GridShape:
        self.no_replication(replication)
        s = math.isqrt(ranks)
        if s * s != ranks or parts != s:
            raise UserError(f"--algorithm 2d runs on a square grid: P = s x s ranks over a store of s parts; "
                            f"the store has {parts} part{'s' if parts != 1 else ''} and the job {ranks} "
                            f"rank{'s' if ranks != 1 else ''}; run with mpirun -n {parts * parts}")
        return GridShape(self.name, s, s)

    def shape_for(self, parts: int, replication: int = 1) -> GridShape:
        return GridShape(self.name, parts, parts)

    def plans(self, ranks: int, replications: list[int]) -> list[tuple[int, int]]:
        s = math.isqrt(ranks)
        return [(1, s)] if s * s == ranks else []

    def check(self, job: Job, minibatch: bool) -> None:
        super().check(job, minibatch)
        if not job.spec.by_product:
            raise UserError(f"--arch {job.arch} does not run on --algorithm 2d (SUMMA multiplies by a fixed matrix; "
                            "its aggregation is not one): use 1d or 1.5d")

    def traffic(self, cost: PartitionCost, job: Job) -> dict[str, np.ndarray]:
        g = Blocks(cost)
        op = job.spec.operator
        return sum_calls([g.call(w, tr, op, job.itemsize) for w, _, tr in job.calls(cost.directed)], self.kinds)

    def times(self, cost: PartitionCost, job: Job, machine: Machine) -> dict[str, Any]:
        g = Blocks(cost)
        s = g.s
        P = s * s
        ch = machine.flat_path(P)
        nnz = np.broadcast_to(g.blocks.sum(1, keepdims=True) / s, (s, s)).astype(float)
        slow = machine.oversubscription(P)
        spmm, comm = np.zeros((s, s)), np.zeros((s, s))
        for w, _, tr in job.calls(cost.directed):
            comm += g.time(w, tr, job.spec.operator, ch)
            spmm += machine.compute.spmm * nnz * w * slow
        rows = np.broadcast_to(g.n[:, None].astype(float), (s, s))
        dense = dense_seconds(rows, job, machine, P)
        comm += gradient_allreduce(job.dims, machine, P)
        total = (spmm + dense + comm).ravel()
        return {"compute": (spmm + dense).ravel(), "comm": comm.ravel(), "total": total, "epoch": float(total.max())}

    def memory(self, cost: PartitionCost, job: Job) -> np.ndarray:
        g = Blocks(cost)
        s = g.s
        n = np.repeat(cost.rows.astype(np.int64), s)
        return np.asarray(rank_bytes(Held(n, g.blocks.ravel(), 0, np.repeat(g.blocks.max(1), s)), job))
