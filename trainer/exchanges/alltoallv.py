"""``alltoallv``: the sparsity-aware collective (cost model: :mod:`shgcn.core.exchanges.flat`)."""

from __future__ import annotations

import numpy as np

from shgcn.core.exchanges import ALLTOALLV_COST

from .base import Exchange


class AllToAllV(Exchange):
    """The same rows through one ``Alltoallv`` (no overlap)."""

    name = ALLTOALLV_COST.name

    def _counts(self, pairs, d):
        c = np.zeros(self.cp.size, np.int64)
        for q, k in pairs:
            c[q] = k * d
        return c

    def _alltoallv(self, sendbuf, scounts, rcounts):
        from mpi4py import MPI

        wire = self.wire
        sendbuf = wire.encode(sendbuf)
        recv = wire.empty(int(rcounts.sum()))
        sdis = np.concatenate([[0], np.cumsum(scounts)[:-1]])
        rdis = np.concatenate([[0], np.cumsum(rcounts)[:-1]])
        kind = MPI.FLOAT if wire.itemsize == 4 else MPI.UINT16_T
        self._wait(lambda: self.comm.Alltoallv([sendbuf, (scounts, sdis), kind], [recv, (rcounts, rdis), kind]))
        for q in np.flatnonzero(scounts):
            self.count(int(q), int(scounts[q]) * wire.itemsize)
        self.counters.bytes_recv += int(rcounts.sum()) * wire.itemsize
        return wire.decode(recv), rdis

    def _expand(self, x, local, on_block):
        d = x.shape[1]
        send = np.concatenate([x[rows].ravel() for _, rows in self.cp.send_to]).astype(np.float32) \
            if self.cp.send_to else np.zeros(0, np.float32)
        scounts = self._counts([(q, rows.size) for q, rows in self.cp.send_to], d)
        rcounts = self._counts(self.cp.recv_from, d)
        recv, rdis = self._alltoallv(send, scounts, rcounts)
        local()
        for q, c in self.cp.recv_from:
            on_block(q, recv[rdis[q]:rdis[q] + c * d].reshape(c, d))

    def _fold(self, parts, d, local, on_block):
        send = np.concatenate([parts[q].ravel() for q, _ in self.cp.recv_from]).astype(np.float32) \
            if self.cp.recv_from else np.zeros(0, np.float32)
        scounts = self._counts(self.cp.recv_from, d)
        rcounts = self._counts([(q, rows.size) for q, rows in self.cp.send_to], d)
        recv, rdis = self._alltoallv(send, scounts, rcounts)
        local()
        for q, rows in self.cp.send_to:
            on_block(rows, recv[rdis[q]:rdis[q] + rows.size * d].reshape(rows.size, d))
