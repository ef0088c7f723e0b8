"""The compute backends of the trainer: the :class:`Backend` protocol and
its implementations (a registry, ``--backend``). A new backend is one module
here, one line in :data:`BACKENDS` (and its devices in :data:`DEVICES`), and
a test class subclassing :class:`shgcn.testing.backends.BackendTests`.

A backend whose library is optional (torch) is imported only when it is
made: importing this package imports none of them."""

from __future__ import annotations

from collections.abc import Callable

from .base import ACTS, AdamState, Attention, Backend, BackendError, Dropped, Noise

# name -> a maker taking (device, threads): threads in the rank (``--threads``)
BACKENDS: dict[str, Callable[[str, int], Backend]] = {}
# the devices each backend runs on (``--device``), checked with the options, before any library loads
DEVICES: dict[str, tuple[str, ...]] = {"numpy": ("cpu",), "torch": ("cpu", "cuda")}


def check_device(name: str, device: str) -> None:
    """Raise :class:`BackendError` when backend ``name`` does not run on ``device``."""
    if device not in DEVICES.get(name, ()):
        runs_on = ", ".join(DEVICES.get(name, ())) or "nothing"
        raise BackendError(f"--device {device}: the {name} backend runs on {runs_on}"
                           + (" (--backend torch --device cuda runs on a GPU)" if device == "cuda" else ""))


def _numpy(device: str = "cpu", threads: int = 1) -> Backend:
    from .numpy import NumpyBackend

    check_device("numpy", device)
    return NumpyBackend(threads)


def _torch(device: str = "cpu", threads: int = 1) -> Backend:
    check_device("torch", device)
    try:
        import torch  # noqa: F401 - the optional dependency, loaded only for this backend
    except ImportError as e:
        raise BackendError(f"the torch backend needs PyTorch, which is not importable ({e}): install torch's CPU "
                           "build first (pip install torch --index-url https://download.pytorch.org/whl/cpu; an "
                           "unpinned torch resolves to a multi-GB CUDA build), then pip install 'shgcn[pyg]'") from None
    from .torch import TorchBackend

    return TorchBackend(device, threads)


BACKENDS["numpy"] = _numpy
BACKENDS["torch"] = _torch


def backend(name: str = "numpy", device: str = "cpu", threads: int = 1) -> Backend:
    """A new backend by name, on ``device`` (``cpu``, or ``cuda`` for a GPU backend), computing with
    ``threads`` threads (numba's and torch's; BLAS's are set before numpy loads)."""
    if threads > 1:
        from .threads import set_threads

        set_threads(threads)
    return BACKENDS[name](device, threads)


__all__ = ["ACTS", "BACKENDS", "DEVICES", "AdamState", "Attention", "Backend", "BackendError", "Dropped", "Noise",
           "backend", "check_device"]
