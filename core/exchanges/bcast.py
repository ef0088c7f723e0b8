"""``bcast``: CAGNET's sparsity-oblivious 1D algorithm, the baseline: every
rank broadcasts its whole block of H in turn and every rank keeps the rows
it needs; the fold is an MPI Reduce of a dense block onto each owner.

Its messages are counted as the trainer counts them: a root sends its n_q
rows to each of the P-1 others; its time is the broadcast's (scatter +
allgather) among all P ranks, once per block."""

from __future__ import annotations

import numpy as np

from ..collectives import bcast_time
from ..machine import Machine
from ..partition import PartitionCost
from .base import ExchangeCost, Layout, Messages


class Bcast(ExchangeCost):
    name = "bcast"
    description = "CAGNET's sparsity-oblivious 1D: every rank broadcasts its whole block (the baseline)"
    sparsity_aware = False
    baseline = True
    wire_16bit = False  # its fold is an MPI Reduce, which sums in the wire type

    def messages(self, cost: PartitionCost, layout: Layout) -> Messages:
        P = cost.parts
        src, dst = np.nonzero(~np.eye(P, dtype=bool))
        return Messages.of(src, dst, np.asarray(cost.rows, np.int64)[src])

    def time(self, msgs: Messages, row_bytes: int, machine: Machine, layout: Layout, cost: PartitionCost
             ) -> np.ndarray:
        P = layout.ranks
        if P == 1:
            return np.zeros(1)
        t = float(np.sum(bcast_time(np.asarray(cost.rows, float) * row_bytes, P, machine.flat_path(P))))
        return np.full(P, t + P * machine.sync_delay(P))  # a broadcast per root
