"""``node``: the node-aware exchange. For each pair of nodes (A, B), the rows
that any rank of B needs from A cross the network once, in one message,
then reach their ranks inside B.

One expand, in three stages (the trainer's ``trainer/exchanges/node.py``
does exactly this, and :func:`node_messages` counts it):

0. inside each node: rows a rank of the same node needs go to it directly
   (as p2p); and every rank r of A sends the rows of its own that node B
   needs (each once, however many ranks of B need it) to A's relay sender
   for B, ``s(A, B)`` (:meth:`.base.Layout.relay`; nothing when r is it);
1. across the network: ``s(A, B)`` sends all of A's rows that B needs, in
   one message, to B's relay receiver ``t(A, B)``;
2. inside B: ``t(A, B)`` sends each rank q of B the rows of A that q needs
   (the relay's rows in the order of q's halo).

The fold runs the same messages back (partial sums: q's to t, added there
row by row, the sums to s, then each owner's share to it). The relays of
a node's pairs are spread over its ranks, so a node's inter-node messages
per exchange are at most nodes - 1.
"""

from __future__ import annotations

import numpy as np

from ..partition import PartitionCost
from .base import ExchangeCost, Layout, Messages


def node_messages(pair_rows: np.ndarray, pair_dest: np.ndarray, owner: np.ndarray, layout: Layout) -> Messages:
    """The messages of one node-aware expand.

    Parameters
    ----------
    pair_rows, pair_dest : (m,) int64, every distinct (row, receiving rank) of the flat exchange
    owner : (n,) int64, the rank owning each row
    layout : the job's nodes
    """
    P = layout.ranks
    src = np.asarray(owner, np.int64)[pair_rows]
    dst = np.asarray(pair_dest, np.int64)
    na, nb = layout.node_of(src), layout.node_of(dst)
    local = na == nb
    parts = [Messages.of(*_count(src[local], dst[local], P), stage=0)]
    # rows of A that node B needs: each (row, B) once
    key = np.unique(pair_rows[~local] * layout.nodes + nb[~local])
    rows, b = key // layout.nodes, key % layout.nodes
    r = np.asarray(owner, np.int64)[rows]
    a = layout.node_of(r)
    s, t = layout.relay(a, b)
    gather = r != s
    parts.append(Messages.of(*_count(r[gather], s[gather], P), stage=0))
    parts.append(Messages.of(*_count(s, t, P), stage=1))
    # inside B: t(A, B) sends q the rows of A that q needs
    q = dst[~local]
    _, t_q = layout.relay(na[~local], nb[~local])
    scatter = q != t_q
    parts.append(Messages.of(*_count(t_q[scatter], q[scatter], P), stage=2))
    return Messages.concat(parts)


def _count(src: np.ndarray, dst: np.ndarray, P: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One message per distinct (src, dst), carrying as many rows as the pairs name."""
    counts = np.bincount(np.asarray(src, np.int64) * P + np.asarray(dst, np.int64), minlength=P * P)
    hit = np.flatnonzero(counts)
    return hit // P, hit % P, counts[hit]


class Node(ExchangeCost):
    name = "node"
    description = ("node-aware: the rows a remote node needs cross the network once per node pair, in one message, "
                   "then reach their ranks inside the node")
    overlaps = True
    node_aware = True

    def messages(self, cost: PartitionCost, layout: Layout) -> Messages:
        rows, dest = cost.pairs()
        return node_messages(rows, dest, np.asarray(cost.part, np.int64), layout)
