"""The distributed algorithms ``--algorithm`` chooses from (1d, 1.5d, 2d):
one module each, with ``connect(local, comm) -> Context``, paired in
:data:`ALGORITHMS` with its spec, a constant of :mod:`shgcn.core.algorithms`
(``ONED_COST``; of :data:`shgcn.core.algorithms.ALGORITHMS`, whose cost
model predicts exactly what it counts)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from shgcn.core import algorithms as specs
from shgcn.core.algorithms import AlgorithmCost

from ..context import Context, Local
from ..parts import Parts
from . import oned, onehalfd, twod

Connect = Callable[[Local, Any], Context]  # (the rank's prepared run, the job's communicator) -> its context

ALGORITHMS: Parts[AlgorithmCost, Connect] = Parts.of(
    specs.ALGORITHMS, (specs.ONED_COST, oned.connect), (specs.ONEHALFD_COST, onehalfd.connect),
    (specs.TWOD_COST, twod.connect))

__all__ = ["ALGORITHMS", "Connect", "connect"]


def connect(local: Local, comm) -> Context:
    """The collective half of the setup: the job's algorithm connects this rank (its exchange, operators,
    memory check) and returns the finished context. Every rank calls it once every rank prepared."""
    return ALGORITHMS.get(local.cfg.algorithm).impl(local, comm)
