"""The architectures ``--arch`` chooses from (one module each, all on the same exchange)."""

from __future__ import annotations

from shgcn.core.costs import ARCHS, layer_heads

from .gat import GAT
from .gcn import GCN
from .gin import GIN
from .model import Model
from .sage import SAGE

__all__ = ["ARCHS", "build"]


def build(arch: str, dims: list[int], seed: int, heads: int = 8, out_heads: int = 1) -> Model:
    """A model of ``arch`` with layer widths ``dims`` = [features, *hidden, classes]
    (GAT: ``heads`` on hidden layers, ``out_heads`` on the last, per-head widths)."""
    if arch == "gat":
        return GAT(dims, seed, layer_heads(arch, len(dims) - 1, heads, out_heads))
    if arch == "sage":
        return SAGE(dims, seed)
    if arch == "gin":
        return GIN(dims, seed)
    return GCN(dims, seed)
