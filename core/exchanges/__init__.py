"""The exchanges the trainer offers (``shgcn-train --exchange``): how the
rows of H that other ranks need travel, each with its cost model.

A new exchange is its cost module here (its messages per expand, and its time
if not the generic one), its spec (the cost class's instance, a constant
listed in :data:`EXCHANGES`: its name is written in its class only), its
implementation in ``trainer/exchanges/`` paired with that constant, and its
test class subclassing :class:`shgcn.testing.exchanges.ExchangeTests`.
"""

from __future__ import annotations

from ..registry import Registry
from .base import KINDS, ExchangeCost, Layout, Messages, stage_time, traffic
from .bcast import Bcast
from .flat import P2P, AllToAllV
from .node import Node, node_messages

# the built-in exchanges' specs: the trainer pairs its exchanges with these
P2P_COST, ALLTOALLV_COST, BCAST_COST, NODE_COST = P2P(), AllToAllV(), Bcast(), Node()
EXCHANGES: Registry[ExchangeCost] = Registry.of("--exchange", P2P_COST, ALLTOALLV_COST, BCAST_COST, NODE_COST)


def baseline_exchange() -> str:
    """The name of the exchange predictions are compared with (the one whose spec says ``baseline``)."""
    return next(name for name, x in EXCHANGES.items() if x.baseline)

__all__ = ["ALLTOALLV_COST", "BCAST_COST", "EXCHANGES", "KINDS", "NODE_COST", "P2P_COST", "ExchangeCost", "Layout",
           "Messages", "baseline_exchange", "node_messages", "stage_time", "traffic"]
