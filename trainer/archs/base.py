"""What every architecture shares: the :class:`Model` interface, weight
initialization, the dropout mask's definition, and :class:`SingleHead` (the
widths, one head per layer, the backend and W-first for the layers that
aggregate by a product). float32 throughout. The layers: gcn.py, sage.py,
gin.py, gat.py (their specs: :data:`shgcn.core.archs.ARCHS`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import scipy.sparse as sp

from shgcn.core.archs import ArchSpec

from ..backends import Backend, Noise

if TYPE_CHECKING:
    from ..graph import Graph


def dropout_mask(backend: Backend, noise: Noise, layer: int, gids: np.ndarray, d: int) -> np.ndarray:
    """(n, d) float32 inverted-dropout mask (0 or the scale) of rows with
    original ids ``gids``: what the trainer multiplies layer ``layer``'s
    input by (a pure function of the noise's seed, epoch and rate, the layer, the id and the column)."""
    ones = np.ones((len(gids), d), np.float32)
    out, _ = backend.act_dropout(ones, "none", noise, layer, np.asarray(gids, np.int64))
    return backend.to_host(out)


def as_input(x: np.ndarray, max_density: float = 0.1):
    """Features as CSR when they are sparse enough to gain from it."""
    x = np.asarray(x, dtype=np.float32)
    nnz = np.count_nonzero(x)
    return sp.csr_matrix(x) if nnz <= max_density * x.size else x


def glorot(rng: np.random.Generator, d_in: int, d_out: int) -> np.ndarray:
    limit = np.sqrt(6.0 / (d_in + d_out))
    return rng.uniform(-limit, limit, (d_in, d_out)).astype(np.float32)


class Model(Protocol):
    """What the training loop needs of an architecture (gcn.py, sage.py, gin.py, gat.py).

    ``spec``: its entry of :data:`shgcn.core.archs.ARCHS`; ``params``: every
    trained array (float32, identical on every rank), the order of the
    gradients ``backward`` returns, of the optimizer's state and of the
    checkpoint; ``decay``: indices of the params under weight decay (the
    first layer's weights, as Kipf & Welling); ``heads``: per layer."""

    spec: ArchSpec
    dims: list[int]
    heads: list[int]
    params: list[Any]
    decay: list[int]

    def w_first(self, k: int) -> bool: ...

    def attn_rate(self, dropout: float) -> float: ...

    def forward(self, x: Any, graph: Graph, noise: Noise | None) -> tuple[Any, Any]: ...

    def backward(self, cache: Any, g: Any, graph: Graph) -> list[Any]: ...


class Layers:
    """What every architecture's constructor takes and keeps: its spec, the widths
    ``dims`` = [features, *hidden, classes], the backend, and its own options (``dest -> value``, as its spec
    declares them), from which the heads per layer follow."""

    spec: ArchSpec

    def __init__(self, dims: list[int], backend: Backend, options: Mapping[str, Any]):
        self.dims = list(dims)
        self.options = self.spec.own(options)
        self.heads = self.spec.layer_heads(len(self.dims) - 1, self.options)
        self.be = backend

    def attn_rate(self, dropout: float) -> float:
        """The dropout rate on attention coefficients at input dropout ``dropout`` (none without attention)."""
        return 0.0

    def w_first(self, k: int) -> bool:
        """Multiply by W before the aggregation (:meth:`shgcn.core.archs.ArchSpec.w_first`)."""
        return self.spec.w_first(self.dims, k)

    def placeholders(self) -> list[Any]:
        """One empty gradient per parameter (filled by backward)."""
        return [np.empty(0, np.float32)] * len(self.params)  # type: ignore[attr-defined]
