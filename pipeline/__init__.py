"""shgcn preprocessing: turn a graph into a partitioned, training-ready store.

The stages live in one module each (``datasets``, ``readers``, ``ingest``,
``blocks``, ``nodedata``, ``partition``, ``quality``, ``layout``...) and are
composed by :mod:`shgcn.pipeline.compose`, which the ``pipeline`` command
and the Python API run on Dask::

    import shgcn.pipeline as pl
    result = pl.build("cora", parts=4, out="cora.zarr", models=("hp", "gp"))
    result = pl.build(scipy_matrix, parts=4, out="g.zarr", client=my_client, features=x, labels=y)
"""

from importlib import metadata as _md

try:
    __version__ = _md.version("shgcn")
except _md.PackageNotFoundError:  # a checkout that is not installed
    __version__ = "0+unknown"

from .api import build  # noqa: E402
from .compose import BuildConfig, BuildResult, model_names  # noqa: E402

__all__ = ["BuildConfig", "BuildResult", "__version__", "build", "model_names"]
