"""``1d``: a rank per part (the paper's 1D row partitioning): rank r holds
block r of Â, H and the gradients, and every SpMM moves rows through the
job's exchange (:data:`shgcn.core.exchanges.EXCHANGES`: p2p, alltoallv,
bcast, node).

Bytes: each SpMM is one exchange of its width, an expand or a fold (the
expand's messages reversed); by kind ``intra`` and ``inter`` on the job's
nodes (``Job.ranks_per_node``). Time per SpMM on rank r: the exchange's time
on the machine, overlapped with the product of r's own columns when the
exchange overlaps (``max(comm, t_own) + t_rest``), else added to the whole
product; then the dense work and the allreduce of the weight gradients.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..costs import Job
from ..errors import UserError
from ..exchanges import EXCHANGES, Layout, Messages, traffic
from ..machine import Machine
from ..memory import Held, rank_bytes
from ..partition import PartitionCost
from .base import AlgorithmCost, dense_seconds, gradient_allreduce
from .grid import GridShape, rows_by_columns


def layout_of(job: Job, parts: int) -> Layout:
    """The job's nodes over ``parts`` ranks (``ranks_per_node`` 0 or 1: a node per rank)."""
    return Layout(parts, job.ranks_per_node or 1)


def expand_messages(cost: PartitionCost, job: Job) -> Messages:
    """The messages of one expand of the job's exchange (rows per message)."""
    return EXCHANGES.get_spec(job.exchange).messages(cost, layout_of(job, cost.parts))


class OneD(AlgorithmCost):
    name = "1d"
    description = "a rank per part (the paper's 1D row partition)"
    minibatch = True
    wire_16bit = True

    def shape(self, ranks: int, parts: int, replication: int = 1) -> GridShape:
        self.no_replication(replication)
        return rows_by_columns(self.name, ranks, parts, replication)

    def shape_for(self, parts: int, replication: int = 1) -> GridShape:
        return GridShape(self.name, parts, 1)

    def plans(self, ranks: int, replications: list[int]) -> list[tuple[int, int]]:
        return [(1, ranks)]

    def check(self, job: Job, minibatch: bool) -> None:
        super().check(job, minibatch)
        ex = EXCHANGES.get_spec(job.exchange)
        if job.itemsize != 4 and not ex.wire_16bit:
            raise UserError(f"a 16-bit --exchange-dtype needs another --exchange than {job.exchange} (its fold "
                            "sums in the wire type)")

    def traffic(self, cost: PartitionCost, job: Job) -> dict[str, np.ndarray]:
        expand = expand_messages(cost, job)
        fold = expand.fold()
        layout = layout_of(job, cost.parts)
        per_call = [traffic(fold if f else expand, w * job.itemsize, layout) for w, f, _ in job.calls(cost.directed)]
        out = {k: np.sum([c[k] for c in per_call], axis=0).astype(np.int64) for k in per_call[0]}
        out["calls"] = np.stack([c["bytes_sent"] for c in per_call]).astype(np.int64)
        return out

    def times(self, cost: PartitionCost, job: Job, machine: Machine) -> dict[str, Any]:
        ex = EXCHANGES.get_spec(job.exchange)
        layout = layout_of(job, cost.parts)
        expand = ex.messages(cost, layout)
        fold = expand.fold()
        P = cost.parts
        slow = machine.oversubscription(P)
        load = cost.load.astype(float)
        own = cost.own.astype(float) if cost.own is not None and ex.overlaps else np.zeros_like(load)
        spmm, comm = np.zeros(P), np.zeros(P)
        for w, f, _ in job.calls(cost.directed):
            t_comm = ex.time(fold if f else expand, w * job.itemsize, machine, layout, cost) if P > 1 else np.zeros(P)
            t_own = machine.compute.spmm * own * w * slow
            t_rest = machine.compute.spmm * (load - own) * w * slow
            step = np.maximum(t_comm, t_own) + t_rest  # own = 0 without overlap: comm + the whole SpMM
            spmm += t_own + t_rest
            comm += step - t_own - t_rest
        dense = dense_seconds(cost.rows.astype(float), job, machine, P)
        comm += gradient_allreduce(job.dims, machine, P)
        total = spmm + dense + comm
        return {"compute": spmm + dense, "comm": comm, "total": total, "epoch": float(total.max())}

    def memory(self, cost: PartitionCost, job: Job) -> np.ndarray:
        v = cost.volume.astype(np.int64).copy()
        np.fill_diagonal(v, 0)
        return np.asarray(rank_bytes(Held(cost.rows, cost.load, v.sum(0), sent=v.sum(1)), job))
