"""``node``: the node-aware exchange (cost model: :mod:`shgcn.core.exchanges.node`).

For each pair of nodes (A, B), the rows any rank of B needs from A cross the
network once, in one message, then reach their ranks inside B
(:mod:`.noderoutes` says who sends what). One expand:

0. inside a node: rows a rank of the same node needs go to it directly; every
   rank sends its relay senders, one message each, the rows the remote nodes
   they serve need (each row once per node);
1. across the network: each relay sender s(A, B) sends A's rows for B to B's
   relay receiver t(A, B), one message;
2. inside B: t(A, B) sends every rank of B the rows of its relays that rank
   needs, one message each.

Received rows reach ``on_block`` in sender order, as p2p's, so the forward
sums in p2p's order. The fold runs the same messages back: partial sums go to
t, which adds them row by row (in the node's rank order), to s, and to each
owner. Every message is counted by its destination's node: stages 0 and 2
within the node, stage 1 between nodes.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import Any

import numpy as np
import scipy.sparse as sp

from shgcn.core.exchanges import NODE_COST

from ..plan import CommPlan
from .base import Exchange, Peers
from .noderoutes import Nodes, Relay, Routes, relay_tables, routes

_DIRECT, _GATHER, _RELAY, _SCATTER = 201, 202, 203, 204


class NodeExchange(Exchange):
    """Relays each node pair's rows through one rank of each node (see the module docstring).

    ``local()``: the rank's full-batch local matrix (n_own, n_own + R) (its halo columns give each received
    row's pins: the setup is collective)."""

    name = NODE_COST.name

    def __init__(self, comm, cp: CommPlan, wire=None, peers: Peers | None = None,
                 local: Callable[[], sp.csr_matrix] | None = None):
        super().__init__(comm, cp, wire, peers, local)
        if local is None:
            raise ValueError("the node-aware exchange needs the rank's local matrix")
        self.nodes = Nodes(self.peers.node, cp.rank)
        self.full_offsets = np.asarray(cp.offsets, np.int64)
        self.tables: tuple[dict[int, Relay], dict[int, Relay]] = relay_tables(comm, self.nodes, cp, local())
        self._full = cp

    @cached_property
    def _full_routes(self) -> Routes:
        return routes(self._full, self.nodes, self.tables, self.full_offsets)

    def _routes(self) -> Routes:
        return self._full_routes if self.cp is self._full else routes(self.cp, self.nodes, self.tables,
                                                                        self.full_offsets)

    # ------------------------------------------------------------ the message helpers

    def _irecv(self, shape: tuple[int, int], src: int, tag: int) -> tuple[np.ndarray, Any]:
        buf = self.wire.empty(shape)
        return buf, self.comm.Irecv(buf, source=src, tag=tag)

    def _isend(self, x: np.ndarray, dest: int, tag: int, keep: list) -> Any:
        buf = self.wire.encode(x)
        keep.append(buf)
        self.count(dest, buf.nbytes)
        return self.comm.Isend(buf, dest=dest, tag=tag)

    def _got(self, buf: np.ndarray, req) -> np.ndarray:
        self._wait(req.Wait)
        self.counters.bytes_recv += buf.nbytes
        return self.wire.decode(buf)

    # ------------------------------------------------------------ expand

    def _expand(self, x, local, on_block):
        from mpi4py import MPI

        rt, d, me = self._routes(), x.shape[1], self.nodes.me
        keep: list = []
        direct = {q: self._irecv((c, d), q, _DIRECT) for q, c in rt.direct_recv}
        gathered = {r: self._irecv((sum(k for _, k in ks), d), r, _GATHER) for r, ks in rt.gather_recv.items()}
        relays = {a: self._irecv((k, d), s, _RELAY + 8 * a) for a, s, k in rt.relay_in}
        scattered = {t: self._irecv((sum(k for _, k in ks), d), t, _SCATTER) for t, ks in rt.scatter_recv.items()}
        sends = [self._isend(x[rows], q, _DIRECT, keep) for q, rows in rt.direct_send]
        sends += [self._isend(np.concatenate([x[rows] for _, rows in rs]), s, _GATHER, keep)
                  for s, rs in rt.gather_send.items()]
        local()
        got = {r: _split(self._got(*gathered[r]), ks) for r, ks in rt.gather_recv.items()}
        for b, t, per_r in rt.relay_out:  # as a relay sender: my node's rows for b, in rank order
            pieces = [x[rt.own_relay[b]] if r == me else got[r][b] for r, k in per_r if k]
            sends.append(self._isend(np.concatenate(pieces), t, _RELAY + 8 * self.nodes.mine, keep))
        relay = {a: self._got(*relays[a]) for a, _, _ in rt.relay_in}
        for q, ps in rt.scatter_send.items():  # as a relay receiver: what each rank of my node needs
            sends.append(self._isend(np.concatenate([relay[a][pos] for a, pos in ps]), q, _SCATTER, keep))
        blocks = {a: relay[a][pos] for a, pos in rt.scatter_own}
        for t, ks in rt.scatter_recv.items():
            blocks.update(_split(self._got(*scattered[t]), ks))
        self._deliver(direct, blocks, on_block)
        self._wait(MPI.Request.Waitall, sends)

    def _deliver(self, direct: dict, blocks: dict[int, np.ndarray], on_block) -> None:
        """Every sender's rows to ``on_block`` in sender order: a rank of my node's from its message, a remote
        rank's from its node's block (its rows follow its node's lower ranks')."""
        at: dict[int, int] = {}
        for q, c in self.cp.recv_from:
            a = int(self.nodes.node[q])
            if a == self.nodes.mine:
                on_block(q, self._got(*direct[q]))
                continue
            lo = at.get(a, 0)
            at[a] = lo + c
            on_block(q, blocks[a][lo:lo + c])

    # ------------------------------------------------------------ fold

    def _fold(self, parts, d, local, on_block):
        from mpi4py import MPI

        rt, me = self._routes(), self.nodes.me
        keep: list = []
        direct = {q: self._irecv((rows.size, d), q, _DIRECT) for q, rows in rt.direct_send}
        back = {q: self._irecv((sum(p.size for _, p in ps), d), q, _SCATTER) for q, ps in rt.scatter_send.items()}
        relays = {b: self._irecv((sum(k for _, k in per_r), d), t, _RELAY + 8 * self.nodes.mine)
                  for b, t, per_r in rt.relay_out}
        mine = {s: self._irecv((sum(rows.size for _, rows in rs), d), s, _GATHER) for s, rs in rt.gather_send.items()}
        own = self._by_node(parts, d)
        sends = [self._isend(parts[q], q, _DIRECT, keep) for q, _ in rt.direct_recv]
        sends += [self._isend(np.concatenate([own[a] for a, _ in ps]), t, _SCATTER, keep)
                  for t, ps in rt.scatter_recv.items()]
        local()
        came = {q: _split(self._got(*back[q]), [(a, p.size) for a, p in ps]) for q, ps in rt.scatter_send.items()}
        for a, s, k in rt.relay_in:  # as a relay receiver: the node's partial sums, added in rank order
            acc = np.zeros((k, d), np.float32)
            for q in self.nodes.members(self.nodes.mine).tolist():
                pos = dict(rt.scatter_send.get(q, []) if q != me else rt.scatter_own).get(a)
                if pos is not None:
                    acc[pos] += own[a] if q == me else came[q][a]
            sends.append(self._isend(acc, s, _RELAY + 8 * a, keep))
        relay = {b: self._got(*relays[b]) for b, _, _ in rt.relay_out}
        shares = self._shares(rt, relay)
        for r, ks in rt.gather_recv.items():  # as a relay sender: each owner's share
            sends.append(self._isend(np.concatenate([shares[b][r] for b, _ in ks]), r, _GATHER, keep))
        for q, rows in rt.direct_send:
            on_block(rows, self._got(*direct[q]))
        for s, rs in rt.gather_send.items():
            for b, part in _split(self._got(*mine[s]), [(b, rows.size) for b, rows in rs]).items():
                on_block(dict(rs)[b], part)
        for b, rows in rt.own_relay.items():
            on_block(rows, shares[b][me])
        self._wait(MPI.Request.Waitall, sends)

    def _by_node(self, parts: dict[int, np.ndarray], d: int) -> dict[int, np.ndarray]:
        """Partial sums of the rows I received, grouped by remote node (its ranks in order)."""
        out: dict[int, list[np.ndarray]] = {}
        for q, _ in self.cp.recv_from:
            a = int(self.nodes.node[q])
            if a != self.nodes.mine:
                out.setdefault(a, []).append(np.asarray(parts[q], np.float32))
        return {a: np.concatenate(v) if v else np.zeros((0, d), np.float32) for a, v in out.items()}

    @staticmethod
    def _shares(rt: Routes, relay: dict[int, np.ndarray]) -> dict[int, dict[int, np.ndarray]]:
        """A returned relay split into its owners' shares (its rows are in rank order)."""
        out: dict[int, dict[int, np.ndarray]] = {}
        for b, _, per_r in rt.relay_out:
            at, out[b] = 0, {}
            for r, k in per_r:
                out[b][r] = relay[b][at:at + k]
                at += k
        return out


def _split(buf: np.ndarray, parts: list[tuple[int, int]]) -> dict[int, np.ndarray]:
    """A combined message cut into its parts, ``[(key, rows)]`` in order."""
    out, at = {}, 0
    for key, k in parts:
        out[key] = buf[at:at + k]
        at += k
    return out
