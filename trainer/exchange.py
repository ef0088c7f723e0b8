"""Exchange strategies: how the rows of H that other ranks need travel.

One interface, :class:`Exchange`, with two operations used by the SpMMs:

- ``expand(x, local, on_block)``: send own rows to the ranks that need them
  and call ``on_block(q, rows)`` for the rows received from each rank q;
  ``local()`` (the own-column product) runs while messages travel.
- ``fold(parts, local, on_block)``: the reverse, for M^T G with a directed
  M: ``parts[q]`` are partial sums for rows owned by q; each owner receives
  them and calls ``on_block(rows, partial)`` with the local row ids they add
  to; ``d`` is the row width.

Rows travel in the wire type of :class:`~.wire.Wire` (``--exchange-dtype``:
float32, or bfloat16 / float16 for half the bytes); ``on_block`` always gets
float32 rows. The counters count the bytes on the wire.

Strategies: ``p2p`` (Isend/Irecv, overlap, Waitany: the paper's), ``alltoallv``
(the sparsity-aware collective), ``bcast`` (CAGNET's sparsity-oblivious 1D:
every rank broadcasts its whole block). Each counts the bytes and messages it
sends and the seconds spent waiting on communication.
"""

from __future__ import annotations

import contextlib
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

from .plan import CommPlan
from .wire import Wire

_TAG_EXPAND, _TAG_FOLD = 11, 12


@dataclass
class Counters:
    """What a rank sent and waited for since the last reset; ``calls``: the
    bytes sent by each expand or fold, in order (one per layer and direction);
    ``split``: the bytes sent by kind under ``--algorithm 1.5d`` and ``2d``
    (``rows``, ``inrow``, ``matrix``: :mod:`shgcn.core.gridcost`), empty in 1D."""

    bytes_sent: int = 0
    msgs_sent: int = 0
    bytes_recv: int = 0
    comm_time: float = 0.0
    calls: list[int] = field(default_factory=list)
    split: dict[str, int] = field(default_factory=dict)

    def reset(self) -> dict:
        out = dict(vars(self))
        self.bytes_sent = self.msgs_sent = self.bytes_recv = 0
        self.comm_time = 0.0
        self.calls = []
        self.split = {}
        return out

    def sent(self, kind: str, nbytes: int, msgs: int) -> None:
        """Count ``nbytes`` in ``msgs`` messages sent, of ``kind``."""
        self.bytes_sent += nbytes
        self.msgs_sent += msgs
        self.split[kind] = self.split.get(kind, 0) + nbytes

    def absorb(self, inner: Counters, kind: str) -> None:
        """Move what ``inner`` (an exchange's private counters) counted into these, as ``kind``."""
        self.sent(kind, inner.bytes_sent, inner.msgs_sent)
        self.bytes_recv += inner.bytes_recv
        self.comm_time += inner.comm_time
        inner.reset()


class Exchange(ABC):
    """Base class: holds the communicator, the plan and the counters.

    The plan can change between calls (a mini-batch restricts it): see
    :meth:`using`. The counters keep running across plans until reset.
    """

    name = ""

    def __init__(self, comm, cp: CommPlan, wire: Wire | None = None):
        self.comm = comm
        self.cp = cp
        self.counters = Counters()
        self.wire = wire or Wire()

    @contextlib.contextmanager
    def using(self, cp: CommPlan) -> Iterator[Exchange]:
        """Exchange with plan ``cp`` inside the block, then restore the previous one."""
        old, self.cp = self.cp, cp
        try:
            yield self
        finally:
            self.cp = old

    def expand(self, x: np.ndarray, local: Callable[[], None], on_block: Callable[[int, np.ndarray], None]) -> None:
        """Send own rows ``x`` (n_own, d) where the plan says; ``local()`` meanwhile; ``on_block(q, rows)`` per sender."""
        before = self.counters.bytes_sent
        self._expand(x, local, on_block)
        self.counters.calls.append(self.counters.bytes_sent - before)

    def fold(self, parts: dict[int, np.ndarray], d: int, local: Callable[[], None],
             on_block: Callable[[np.ndarray, np.ndarray], None]) -> None:
        """Send ``parts[q]`` (partial sums of q's rows) back to q; ``on_block(rows, partial)`` per received part."""
        before = self.counters.bytes_sent
        self._fold(parts, d, local, on_block)
        self.counters.calls.append(self.counters.bytes_sent - before)

    @abstractmethod
    def _expand(self, x: np.ndarray, local: Callable[[], None], on_block: Callable[[int, np.ndarray], None]) -> None:
        ...

    @abstractmethod
    def _fold(self, parts: dict[int, np.ndarray], d: int, local: Callable[[], None],
              on_block: Callable[[np.ndarray, np.ndarray], None]) -> None:
        ...

    def _wait(self, fn, *args, **kwargs):
        """``fn(*args, **kwargs)``, its duration counted as communication time."""
        t0 = time.perf_counter()
        out = fn(*args, **kwargs)
        self.counters.comm_time += time.perf_counter() - t0
        return out


