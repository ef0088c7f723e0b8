"""GraphSAGE (Hamilton et al.) with mean aggregation and a root weight, as
PyG's ``SAGEConv``: layer k computes

    Z^k = mean_{j in N(i)} H_j W_n + H_i W_r + b,   H^k = ReLU(Z^k)

(no activation on the last layer; dropout on every layer's input). The mean
is D^-1 A over the graph's edges (self loops excluded) through
:attr:`.graph.Graph.mean`, so it reuses Â's exchange plan: the same rows
travel. W_n and W_r are one (d_in, 2 d_out) array [W_n | W_r]; when it
narrows the rows, H [W_n | W_r] is one GEMM and only H W_n travels.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from shgcn.core import archs as specs

from ..backends import Backend, Noise
from ..graph import Graph
from .base import Layers, glorot


class SAGE(Layers):
    """Per layer: ``w`` (d_in, 2 d_out) = [W_n | W_r] and bias ``b`` (d_out,)."""

    spec = specs.SAGE

    def __init__(self, dims: list[int], seed: int, backend: Backend, **options: Any):
        rng = np.random.default_rng([seed, 0x5A6E])
        super().__init__(dims, backend, options)
        self.params = []
        for a, b in zip(dims[:-1], dims[1:]):
            self.params += [backend.asarray(np.hstack([glorot(rng, a, b), glorot(rng, a, b)])), backend.zeros((b,))]
        self.decay = [0]

    def forward(self, x: Any, graph: Graph, noise: Noise | None) -> tuple[np.ndarray, tuple]:
        be = self.be
        cache: list[tuple[Any, Any]] = []
        z: Any = x
        for k in range(len(self.dims) - 1):
            w, b = self.params[2 * k], self.params[2 * k + 1]
            d = self.dims[k + 1]
            hd, _ = be.act_dropout(z, "relu" if k else "none", noise, k, graph.gids)
            if self.w_first(k):
                y = be.gemm(hd, w)
                z = graph.mean.forward(be.concat([y[:, :d]], 1))
                be.add(z, y[:, d:], bias=b, out=z)  # into the mean's new array: no new array (nor its pages)
                cache.append((hd, None))
            else:
                mh = graph.mean.forward(be.dense(hd))
                z = be.gemm(mh, w[:, :d])
                be.add(z, be.gemm(hd, w[:, d:]), bias=b, out=z)
                cache.append((hd, mh))
        return z, (noise, cache)

    def backward(self, saved: tuple, g: np.ndarray, graph: Graph) -> list[np.ndarray]:
        be = self.be
        noise, cache = saved
        grads = self.placeholders()
        for k in range(len(self.dims) - 2, -1, -1):
            w, (hd, mh) = self.params[2 * k], cache[k]
            d = self.dims[k + 1]
            grads[2 * k + 1] = be.colsum(g)
            if self.w_first(k):
                dy = be.concat([graph.mean.transpose(g), g], 1)
                grads[2 * k] = be.gemm_tn(hd, dy)
                dh = be.gemm(dy, w.T) if k else None
            else:
                grads[2 * k] = be.concat([be.gemm_tn(mh, g), be.gemm_tn(hd, g)], 1)
                dh = None
                if k:
                    dh = graph.mean.transpose(be.gemm(g, w[:, :d].T))
                    be.add(dh, be.gemm(g, w[:, d:].T), out=dh)
            if dh is None:
                break
            g = be.act_dropout_grad(dh, hd, "relu", noise, None)
        return grads
