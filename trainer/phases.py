"""Where a mini-batch step's time goes on one rank (:class:`Phases`): seconds per phase, in the order the
step runs them, recorded in the run log's step records (``phase_time``).

The phases of a step (``trainer.loop._minibatch_step``): ``forward`` and ``backward`` (compute, and the
exchanges' waits inside them, also counted alone as ``exchange_wait``), ``loss``, ``pack`` (the gradients
into the allreduce's buffer), ``next_batch`` (the next batch's plan and dropped input, made while the
allreduce travels; with ``--plan-ahead thread`` this is the wait for the helper thread's plan),
``allreduce_wait`` (what is left of the allreduce after that) and ``optimizer`` (Adam).
"""

from __future__ import annotations

import time


class Phases:
    """Seconds per named phase: :meth:`mark` closes the phase running since the previous mark (or since
    the object was made) under ``name``; a name marked twice adds up."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._last = time.perf_counter()

    def mark(self, name: str) -> None:
        now = time.perf_counter()
        self.seconds[name] = self.seconds.get(name, 0.0) + now - self._last
        self._last = now

    def add(self, name: str, seconds: float) -> None:
        """Record ``seconds`` measured elsewhere (a part of another phase, e.g. the exchanges' waits)."""
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds

    def rounded(self, digits: int = 7) -> dict[str, float]:
        """The phases rounded for the run log (0.1 µs)."""
        return {k: round(v, digits) for k, v in self.seconds.items()}


def kernel_time(backend) -> dict[str, float]:
    """The backend's seconds per kernel since the last call, rounded for the run log (0.1 µs); {} for a
    backend that does not time its kernels (a GPU backend times them with events and waits for them here)."""
    take = getattr(backend, "take_kernel_time", None)
    return {k: round(v, 7) for k, v in take().items()} if take is not None else {}
