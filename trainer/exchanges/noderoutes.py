"""The routes of the node-aware exchange (:mod:`.node`): which rows each rank
sends, relays and scatters, for the full-batch plan and for any batch's.

Node A's rows that node B needs travel ``r -> s(A, B) -> t(A, B) -> q``
(:class:`Nodes`: the relay sender is rank ``B mod |A|`` of A, the relay
receiver rank ``A mod |B|`` of B, as :meth:`shgcn.core.exchanges.Layout.relay`).
At setup (:func:`relay_tables`, collective) each relay learns its relay's
rows (global new ids, by owner then id) and, for each row, the rows of B with
a nonzero in its column (its *pins*). A batch keeps a relay row when it and
one of its pins are in the batch, the rule by which a rank's own batch plan
keeps a row (:mod:`shgcn.trainer.minibatch`), so every rank derives the same
routes without exchanging indices (:func:`routes`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from shgcn.core.csr import segments

from ..plan import CommPlan

_SETUP_TAG = 71


@dataclass(frozen=True)
class Nodes:
    """The job's nodes: ``node[r]`` for every rank, and this rank."""

    node: np.ndarray
    me: int

    @property
    def mine(self) -> int:
        return int(self.node[self.me])

    def members(self, a: int) -> np.ndarray:
        return np.flatnonzero(self.node == a)

    def count(self) -> int:
        return int(self.node.max()) + 1 if self.node.size else 0

    def sender(self, a: int, b: int) -> int:
        """The rank of node a that sends a's rows to node b."""
        m = self.members(a)
        return int(m[b % m.size])

    def receiver(self, a: int, b: int) -> int:
        """The rank of node b that receives a's rows."""
        m = self.members(b)
        return int(m[a % m.size])


@dataclass(frozen=True)
class Relay:
    """One node pair's relay: its rows (global new ids, sorted: by owner, then id) and their pins (CSR:
    ``pins[ptr[i]:ptr[i+1]]`` are the global ids of the receiving node's rows that need row i)."""

    rows: np.ndarray
    ptr: np.ndarray
    pins: np.ndarray

    @classmethod
    def empty(cls) -> Relay:
        return cls(np.zeros(0, np.int64), np.zeros(1, np.int64), np.zeros(0, np.int64))


@dataclass
class Routes:
    """One plan's routes at this rank (positions index the rank's rows as the plan numbers them).

    direct_send / direct_recv : the plan's own entries for ranks of this node
    gather_send : per relay sender s != me: [(B, positions)] of my rows that remote node B needs
    own_relay : per B I relay myself: positions of my rows
    gather_recv : as a relay sender, per rank r != me of my node: [(B, rows)] it sends me
    relay_out : as a relay sender: [(B, t, [(r, rows)...])] the relays I send
    relay_in : as a relay receiver: [(A, s, rows)] the relays I receive
    scatter_send : as a relay receiver, per rank q != me of my node: [(A, positions in relay A)]
    scatter_own : as a relay receiver: [(A, positions)] of the rows I need myself
    scatter_recv : per relay receiver t: [(A, rows)] the rows of remote node A it sends me
    sender_node : the node of every sender of the plan
    """

    direct_send: list[tuple[int, np.ndarray]] = field(default_factory=list)
    direct_recv: list[tuple[int, int]] = field(default_factory=list)
    gather_send: dict[int, list[tuple[int, np.ndarray]]] = field(default_factory=dict)
    own_relay: dict[int, np.ndarray] = field(default_factory=dict)
    gather_recv: dict[int, list[tuple[int, int]]] = field(default_factory=dict)
    relay_out: list[tuple[int, int, list[tuple[int, int]]]] = field(default_factory=list)
    relay_in: list[tuple[int, int, int]] = field(default_factory=list)
    scatter_send: dict[int, list[tuple[int, np.ndarray]]] = field(default_factory=dict)
    scatter_own: list[tuple[int, np.ndarray]] = field(default_factory=list)
    scatter_recv: dict[int, list[tuple[int, int]]] = field(default_factory=dict)


