"""GIN (Xu et al.) with a learnable epsilon and a two-layer MLP, as PyG's
``GINConv(mlp, train_eps=True)``: layer k computes

    Z^k = MLP((1 + eps) H_i + sum_{j in N(i)} H_j),  MLP(u) = ReLU(u W_1 + b_1) W_2 + b_2,

then H^k = ReLU(Z^k) (no activation on the last layer; dropout on every
layer's input). The sum is A over the graph's edges (self loops excluded:
:attr:`.graph.Graph.sum`), Â's exchange plan. The aggregation is linear,
so when W_1 narrows the rows H W_1 is formed first and only it travels.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from shgcn.core import archs as specs

from ..backends import Backend, Noise
from ..graph import Graph
from .base import Layers

PER_LAYER = 5  # w1, b1, w2, b2, eps


def _linear(rng: np.random.Generator, d_in: int, d_out: int) -> tuple[np.ndarray, np.ndarray]:
    """Weight and bias drawn as torch's ``Linear`` draws them (uniform within 1/sqrt(d_in)), as PyG's GIN MLPs."""
    bound = 1 / np.sqrt(d_in)
    return (rng.uniform(-bound, bound, (d_in, d_out)).astype(np.float32),
            rng.uniform(-bound, bound, d_out).astype(np.float32))


class GIN(Layers):
    """Per layer: ``w1`` (d_in, d_out), ``b1``, ``w2`` (d_out, d_out), ``b2``, ``eps`` (1,)."""

    spec = specs.GIN

    def __init__(self, dims: list[int], seed: int, backend: Backend, **options: Any):
        rng = np.random.default_rng([seed, 0x61E])
        super().__init__(dims, backend, options)
        self.params = []
        for a, b in zip(dims[:-1], dims[1:]):
            self.params += [backend.asarray(x) for x in (*_linear(rng, a, b), *_linear(rng, b, b))]
            self.params.append(backend.zeros((1,)))
        self.decay = [0, 2]

    def forward(self, x: Any, graph: Graph, noise: Noise | None) -> tuple[np.ndarray, tuple]:
        be, cache = self.be, []
        z: Any = x
        for k in range(len(self.dims) - 1):
            w1, b1, w2, b2, eps = self.params[PER_LAYER * k:PER_LAYER * (k + 1)]
            hd, _ = be.act_dropout(z, "relu" if k else "none", noise, k, graph.gids)
            # the sums below go into their first operand, a new array of a product (the graph's products return
            # new arrays too): no new array, nor its first touch of fresh pages, per sum
            if self.w_first(k):
                u = be.gemm(hd, w1)  # aggregate H W_1: the narrower rows travel
                agg = None  # backward needs only u: (1 + eps) u + the sum, + b1 and ReLU in one pass
                a1 = graph.sum.forward(u)
                be.add(a1, u, alpha=1 + eps[0], bias=b1, relu=True, out=a1)
            else:
                u = be.dense(hd)
                agg = graph.sum.forward(u)
                be.add(agg, u, alpha=1 + eps[0], out=agg)
                a1 = be.gemm(agg, w1)
                be.add(a1, bias=b1, relu=True, out=a1)
            z = be.gemm(a1, w2)
            be.add(z, bias=b2, out=z)
            cache.append((hd, u, agg, a1))
        return z, (noise, cache)

    def backward(self, saved: tuple, g: np.ndarray, graph: Graph) -> list[np.ndarray]:
        be = self.be
        noise, cache = saved
        grads = self.placeholders()
        for k in range(len(self.dims) - 2, -1, -1):
            w1, _, w2, _, eps = self.params[PER_LAYER * k:PER_LAYER * (k + 1)]
            hd, u, agg, a1 = cache[k]
            i = PER_LAYER * k
            grads[i + 3] = be.colsum(g)
            grads[i + 2] = be.gemm_tn(a1, g)
            dz1 = be.relu_grad(be.gemm(g, w2.T), a1)
            grads[i + 1] = be.colsum(dz1)
            dagg = dz1 if self.w_first(k) else be.gemm(dz1, w1.T)
            grads[i + 4] = be.vdot(dagg, u)  # d/d eps of (1 + eps) u
            if self.w_first(k):
                du = graph.sum.transpose(dagg)
                be.add(du, dagg, alpha=1 + eps[0], out=du)
                grads[i] = be.gemm_tn(hd, du)
                dh = be.gemm(du, w1.T) if k else None
            else:
                grads[i] = be.gemm_tn(agg, dz1)
                dh = None
                if k:
                    dh = graph.sum.transpose(dagg)
                    be.add(dh, dagg, alpha=1 + eps[0], out=dh)
            if dh is None:
                break
            g = be.act_dropout_grad(dh, hd, "relu", noise, None)
        return grads
