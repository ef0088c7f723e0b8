"""The exchanges ``--exchange`` chooses from (p2p, alltoallv, bcast, node):
one module each, found through their specs in
:data:`shgcn.core.exchanges.EXCHANGES` (``impl``), whose cost models predict
exactly what they count."""

from __future__ import annotations

from typing import Any

from shgcn.core.exchanges import EXCHANGES
from shgcn.core.registry import load

from ..plan import CommPlan
from ..wire import Wire
from .base import PATHS, Counters, Counting, Exchange, Peers

__all__ = ["EXCHANGES", "PATHS", "Counters", "Counting", "Exchange", "Peers", "make"]


def make(name: str, comm, cp: CommPlan, wire: Wire, peers: Peers | None = None, **options: Any) -> Exchange:
    """The exchange ``name`` on ``comm`` with plan ``cp`` (``options``: what its class takes beyond these)."""
    return load(EXCHANGES.get_spec(name).impl)(comm, cp, wire, peers, **options)
