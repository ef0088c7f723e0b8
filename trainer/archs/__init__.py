"""The architectures ``--arch`` chooses from: one module each (gcn, sage,
gin, gat), found through their specs in :data:`shgcn.core.archs.ARCHS`
(``impl``), all on the same exchange and backend."""

from __future__ import annotations

from shgcn.core.archs import ARCHS, ArchSpec
from shgcn.core.registry import load

from ..backends import Backend
from .base import Model

__all__ = ["ARCHS", "build"]


def build(spec: ArchSpec, dims: list[int], seed: int, heads: list[int], backend: Backend) -> Model:
    """The layers of ``spec`` with widths ``dims`` = [features, *hidden, classes] and ``heads`` per layer
    (:meth:`shgcn.core.archs.ArchSpec.layer_heads`), computing through ``backend``."""
    return load(spec.impl)(list(dims), seed, list(heads), backend)
