"""The exchanges ``--exchange`` chooses from (p2p, alltoallv, bcast, node):
one module each, joined to its spec in :data:`shgcn.core.exchanges.EXCHANGES`
(whose cost model predicts exactly what it counts) by one line of
:data:`EXCHANGES`. An exchange class takes ``(comm, cp, wire, peers, local,
**its_options)``: ``local()`` gives the rank's full-batch local matrix to an
exchange that reads it at setup (the node-aware one)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from shgcn.core import exchanges as specs
from shgcn.core.exchanges import ExchangeCost

from ..parts import Parts
from ..plan import CommPlan
from ..wire import Wire
from .alltoallv import AllToAllV
from .base import PATHS, Counters, Exchange, Peers
from .bcast import Bcast
from .node import NodeExchange
from .p2p import P2P

EXCHANGES: Parts[ExchangeCost, type[Exchange]] = Parts(
    specs.EXCHANGES, {"p2p": P2P, "alltoallv": AllToAllV, "bcast": Bcast, "node": NodeExchange})

__all__ = ["EXCHANGES", "PATHS", "Counters", "Exchange", "Peers", "make"]


def make(name: str, comm, cp: CommPlan, wire: Wire, peers: Peers | None = None, *,
         local: Callable[[], Any] | None = None, **options: Any) -> Exchange:
    """The exchange ``name`` on ``comm`` with plan ``cp``; ``local``: the rank's full local matrix on demand;
    ``options``: what its class takes beyond these (its declared options, an algorithm's roots)."""
    return EXCHANGES.get(name).impl(comm, cp, wire, peers, local, **options)
