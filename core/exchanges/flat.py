"""The flat sparsity-aware exchanges: ``p2p`` (the paper's: non-blocking
point-to-point, the own-column product overlapping the messages) and
``alltoallv`` (the same rows through one collective). One message from
every rank to every rank that needs some of its rows: ``volume[r, q]`` rows
from r to q per expand (the partition's volume matrix)."""

from __future__ import annotations

import numpy as np

from ..machine import Machine
from ..partition import PartitionCost
from .base import ExchangeCost, Layout, Messages, stage_time


def volume_messages(cost: PartitionCost) -> Messages:
    """A message from r to q of ``volume[r, q]`` rows, for every nonzero off-diagonal entry."""
    v = np.asarray(cost.volume, np.int64).copy()
    np.fill_diagonal(v, 0)
    src, dst = np.nonzero(v)
    return Messages.of(src, dst, v[src, dst])


class P2P(ExchangeCost):
    name = "p2p"
    description = "Isend/Irecv of the rows each neighbour needs, the local product while they travel (the paper's)"
    overlaps = True

    def messages(self, cost: PartitionCost, layout: Layout) -> Messages:
        return volume_messages(cost)


class AllToAllV(ExchangeCost):
    name = "alltoallv"
    description = "the same rows through one Alltoallv (a sparsity-aware collective; MPICH's takes P-1 steps)"
    collective = True

    def messages(self, cost: PartitionCost, layout: Layout) -> Messages:
        return volume_messages(cost)

    def time(self, msgs: Messages, row_bytes: int, machine: Machine, layout: Layout, cost: PartitionCost
             ) -> np.ndarray:
        P = layout.ranks
        steps = np.full(P, P - 1) if P > 1 else np.zeros(P)
        return stage_time(msgs, row_bytes, machine, P, latency_msgs=steps) + machine.sync_delay(P)
