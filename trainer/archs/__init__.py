"""The architectures ``--arch`` chooses from: one module each (gcn, sage,
gin, gat), all on the same exchange and backend. Each model class (a
:class:`~.base.Stack` of its layer class) declares its spec, a constant of
:mod:`shgcn.core.archs` (``spec = specs.GCN``: the one place its name is
written), and :data:`ARCHS` pairs the two by that reference. A model class
takes ``(dims, seed, backend, **its_options)``: the options its spec declares
(:class:`~shgcn.core.options.Option`), by name."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from shgcn.core import archs as specs
from shgcn.core.archs import ArchSpec

from ..backends import Backend
from ..parts import Parts
from .base import Model
from .gat import GAT
from .gcn import GCN
from .gin import GIN
from .sage import SAGE

ARCHS: Parts[ArchSpec, Any] = Parts.of(specs.ARCHS, (specs.GCN, GCN), (specs.SAGE, SAGE), (specs.GIN, GIN),
                                       (specs.GAT, GAT))

__all__ = ["ARCHS", "build"]


def build(spec: ArchSpec | str, dims: list[int], seed: int, backend: Backend,
          options: Mapping[str, Any] | None = None) -> Model:
    """The layers of ``spec`` with widths ``dims`` = [features, *hidden, classes] computing through ``backend``,
    given its own options from ``options`` (``dest -> value``; defaults where absent)."""
    part = ARCHS.get(spec if isinstance(spec, str) else spec.name)
    return part.impl(list(dims), seed, backend, **part.own(options or {}))
