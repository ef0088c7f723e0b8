"""What every exchange shares: how the rows of H that other ranks need travel.

One interface, :class:`Exchange`, with two operations used by the products:

- ``expand(x, local, on_block)``: send own rows to the ranks that need them
  and call ``on_block(q, rows)`` for the rows received from each rank q;
  ``local()`` (the own-column product) runs while messages travel.
- ``fold(parts, d, local, on_block)``: the reverse, for Mᵀ G with a directed
  M: ``parts[q]`` are partial sums for rows owned by q; each owner receives
  them and calls ``on_block(rows, partial)`` with the local row ids they add
  to; ``d`` is the row width.

Rows travel in the wire type of :class:`~shgcn.trainer.wire.Wire`
(``--exchange-dtype``); ``on_block`` always gets float32 rows. The counters
(:class:`Counters`) count the bytes and messages on the wire by destination:
within the sender's node or to another node (:class:`Peers`), per call.
Each exchange is registered with its cost model in
:data:`shgcn.trainer.exchanges.EXCHANGES` (a :class:`~shgcn.trainer.parts.Parts`:
the spec of :data:`shgcn.core.exchanges.EXCHANGES` joined to the class),
whose cost model predicts exactly these counts.
"""

from __future__ import annotations

import contextlib
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..plan import CommPlan
from ..wire import Wire

TAG_EXPAND, TAG_FOLD = 11, 12
PATHS = ("intra", "inter")


@dataclass(frozen=True)
class Peers:
    """Which ranks of an exchange's communicator share this rank's node.

    Attributes: node (size,) int64, the node of every rank of the communicator (the job's nodes:
    ``MPI_Comm_split_type(SHARED)``, or ``--ranks-per-node k`` virtual nodes of consecutive ranks)."""

    node: np.ndarray

    @classmethod
    def one_node(cls, size: int) -> Peers:
        return cls(np.zeros(size, np.int64))

    def path(self, me: int, q: int) -> str:
        return PATHS[int(self.node[q] != self.node[me])]


@dataclass
class Counters:
    """What a rank sent and waited for since the last reset.

    ``calls``: the bytes sent by each expand or fold, in order (one per layer and direction);
    ``call_paths``: the same by path (``intra``, ``inter``); ``paths`` and ``path_msgs``: bytes and messages
    sent by path; ``split``: the bytes sent by kind under ``--algorithm 1.5d`` and ``2d`` (``rows``,
    ``inrow``, ``matrix``: :mod:`shgcn.core.algorithms`), empty in 1D."""

    bytes_sent: int = 0
    msgs_sent: int = 0
    bytes_recv: int = 0
    comm_time: float = 0.0
    calls: list[int] = field(default_factory=list)
    call_paths: list[dict[str, int]] = field(default_factory=list)
    paths: dict[str, int] = field(default_factory=lambda: dict.fromkeys(PATHS, 0))
    path_msgs: dict[str, int] = field(default_factory=lambda: dict.fromkeys(PATHS, 0))
    split: dict[str, int] = field(default_factory=dict)

    def reset(self) -> dict:
        out = {k: (dict(v) if isinstance(v, dict) else list(v) if isinstance(v, list) else v)
               for k, v in vars(self).items()}
        self.bytes_sent = self.msgs_sent = self.bytes_recv = 0
        self.comm_time = 0.0
        self.calls, self.call_paths, self.split = [], [], {}
        self.paths, self.path_msgs = dict.fromkeys(PATHS, 0), dict.fromkeys(PATHS, 0)
        return out

    def to(self, path: str, nbytes: int, msgs: int = 1) -> None:
        """Count ``nbytes`` in ``msgs`` messages sent along ``path``."""
        self.bytes_sent += int(nbytes)
        self.msgs_sent += msgs
        self.paths[path] += int(nbytes)
        self.path_msgs[path] += msgs

    def sent(self, kind: str, nbytes: int, msgs: int) -> None:
        """Count ``nbytes`` in ``msgs`` messages sent, of ``kind`` (a grid algorithm's)."""
        self.bytes_sent += nbytes
        self.msgs_sent += msgs
        self.split[kind] = self.split.get(kind, 0) + nbytes

    def absorb(self, inner: Counters, kind: str) -> None:
        """Move what ``inner`` (an exchange's private counters) counted into these, as ``kind``."""
        self.sent(kind, inner.bytes_sent, inner.msgs_sent)
        self.bytes_recv += inner.bytes_recv
        self.comm_time += inner.comm_time
        inner.reset()

    def mark(self) -> tuple[int, dict[str, int]]:
        return self.bytes_sent, dict(self.paths)

    def call_done(self, before: tuple[int, dict[str, int]]) -> None:
        """Record one expand or fold's bytes (since ``before = mark()``)."""
        self.calls.append(self.bytes_sent - before[0])
        self.call_paths.append({p: self.paths[p] - before[1][p] for p in PATHS})


class Exchange(ABC):
    """Base class: holds the communicator, the plan, the peers' nodes and the counters.

    The plan can change between calls (a mini-batch restricts it): see
    :meth:`using`. The counters keep running across plans until reset.
    """

    name = ""

    def __init__(self, comm, cp: CommPlan, wire: Wire | None = None, peers: Peers | None = None,
                 local: Callable[[], Any] | None = None):
        # ``local``: the rank's full-batch local matrix on demand (what an exchange may read at its setup; the
        # node-aware one reads the halo columns' pins), so the algorithm that makes an exchange names none
        self.comm = comm
        self.cp = cp
        self.counters = Counters()
        self.wire = wire or Wire()
        self.peers = peers or Peers.one_node(cp.size)

    @contextlib.contextmanager
    def using(self, cp: CommPlan) -> Iterator[Exchange]:
        """Exchange with plan ``cp`` inside the block, then restore the previous one."""
        old, self.cp = self.cp, cp
        try:
            yield self
        finally:
            self.cp = old

    def count(self, q: int, nbytes: int, msgs: int = 1) -> None:
        """Count ``msgs`` messages of ``nbytes`` in all to rank ``q`` of the communicator."""
        self.counters.to(self.peers.path(self.cp.rank, q), nbytes, msgs)

    def expand(self, x: np.ndarray, local: Callable[[], None], on_block: Callable[[int, np.ndarray], None]) -> None:
        """Send own rows ``x`` (n_own, d) where the plan says; ``local()`` meanwhile; ``on_block(q, rows)`` per sender."""
        before = self.counters.mark()
        self._expand(x, local, on_block)
        self.counters.call_done(before)

    def fold(self, parts: dict[int, np.ndarray], d: int, local: Callable[[], None],
             on_block: Callable[[np.ndarray, np.ndarray], None]) -> None:
        """Send ``parts[q]`` (partial sums of q's rows) back to q; ``on_block(rows, partial)`` per received part."""
        before = self.counters.mark()
        self._fold(parts, d, local, on_block)
        self.counters.call_done(before)

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

