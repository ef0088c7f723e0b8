"""``bcast``: CAGNET's sparsity-oblivious 1D exchange (cost model: :mod:`shgcn.core.exchanges.bcast`)."""

from __future__ import annotations

import numpy as np

from shgcn.core.exchanges import BCAST_COST

from .base import Exchange


class Bcast(Exchange):
    """CAGNET's sparsity-oblivious 1D algorithm: rank q broadcasts its whole
    block of H in turn; every rank keeps the rows it needs. The fold is the
    mirror image: a ``Reduce`` of a dense block onto each owner. float32 only
    (a Reduce sums on the wire). ``roots``: the ranks that broadcast (all; a
    1.5D grid column broadcasts only the blocks it multiplies)."""

    name = BCAST_COST.name

    def __init__(self, comm, cp, wire=None, peers=None, local=None, roots: list[int] | None = None):
        super().__init__(comm, cp, wire, peers, local)
        self.roots = roots

    def _roots(self) -> list[int]:
        return list(range(self.cp.size)) if self.roots is None else self.roots

    def _expand(self, x, local, on_block):
        d = x.shape[1]
        off = self.cp.offsets
        local()
        for q in self._roots():
            n_q = int(off[q + 1] - off[q])
            if q == self.cp.rank:  # Bcast wants a writable buffer even at the root; x may be a read-only memmap
                buf = x if x.flags.writeable and x.flags.c_contiguous and x.dtype == np.float32 else np.array(x, np.float32)
            else:
                buf = np.empty((n_q, d), np.float32)
            self._wait(self.comm.Bcast, buf, root=q)
            if q == self.cp.rank:
                for p in range(self.cp.size):
                    if p != q:
                        self.count(p, buf.nbytes)
                continue
            self.counters.bytes_recv += buf.nbytes
            lo, hi = self.cp.recv_start[q], self.cp.recv_start[q + 1]
            if hi > lo:
                on_block(q, buf[self.cp.recv_ids[lo:hi] - off[q]])

    def _fold(self, parts, d, local, on_block):
        from mpi4py import MPI

        off = self.cp.offsets
        local()
        for q in self._roots():
            n_q = int(off[q + 1] - off[q])
            block = np.zeros((n_q, d), np.float32)
            lo, hi = self.cp.recv_start[q], self.cp.recv_start[q + 1]
            if q != self.cp.rank and hi > lo:
                block[self.cp.recv_ids[lo:hi] - off[q]] = parts[q]
            out = np.empty_like(block) if q == self.cp.rank else None
            self._wait(self.comm.Reduce, block, out, op=MPI.SUM, root=q)
            if q == self.cp.rank:
                self.counters.bytes_recv += block.nbytes * (self.cp.size - 1)
                on_block(np.arange(n_q), out)  # own block was zeros: only others' partial sums
            else:
                self.count(q, block.nbytes)
