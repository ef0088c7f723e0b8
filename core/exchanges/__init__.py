"""The exchanges the trainer offers (``shgcn-train --exchange``): how the
rows of H that other ranks need travel, each with its cost model.

A new exchange is its cost module here (its messages per expand, and its time
if not the generic one), its implementation in ``trainer/exchanges/``, one
line in :data:`EXCHANGES`, and its test class subclassing
:class:`shgcn.testing.exchanges.ExchangeTests`.
"""

from __future__ import annotations

from ..registry import Registry
from .base import KINDS, ExchangeCost, Layout, Messages, stage_time, traffic
from .bcast import Bcast
from .flat import P2P, AllToAllV
from .node import Node, node_messages

EXCHANGES: Registry[ExchangeCost] = Registry("--exchange", {x.name: x for x in (P2P(), AllToAllV(), Bcast(), Node())})


def baseline_exchange() -> str:
    """The name of the exchange predictions are compared with (the one whose spec says ``baseline``)."""
    return next(name for name, x in EXCHANGES.items() if x.baseline)

__all__ = ["EXCHANGES", "KINDS", "ExchangeCost", "Layout", "Messages", "baseline_exchange", "node_messages",
           "stage_time", "traffic"]