class P2P(Exchange):
    """Non-blocking point-to-point: post receives, pack and send, run the
    local product while messages travel, then add each block as it lands."""

    name = "p2p"

    def _expand(self, x, local, on_block):
        from mpi4py import MPI

        d, wire = x.shape[1], self.wire
        bufs = {q: wire.empty((c, d)) for q, c in self.cp.recv_from}
        rreqs = [self.comm.Irecv(bufs[q], source=q, tag=_TAG_EXPAND) for q, _ in self.cp.recv_from]
        sbufs, sreqs = [], []
        for q, rows in self.cp.send_to:
            buf = wire.encode(x[rows])
            sbufs.append(buf)
            sreqs.append(self.comm.Isend(buf, dest=q, tag=_TAG_EXPAND))
            self.counters.bytes_sent += buf.nbytes
            self.counters.msgs_sent += 1
        local()
        senders = [q for q, _ in self.cp.recv_from]
        for _ in senders:
            i = self._wait(MPI.Request.Waitany, rreqs)
            q = senders[i]
            self.counters.bytes_recv += bufs[q].nbytes
            on_block(q, wire.decode(bufs[q]))
        self._wait(MPI.Request.Waitall, sreqs)

    def _fold(self, parts, d, local, on_block):
        from mpi4py import MPI

        wire = self.wire
        src = [(q, rows) for q, rows in self.cp.send_to]  # reverse of expand
        bufs = {q: wire.empty((rows.size, d)) for q, rows in src}
        rreqs = [self.comm.Irecv(bufs[q], source=q, tag=_TAG_FOLD) for q, _ in src]
        sreqs, sbufs = [], []
        for q, _ in self.cp.recv_from:
            buf = wire.encode(parts[q])
            sbufs.append(buf)
            sreqs.append(self.comm.Isend(buf, dest=q, tag=_TAG_FOLD))
            self.counters.bytes_sent += buf.nbytes
            self.counters.msgs_sent += 1
        local()
        for _ in src:
            i = self._wait(MPI.Request.Waitany, rreqs)
            q, rows = src[i]
            self.counters.bytes_recv += bufs[q].nbytes
            on_block(rows, wire.decode(bufs[q]))
        self._wait(MPI.Request.Waitall, sreqs)


class AllToAllV(Exchange):
    """The same rows through one ``Alltoallv`` (no overlap)."""

    name = "alltoallv"

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
        self.counters.bytes_sent += int(scounts.sum()) * wire.itemsize
        self.counters.msgs_sent += int((scounts > 0).sum())
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


class Bcast(Exchange):
    """CAGNET's sparsity-oblivious 1D algorithm: rank q broadcasts its whole
    block of H in turn; every rank keeps the rows it needs. The fold is the
    mirror image: a ``Reduce`` of a dense block onto each owner. float32 only
    (a Reduce sums on the wire). ``roots``: the ranks that broadcast (all; a
    1.5D grid column broadcasts only the blocks it multiplies)."""

    name = "bcast"
    roots: list[int] | None = None

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
                self.counters.bytes_sent += buf.nbytes * (self.cp.size - 1)
                self.counters.msgs_sent += self.cp.size - 1
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
                self.counters.bytes_sent += block.nbytes
                self.counters.msgs_sent += 1


class Counting(Exchange):
    """The counters of products that communicate themselves (``--algorithm 1.5d`` with the
    reduce combine, ``2d``): they count into :attr:`counters`; there is no expand or fold."""

    name = "grid"

    def _expand(self, x, local, on_block):
        raise NotImplementedError("this rank's products communicate through their grid, not an exchange")

    def _fold(self, parts, d, local, on_block):
        raise NotImplementedError("this rank's products communicate through their grid, not an exchange")


STRATEGIES: dict[str, type[Exchange]] = {c.name: c for c in (P2P, AllToAllV, Bcast)}
