"""``p2p``: the paper's non-blocking point-to-point exchange (cost model: :mod:`shgcn.core.exchanges.flat`)."""

from __future__ import annotations

from shgcn.core.exchanges import P2P_COST

from .base import TAG_EXPAND, TAG_FOLD, Exchange


class P2P(Exchange):
    """Non-blocking point-to-point: post receives, pack and send, run the
    local product while messages travel, then add each block in sender order
    (a fixed order of the sums: the same losses run after run, which an
    arrival-order ``Waitany`` did not give at P >= 4)."""

    name = P2P_COST.name

    def _expand(self, x, local, on_block):
        from mpi4py import MPI

        d, wire = x.shape[1], self.wire
        bufs = {q: wire.empty((c, d)) for q, c in self.cp.recv_from}
        rreqs = [self.comm.Irecv(bufs[q], source=q, tag=TAG_EXPAND) for q, _ in self.cp.recv_from]
        sbufs, sreqs = [], []
        for q, rows in self.cp.send_to:
            buf = wire.encode(x[rows])
            sbufs.append(buf)
            sreqs.append(self.comm.Isend(buf, dest=q, tag=TAG_EXPAND))
            self.count(q, buf.nbytes)
        local()
        for (q, _), req in zip(self.cp.recv_from, rreqs):
            self._wait(req.Wait)
            self.counters.bytes_recv += bufs[q].nbytes
            on_block(q, wire.decode(bufs[q]))
        self._wait(MPI.Request.Waitall, sreqs)

    def _fold(self, parts, d, local, on_block):
        from mpi4py import MPI

        wire = self.wire
        src = [(q, rows) for q, rows in self.cp.send_to]  # reverse of expand
        bufs = {q: wire.empty((rows.size, d)) for q, rows in src}
        rreqs = [self.comm.Irecv(bufs[q], source=q, tag=TAG_FOLD) for q, _ in src]
        sreqs, sbufs = [], []
        for q, _ in self.cp.recv_from:
            buf = wire.encode(parts[q])
            sbufs.append(buf)
            sreqs.append(self.comm.Isend(buf, dest=q, tag=TAG_FOLD))
            self.count(q, buf.nbytes)
        local()
        for (q, rows), req in zip(src, rreqs):
            self._wait(req.Wait)
            self.counters.bytes_recv += bufs[q].nbytes
            on_block(rows, wire.decode(bufs[q]))
        self._wait(MPI.Request.Waitall, sreqs)
