"""shgcn preprocessing: turn a graph into a partitioned, training-ready store.

The build reads as its data flow (see the README's architecture section)::

    sources/  -> stages/ingest -> stages/normalize -> stages/partition (models/) -> stages/quality
              -> stages/layout -> stages/write -> store

:mod:`.builder` composes the stages on Dask; the ``pipeline`` command and the
Python API run it::

    import shgcn.pipeline as pl
    result = pl.build("cora", parts=4, out="cora.zarr", models=("hp", "gp"))
    result = pl.build(scipy_matrix, parts=4, out="g.zarr", client=my_client, features=x, labels=y)

Attributes are imported on first use, so ``import shgcn.pipeline`` (and the
command's ``--help`` and ``--version``) loads neither Dask nor numba.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._version import __version__

if TYPE_CHECKING:
    from .api import build
    from .config import BuildConfig, BuildResult
    from .models import model_names

__all__ = ["BuildConfig", "BuildResult", "__version__", "build", "model_names"]

_LAZY = {"build": ".api", "BuildConfig": ".config", "BuildResult": ".config", "model_names": ".models"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    """The module's names and the lazy ones (not yet imported, so not in ``globals()``)."""
    return sorted({*globals(), *_LAZY})
