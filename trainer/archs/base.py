"""What every architecture shares: the :class:`Model` interface, weight
initialization, the dropout mask's definition, :class:`Layers` (the widths,
heads per layer, backend and W-first) and :class:`Stack`, one generic loop over
:class:`Layer` s (named parameters, one layer's forward and backward). float32
throughout. The layers: gcn.py, sage.py, gin.py, gat.py (specs: :data:`shgcn.core.archs.ARCHS`)."""

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


class Layer:
    """One layer of a :class:`Stack`, built with the stack's generator (its draws in layer order): its parameters
    are attributes named by ``names`` (their order in the model's ``params``); ``decay``: those of the first layer
    under weight decay. ``forward`` takes the layer's dropped input and returns its output and what ``backward``
    needs; ``backward`` returns the gradients of ``names`` and that of the input (None on the first layer)."""

    names: tuple[str, ...] = ()
    decay: tuple[str, ...] = ()

    def __init__(self, model: Stack, k: int, rng: np.random.Generator):
        self.be, self.k, self.first, self.last = model.be, k, k == 0, k == len(model.dims) - 2
        self.w_first = model.w_first(k)

    def forward(self, h: Any, graph: Graph, noise: Noise | None) -> tuple[Any, Any]:
        raise NotImplementedError

    def backward(self, saved: Any, g: Any, graph: Graph) -> tuple[list[Any], Any]:
        raise NotImplementedError


class Stack(Layers):
    """A model of ``layer`` s, one a width step, with ``act`` and dropout on every layer's input but the first's
    activation (fused: :meth:`~.Backend.act_dropout`); ``keeps``: the activation's gradient needs the keep mask.
    The weights are drawn from the generator seeded ``[seed, stream]``."""

    layer: type[Layer]
    stream: int
    act, keeps = "relu", False

    def __init__(self, dims: list[int], seed: int, backend: Backend, **options: Any):
        rng = np.random.default_rng([seed, self.stream])
        super().__init__(dims, backend, options)
        self.layers = [self.layer(self, k, rng) for k in range(len(self.dims) - 1)]
        self.params = [getattr(layer, name) for layer in self.layers for name in layer.names]
        self.decay = [self.layer.names.index(name) for name in self.layer.decay]

    def forward(self, x: Any, graph: Graph, noise: Noise | None) -> tuple[Any, tuple]:
        """Logits (n_own, classes) and what backward needs: the noise and, per layer, (dropped input, keep mask,
        the layer's own)."""
        cache: list[tuple[Any, Any, Any]] = []
        z: Any = x  # dense, or CSR for sparse features (first layer only)
        for k, layer in enumerate(self.layers):
            hd, keep = self.be.act_dropout(z, self.act if k else "none", noise, k, graph.gids, keep=self.keeps and k > 0)
            z, saved = layer.forward(hd, graph, noise)
            cache.append((hd, keep if self.keeps else None, saved))
        return z, (noise, cache)

    def backward(self, saved: tuple, g: Any, graph: Graph) -> list[Any]:
        """Local parameter gradients (before the allreduce) from G = dL/dlogits."""
        noise, cache = saved
        grads, end = self.placeholders(), len(self.params)
        for layer, (hd, keep, own) in zip(reversed(self.layers), reversed(cache)):
            grads[end - len(layer.names):end], dh = layer.backward(own, g, graph)
            end -= len(layer.names)
            if dh is None:
                break
            g = self.be.act_dropout_grad(dh, hd, self.act, noise, keep)
        return grads
