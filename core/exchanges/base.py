"""What every exchange's cost model shares: nodes of ranks (:class:`Layout`),
one exchange as a list of messages (:class:`Messages`), their bytes by kind
(intra-node and inter-node), and their time on a machine.

An exchange moves rows of H for one SpMM: an *expand* sends own rows to the
ranks that need them; a *fold* (the transpose of a directed Â, GAT's
backward) sends partial sums of received rows back to their owners: the
expand's messages reversed. Each exchange's cost module says which messages
one expand sends (:meth:`ExchangeCost.messages`, in rows); everything else
(bytes by kind per rank, time) follows from that list, so the prediction and
the trainer's counters count the same thing.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from ..contention import stage_terms
from ..machine import Machine
from ..options import Option
from ..partition import PartitionCost

KINDS = ("intra", "inter")  # a message between ranks of one node, or between nodes


@dataclass(frozen=True)
class Layout:
    """P ranks on nodes of ``ranks_per_node`` consecutive ranks (the last node may hold fewer).

    ``ranks_per_node`` 1: every rank on a node of its own (every message inter-node).
    """

    ranks: int
    ranks_per_node: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "ranks_per_node", max(1, min(int(self.ranks_per_node), int(self.ranks))))

    @property
    def nodes(self) -> int:
        return -(-self.ranks // self.ranks_per_node)

    def node_of(self, ranks=None) -> np.ndarray:
        """The node of each rank (of ``ranks``, default all), int64."""
        r = np.arange(self.ranks, dtype=np.int64) if ranks is None else np.asarray(ranks, np.int64)
        return r // self.ranks_per_node

    def first(self, node) -> np.ndarray:
        return np.asarray(node, np.int64) * self.ranks_per_node

    def size(self, node) -> np.ndarray:
        node = np.asarray(node, np.int64)
        return np.minimum(self.ranks_per_node, self.ranks - node * self.ranks_per_node)

    def relay(self, a, b) -> tuple[np.ndarray, np.ndarray]:
        """The ranks that carry node ``a``'s rows to node ``b`` (arrays of nodes): the sender (rank ``b mod
        size(a)`` of a) and the receiver (rank ``a mod size(b)`` of b), so a node's relays are spread over its
        ranks. The trainer's node exchange uses the same choice."""
        a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
        return self.first(a) + b % self.size(a), self.first(b) + a % self.size(b)


@dataclass(frozen=True)
class Messages:
    """The messages of one expand, one entry each: sender, receiver, rows carried, stage (stages run one
    after another; a flat exchange has one). (m,) int64 arrays."""

    src: np.ndarray
    dst: np.ndarray
    rows: np.ndarray
    stage: np.ndarray

    @classmethod
    def of(cls, src, dst, rows, stage=0) -> Messages:
        src = np.asarray(src, np.int64)
        keep = np.asarray(rows) > 0
        stage_ = np.broadcast_to(np.asarray(stage, np.int64), src.shape)
        return cls(src[keep], np.asarray(dst, np.int64)[keep], np.asarray(rows, np.int64)[keep], stage_[keep].copy())

    @classmethod
    def concat(cls, parts: list[Messages]) -> Messages:
        return cls(*(np.concatenate([getattr(p, f) for p in parts]).astype(np.int64)
                     for f in ("src", "dst", "rows", "stage")))

    def fold(self) -> Messages:
        """The fold's messages: the expand's reversed (receivers send back, stages in reverse order)."""
        last = int(self.stage.max()) if self.stage.size else 0
        return Messages(self.dst, self.src, self.rows, last - self.stage)

    @property
    def stages(self) -> int:
        return int(self.stage.max()) + 1 if self.stage.size else 1


def per_rank(values: np.ndarray, ranks: np.ndarray, P: int) -> np.ndarray:
    return np.bincount(ranks, weights=values, minlength=P).astype(np.int64)


