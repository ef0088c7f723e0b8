"""The compute backends of the trainer: the :class:`Backend` protocol and
its implementations, each one declared part (:data:`BACKENDS`,
``--backend``): a :class:`BackendSpec` (its name, the devices it runs on,
its own options) paired with the function that makes it. A new backend is
one module here, its spec (a constant of ``base.py``, the one place its name
is written, listed in :data:`SPECS`) paired with its maker in
:data:`BACKENDS`, and a test class subclassing
:class:`shgcn.testing.backends.BackendTests`; a new device is a name in its
spec's ``devices`` (``--device`` offers the union).

A backend whose library is optional (torch) is imported only when it is
made: importing this package imports none of them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from shgcn.core.registry import Registry

from ..parts import Parts
from .base import ACTS, NUMPY, TORCH, AdamState, Attention, Backend, BackendError, BackendSpec, Dropped, Noise

SPECS: Registry[BackendSpec] = Registry.of("--backend", NUMPY, TORCH)


def check_device(name: str, device: str) -> None:
    """Raise :class:`BackendError` when backend ``name`` does not run on ``device``."""
    runs = SPECS[name].devices if name in SPECS else ()
    if device not in runs:
        runs_on = ", ".join(runs) or "nothing"
        raise BackendError(f"--device {device}: the {name} backend runs on {runs_on}"
                           + (" (--backend torch --device cuda runs on a GPU)" if device == "cuda" else ""))


def devices() -> tuple[str, ...]:
    """Every device some backend runs on (``--device``'s choices), in registry order."""
    return tuple(dict.fromkeys(d for spec in SPECS.values() for d in spec.devices))


def _numpy(device: str = "cpu", threads: int = 1) -> Backend:
    from .numpy import NumpyBackend

    check_device(NUMPY.name, device)
    return NumpyBackend(threads)


def _torch(device: str = "cpu", threads: int = 1, torch_compile: str = "auto", torch_kernels: str = "auto") -> Backend:
    check_device(TORCH.name, device)
    try:
        import torch  # noqa: F401 - the optional dependency, loaded only for this backend
    except ImportError as e:
        raise BackendError(f"the torch backend needs PyTorch, which is not importable ({e}): install torch's CPU "
                           "build first (pip install torch --index-url https://download.pytorch.org/whl/cpu; an "
                           "unpinned torch resolves to a multi-GB CUDA build), then pip install 'shgcn[pyg]'") from None
    from .torch import TorchBackend

    return TorchBackend(device, threads, compile=torch_compile, kernels=torch_kernels)


# each spec paired with its maker, taking (device, threads, **its options): threads in the rank (``--threads``)
BACKENDS: Parts[BackendSpec, Callable[..., Backend]] = Parts.of(SPECS, (NUMPY, _numpy), (TORCH, _torch))


def backend(name: str = NUMPY.name, device: str = "cpu", threads: int = 1, **options: Any) -> Backend:
    """A new backend by name, on ``device`` (``cpu``, or ``cuda`` for a GPU backend), computing with
    ``threads`` threads (numba's and torch's; BLAS's are set before numpy loads), given its own options
    (``dest -> value``; defaults where absent; a KeyError for an unknown name)."""
    if name not in BACKENDS:
        raise KeyError(name)
    if threads > 1:
        from .threads import set_threads

        set_threads(threads)
    part = BACKENDS[name]
    return part.impl(device, threads, **part.own(options))


__all__ = ["ACTS", "BACKENDS", "SPECS", "AdamState", "Attention", "Backend", "BackendError", "BackendSpec", "Dropped",
           "NUMPY", "Noise", "TORCH", "backend", "check_device", "devices"]
