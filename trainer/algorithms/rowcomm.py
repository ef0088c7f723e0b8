"""Communication within a 1.5D process row (the c ranks that hold the same
block row), counted as ``inrow`` bytes: a reduce-scatter of partial sums
followed by an allgather of the reduced chunks (:class:`RowReduce`), or the
sharing of received rows (:class:`RowGather`).

Both are point-to-point (``Isend``/``Irecv``, one message to each other rank
of the row, empty or not), so the bytes are exactly the rows they carry.
Every rank of a row ends with bitwise the same result: a chunk is summed
once, by its owner, and copied to the others; shared rows are used in grid
column order.
"""

from __future__ import annotations

import time

import numpy as np

from ..exchanges import Counters

_TAG_RS, _TAG_AG, _TAG_GATHER = 21, 22, 23


class RowReduce:
    """Sum the c ranks' partial results of one block row.

    Rank j of the row owns rows ``bounds[j]:bounds[j+1]`` of the block. Its
    partial sum covers only ``supports[j]`` (sorted local rows: the rows its
    column blocks touch); each rank knows every rank's support, so a
    reduce-scatter sends rank t only the support rows in t's chunk, and the
    allgather returns every reduced chunk to every rank.

    Parameters
    ----------
    comm : the row's communicator (rank j of c)
    bounds : (c+1,) int64, the chunks (:func:`shgcn.core.algorithms.chunk_bounds`)
    supports : c arrays of sorted local row ids
    counters : where the bytes go (kind ``inrow``)
    """

    def __init__(self, comm, bounds: np.ndarray, supports: list[np.ndarray], counters: Counters):
        self.comm, self.bounds, self.counters = comm, np.asarray(bounds, np.int64), counters
        self.j, self.c = comm.rank, comm.size
        self.support = np.asarray(supports[self.j], np.int64)
        lo, hi = self.bounds[self.j], self.bounds[self.j + 1]
        # positions in my partial of the rows each rank's chunk holds; rows of my chunk in each rank's partial
        self.send_pos = {t: np.flatnonzero((self.support >= self.bounds[t]) & (self.support < self.bounds[t + 1]))
                         for t in range(self.c) if t != self.j}
        self.recv_rows = {t: (s := np.asarray(supports[t], np.int64))[(s >= lo) & (s < hi)] - lo
                          for t in range(self.c) if t != self.j}
        self.own_pos = np.flatnonzero((self.support >= lo) & (self.support < hi))
        self.own_rows = self.support[self.own_pos] - lo

    @property
    def n(self) -> int:
        return int(self.bounds[-1])

    @property
    def packed(self) -> int:
        """Rows of partial sums a combine copies to send: the support outside this rank's chunk."""
        return int(sum(pos.size for pos in self.send_pos.values()))

    def combine(self, chunk: np.ndarray, partial: np.ndarray | None) -> np.ndarray:
        """(n, d) the block's full result on every rank of the row.

        chunk : (rows of my chunk, d) my own product (the diagonal block's rows of my chunk)
        partial : (len(support), d) my column blocks' partial sums on my support rows, or None when empty
        """
        from mpi4py import MPI

        d = chunk.shape[1]
        lo, hi = self.bounds[self.j], self.bounds[self.j + 1]
        part = partial if partial is not None else np.zeros((self.support.size, d), np.float32)
        bufs = {t: np.empty((r.size, d), np.float32) for t, r in self.recv_rows.items()}
        reqs = [self.comm.Irecv(bufs[t], source=t, tag=_TAG_RS) for t in bufs]
        sends = {t: np.ascontiguousarray(part[pos]) for t, pos in self.send_pos.items()}
        reqs += [self.comm.Isend(b, dest=t, tag=_TAG_RS) for t, b in sends.items()]
        self._count(sends.values(), bufs.values())
        self._wait(MPI.Request.Waitall, reqs)
        out = np.empty((self.n, d), np.float32)
        mine = out[lo:hi]
        mine[...] = chunk
        mine[self.own_rows] += part[self.own_pos]  # rows are distinct within one rank's part: plain indexed adds
        for t in sorted(bufs):
            mine[self.recv_rows[t]] += bufs[t]
        reqs = [self.comm.Irecv(out[self.bounds[t]:self.bounds[t + 1]], source=t, tag=_TAG_AG)
                for t in range(self.c) if t != self.j]
        reqs += [self.comm.Isend(mine, dest=t, tag=_TAG_AG) for t in range(self.c) if t != self.j]
        self._count([mine] * (self.c - 1), [out[self.bounds[t]:self.bounds[t + 1]] for t in range(self.c)
                                            if t != self.j])
        self._wait(MPI.Request.Waitall, reqs)
        return out

    def _count(self, sent, received) -> None:
        sent = list(sent)
        self.counters.sent("inrow", sum(b.nbytes for b in sent), len(sent))
        self.counters.bytes_recv += sum(b.nbytes for b in received)

    def _wait(self, fn, *args):
        t0 = time.perf_counter()
        fn(*args)
        self.counters.comm_time += time.perf_counter() - t0


class RowGather:
    """Share one array with every rank of the row: each gets all c, in grid column order."""

    def __init__(self, comm, counters: Counters):
        self.comm, self.counters = comm, counters

    def share(self, mine: np.ndarray, rows: list[int]) -> list[np.ndarray]:
        """``mine`` (rows[j], d) float32 -> [the array of rank t for t in 0..c-1] (rows[t], d) each."""
        from mpi4py import MPI

        j, c = self.comm.rank, self.comm.size
        d = mine.shape[1]
        mine = np.ascontiguousarray(mine, np.float32)
        out = [mine if t == j else np.empty((rows[t], d), np.float32) for t in range(c)]
        reqs = [self.comm.Irecv(out[t], source=t, tag=_TAG_GATHER) for t in range(c) if t != j]
        reqs += [self.comm.Isend(mine, dest=t, tag=_TAG_GATHER) for t in range(c) if t != j]
        self.counters.sent("inrow", mine.nbytes * (c - 1), c - 1)
        self.counters.bytes_recv += sum(out[t].nbytes for t in range(c) if t != j)
        t0 = time.perf_counter()
        MPI.Request.Waitall(reqs)
        self.counters.comm_time += time.perf_counter() - t0
        return out