def traffic(msgs: Messages, row_bytes: int, layout: Layout) -> dict[str, np.ndarray]:
    """Bytes and messages of every rank, (P,) int64 each: ``bytes_sent``, ``msgs_sent``, ``bytes_recv``,
    and by kind ``intra_bytes``, ``inter_bytes``, ``intra_msgs``, ``inter_msgs`` (sent), as the trainer
    counts them. ``row_bytes``: bytes of one row on the wire (width x itemsize)."""
    P = layout.ranks
    nbytes = msgs.rows * int(row_bytes)
    inter = layout.node_of(msgs.src) != layout.node_of(msgs.dst)
    ones = np.ones(msgs.src.size, np.int64)
    out = {"bytes_sent": per_rank(nbytes, msgs.src, P), "msgs_sent": per_rank(ones, msgs.src, P),
           "bytes_recv": per_rank(nbytes, msgs.dst, P)}
    for kind, sel in (("intra", ~inter), ("inter", inter)):
        out[f"{kind}_bytes"] = per_rank(nbytes[sel], msgs.src[sel], P)
        out[f"{kind}_msgs"] = per_rank(ones[sel], msgs.src[sel], P)
    return out


def stage_time(msgs: Messages, row_bytes: int, machine: Machine, P: int, latency_msgs: np.ndarray | None = None
               ) -> np.ndarray:
    """(P,) seconds each rank spends in one stage of messages on ``machine``.

    Per message, the latency of its path (intra- or inter-node on the machine's nodes, not the job's virtual
    ones) adds up on both ends; the bytes overlap: the slowest of each path's bytes at its rate (the larger
    of what the rank sends and receives, full duplex; inter-node out and in at one rank's injection rate) and
    of its inter-node bytes out and in through its node's link, at the share the machine's contention model
    gives it while the node's other ranks also send (:mod:`shgcn.core.contention`, which has every term).
    ``latency_msgs`` (P,): count this many inter-node latencies per rank instead (a collective's steps)."""
    return stage_terms(msgs, row_bytes, machine, P, latency_msgs)["total"]


class ExchangeCost(ABC):
    """An exchange's spec and cost model (an instance listed in :data:`shgcn.core.exchanges.EXCHANGES`).

    Attributes
    ----------
    name, description : as ``--exchange`` lists them
    options : its own command-line options (:class:`~shgcn.core.options.Option`): they reach its constructor
    sparsity_aware : sends only the rows a rank needs (False: whole blocks, CAGNET's oblivious baseline)
    overlaps : the own-column product runs while the rows travel
    wire_16bit : may send 16-bit rows (``--exchange-dtype bfloat16 | float16``)
    node_aware : crosses the network once per node pair (needs the row-level pairs of the partition)
    collective : one collective call: every rank takes P-1 steps, no overlap (alltoallv)
    baseline : the exchange every prediction is compared with (``vs_bcast``: CAGNET's sparsity-oblivious 1D)
    """

    name: str = ""
    description: str = ""
    options: tuple[Option, ...] = ()
    sparsity_aware: bool = True
    overlaps: bool = False
    wire_16bit: bool = True
    node_aware: bool = False
    collective: bool = False
    baseline: bool = False

    @abstractmethod
    def messages(self, cost: PartitionCost, layout: Layout) -> Messages:
        """The messages of one expand of one row per message row (scale by the row's bytes)."""

    def time(self, msgs: Messages, row_bytes: int, machine: Machine, layout: Layout, cost: PartitionCost
             ) -> np.ndarray:
        """(P,) seconds each rank waits on one exchange (before any overlap with the local product):
        its stages one after another, a stage of a staged exchange as long as the slowest rank of the
        job's node (the relays wait for their node's ranks)."""
        P = layout.ranks
        delay = machine.sync_delay(P)  # an oversubscribed node: each stage waits a scheduling slice
        if msgs.stages == 1:
            return stage_time(msgs, row_bytes, machine, P) + delay
        node = layout.node_of()
        total = np.zeros(P)
        for s in range(msgs.stages):
            sel = msgs.stage == s
            t = stage_time(Messages(msgs.src[sel], msgs.dst[sel], msgs.rows[sel], msgs.stage[sel]), row_bytes,
                           machine, P)
            slowest = np.zeros(layout.nodes)
            np.maximum.at(slowest, node, t)
            total += slowest[node] + delay
        return total
