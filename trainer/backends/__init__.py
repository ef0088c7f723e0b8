"""The compute backends of the trainer: the :class:`Backend` protocol and
its implementations (a registry, ``--backend``). A new backend is one module
here, one line in :data:`BACKENDS`, and a test class subclassing
``BackendTests``."""

from __future__ import annotations

from collections.abc import Callable

from .base import ACTS, AdamState, Attention, Backend, Dropped, Noise

BACKENDS: dict[str, Callable[[], Backend]] = {}


def _numpy() -> Backend:
    from .numpy import NumpyBackend

    return NumpyBackend()


BACKENDS["numpy"] = _numpy


def backend(name: str = "numpy") -> Backend:
    """A new backend by name."""
    return BACKENDS[name]()


__all__ = ["ACTS", "BACKENDS", "AdamState", "Attention", "Backend", "Dropped", "Noise", "backend"]
