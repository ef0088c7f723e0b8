"""The time of MPI's collectives on one path (:class:`~.machine.Channel`: α
per message, β per byte), as the epoch model counts them: a broadcast (or
reduce) as scatter + allgather, an allreduce as recursive halving and
doubling."""

from __future__ import annotations

import math

import numpy as np

from .machine import Channel


def _log2(p: int) -> int:
    return math.ceil(math.log2(p)) if p > 1 else 0


def bcast_time(nbytes: np.ndarray | float, parts: int, path: Channel) -> np.ndarray | float:
    """One broadcast (or reduce) of ``nbytes`` among ``parts`` ranks: scatter + allgather."""
    if parts == 1:
        return 0.0 * np.asarray(nbytes)
    return path.alpha * (_log2(parts) + parts - 1) + 2 * path.beta * np.asarray(nbytes, float) * (parts - 1) / parts


def allreduce_time(nbytes: float, parts: int, path: Channel) -> float:
    """Allreduce of ``nbytes`` (recursive halving/doubling: reduce-scatter + allgather)."""
    if parts == 1:
        return 0.0
    return 2 * path.alpha * _log2(parts) + 2 * path.beta * nbytes * (parts - 1) / parts