def _pins_of_halo(local: sp.csr_matrix, cp: CommPlan) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For every received row (global id, in the plan's halo order): the global ids of my rows with a
    nonzero in its column (CSC of the halo columns)."""
    n = local.shape[0]
    lo = int(cp.offsets[cp.rank])
    csc = sp.csc_matrix(local)[:, n:]
    return np.asarray(cp.recv_ids, np.int64), csc.indptr.astype(np.int64), csc.indices.astype(np.int64) + lo


def relay_tables(comm, nodes: Nodes, cp: CommPlan, local: sp.csr_matrix) -> tuple[dict[int, Relay], dict[int, Relay]]:
    """Collective setup: the relays this rank receives (by sending node A) and sends (by receiving node B).

    Every rank tells each relay receiver of its node, for the remote node A it serves, the rows of A it
    needs and its pins (within the node); each relay receiver merges them and passes the relay on to the
    relay sender (across the network). Returns (as receiver: A -> Relay, as sender: B -> Relay)."""
    me, mine = nodes.me, nodes.mine
    ids, ptr, pins = _pins_of_halo(local, cp)
    sender_rank = np.repeat(np.arange(cp.size), np.diff(cp.recv_start))
    sender_node = nodes.node[sender_rank]
    members = nodes.members(mine)
    outbox: list[dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]] = [{} for _ in members]
    for a in np.unique(sender_node[sender_node != mine]).tolist():
        sel = np.flatnonzero(sender_node == a)
        lens = ptr[sel + 1] - ptr[sel]
        sub = pins[segments(ptr, sel)[0]]
        t = nodes.receiver(a, mine)
        outbox[int(np.searchsorted(members, t))][a] = (ids[sel], lens, sub)
    node_comm = comm.Split(mine, me)
    inbox = node_comm.alltoall(outbox)
    node_comm.Free()
    received: dict[int, Relay] = {}
    for a in sorted({a for box in inbox for a in box}):
        parts = [box[a] for box in inbox if a in box]
        rows = np.concatenate([p[0] for p in parts])
        lens = np.concatenate([p[1] for p in parts])
        flat = np.concatenate([p[2] for p in parts])
        received[a] = _merge(rows, lens, flat)
    sent = _pass_on(comm, nodes, received)
    return received, sent


def _merge(rows: np.ndarray, lens: np.ndarray, flat: np.ndarray) -> Relay:
    """One relay from every rank's (rows, pin counts, pins): rows sorted and unique, their pins joined."""
    uniq = np.unique(rows)
    group = np.searchsorted(uniq, rows)  # each entry's relay row
    counts = np.bincount(group, weights=lens, minlength=uniq.size).astype(np.int64)
    ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    pin_order = np.argsort(np.repeat(group, lens), kind="stable")  # each row's pins, in the node's rank order
    return Relay(uniq.astype(np.int64), ptr, flat[pin_order].astype(np.int64))


def _pass_on(comm, nodes: Nodes, received: dict[int, Relay]) -> dict[int, Relay]:
    """Relay receivers send every relay's rows and pins to its relay sender (one message per node pair,
    empty ones too, so every sender knows what to wait for)."""
    me, mine, count = nodes.me, nodes.mine, nodes.count()
    setup = comm.Dup()
    reqs = []
    for a in range(count):
        if a != mine and nodes.receiver(a, mine) == me:
            rel = received.get(a, Relay.empty())
            reqs.append(setup.isend((rel.rows, rel.ptr, rel.pins), dest=nodes.sender(a, mine), tag=_SETUP_TAG + a))
    sent = {}
    for b in range(count):
        if b != mine and nodes.sender(mine, b) == me:
            rows, ptr, pins = setup.recv(source=nodes.receiver(mine, b), tag=_SETUP_TAG + mine)
            sent[b] = Relay(rows, ptr, pins)
    for r in reqs:
        r.wait()
    setup.Free()
    return sent


def _kept(rel: Relay, batch: np.ndarray | None, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The relay rows a plan keeps (indices into ``rel.rows``) and the pins it keeps (a mask over ``rel.pins``):
    all for the full graph; for a batch, a row when it and one of its pins are in the batch."""
    if batch is None:
        return np.arange(rel.rows.size), np.ones(rel.pins.size, bool)
    mask = np.zeros(n, bool)
    mask[batch] = True
    pin_in = mask[rel.pins]
    row_of_pin = np.repeat(np.arange(rel.rows.size), np.diff(rel.ptr))
    hit = np.bincount(row_of_pin[pin_in], minlength=rel.rows.size) > 0
    return np.flatnonzero(hit & mask[rel.rows]), pin_in


def routes(cp: CommPlan, nodes: Nodes, tables: tuple[dict[int, Relay], dict[int, Relay]], full_offsets: np.ndarray
           ) -> Routes:
    """The routes of plan ``cp`` (the full graph's, or a batch's: ``cp.batch``) at this rank."""
    me, mine = nodes.me, nodes.mine
    received, sent = tables
    n = int(full_offsets[-1])
    out = Routes()
    out.direct_send = [(q, rows) for q, rows in cp.send_to if nodes.node[q] == mine]
    out.direct_recv = [(q, c) for q, c in cp.recv_from if nodes.node[q] == mine]
    by_node: dict[int, list[np.ndarray]] = {}
    for q, rows in cp.send_to:
        if nodes.node[q] != mine:
            by_node.setdefault(int(nodes.node[q]), []).append(rows)
    for b in sorted(by_node):
        rows = np.unique(np.concatenate(by_node[b])).astype(np.int64)
        s = nodes.sender(mine, b)
        if s == me:
            out.own_relay[b] = rows
        else:
            out.gather_send.setdefault(s, []).append((b, rows))
    for b in sorted(sent):  # as a relay sender
        rel = sent[b]
        keep, _ = _kept(rel, cp.batch, n)
        owner = np.searchsorted(full_offsets, rel.rows[keep], side="right") - 1
        per_r = [(int(r), int(np.count_nonzero(owner == r))) for r in nodes.members(mine)]
        if keep.size:
            out.relay_out.append((b, nodes.receiver(mine, b), per_r))
        for r, k in per_r:
            if r != me and k:
                out.gather_recv.setdefault(r, []).append((b, k))
    for a in sorted(received):  # as a relay receiver
        rel = received[a]
        keep, pin_in = _kept(rel, cp.batch, n)
        if keep.size:
            out.relay_in.append((a, nodes.sender(a, mine), int(keep.size)))
        _scatter(out, rel, keep, pin_in, (a, nodes, full_offsets))
    for a, k in _remote_counts(cp, nodes).items():  # as a receiver
        t = nodes.receiver(a, mine)
        if t != me:
            out.scatter_recv.setdefault(t, []).append((a, k))
    return out


def _scatter(out: Routes, rel: Relay, keep: np.ndarray, pin_in: np.ndarray, where: tuple) -> None:
    """A relay receiver's scatter of relay ``a``: for every rank q of its node, the kept rows with a kept pin
    in q's rows (positions among the kept rows)."""
    a, nodes, full_offsets = where
    pin_owner = np.searchsorted(full_offsets, rel.pins, side="right") - 1
    row_of_pin = np.repeat(np.arange(rel.rows.size), np.diff(rel.ptr))
    position = np.full(rel.rows.size, -1, np.int64)
    position[keep] = np.arange(keep.size)
    live = pin_in & (position[row_of_pin] >= 0)
    for q in nodes.members(nodes.mine).tolist():
        pos = np.unique(position[row_of_pin[live & (pin_owner == q)]])
        if not pos.size:
            continue
        if q == nodes.me:
            out.scatter_own.append((a, pos))
        else:
            out.scatter_send.setdefault(q, []).append((a, pos))


def _remote_counts(cp: CommPlan, nodes: Nodes) -> dict[int, int]:
    """Rows this rank receives from each remote node under plan ``cp``."""
    out: dict[int, int] = {}
    for q, c in cp.recv_from:
        a = int(nodes.node[q])
        if a != nodes.mine:
            out[a] = out.get(a, 0) + c
    return dict(sorted(out.items()))
