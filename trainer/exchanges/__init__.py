"""The exchanges ``--exchange`` chooses from (p2p, alltoallv, bcast, node):
one module each, paired in :data:`EXCHANGES` with its spec, a constant of
:mod:`shgcn.core.exchanges` (``P2P_COST``; of
:data:`shgcn.core.exchanges.EXCHANGES`, whose cost model predicts exactly
what it counts). An exchange class takes ``(comm, cp, wire, peers, local,
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

EXCHANGES: Parts[ExchangeCost, type[Exchange]] = Parts.of(
    specs.EXCHANGES, (specs.P2P_COST, P2P), (specs.ALLTOALLV_COST, AllToAllV), (specs.BCAST_COST, Bcast),
    (specs.NODE_COST, NodeExchange))

__all__ = ["EXCHANGES", "PATHS", "Counters", "Exchange", "Peers", "make"]


def make(name: str, comm, cp: CommPlan, wire: Wire, peers: Peers | None = None, *,
         local: Callable[[], Any] | None = None, **options: Any) -> Exchange:
    """The exchange ``name`` on ``comm`` with plan ``cp``; ``local``: the rank's full local matrix on demand;
    ``options``: what its class takes beyond these (its declared options, an algorithm's roots)."""
    return EXCHANGES.get(name).impl(comm, cp, wire, peers, local, **options)
