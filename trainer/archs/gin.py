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

from ..backends import Noise
from ..graph import Graph
from .base import Layer, Stack


def _linear(rng: np.random.Generator, d_in: int, d_out: int) -> tuple[np.ndarray, np.ndarray]:
    """Weight and bias drawn as torch's ``Linear`` draws them (uniform within 1/sqrt(d_in)), as PyG's GIN MLPs."""
    bound = 1 / np.sqrt(d_in)
    return (rng.uniform(-bound, bound, (d_in, d_out)).astype(np.float32),
            rng.uniform(-bound, bound, d_out).astype(np.float32))


class GINLayer(Layer):
    """``w1`` (d_in, d_out), ``b1``, ``w2`` (d_out, d_out), ``b2``, ``eps`` (1,)."""

    names, decay = ("w1", "b1", "w2", "b2", "eps"), ("w1", "w2")

    def __init__(self, model: Stack, k: int, rng: np.random.Generator):
        super().__init__(model, k, rng)
        a, b = model.dims[k:k + 2]
        self.w1, self.b1, self.w2, self.b2 = (model.be.asarray(x) for x in (*_linear(rng, a, b), *_linear(rng, b, b)))
        self.eps = model.be.zeros((1,))

    def forward(self, hd: Any, graph: Graph, noise: Noise | None) -> tuple[Any, tuple]:
        be, eps = self.be, self.eps
        # the sums below go into their first operand, a new array of a product (the graph's products return
        # new arrays too): no new array, nor its first touch of fresh pages, per sum
        if self.w_first:
            u = be.gemm(hd, self.w1)  # aggregate H W_1: the narrower rows travel
            agg = None  # backward needs only u: (1 + eps) u + the sum, + b1 and ReLU in one pass
            a1 = graph.sum.forward(u)
            be.add(a1, u, alpha=1 + eps[0], bias=self.b1, relu=True, out=a1)
        else:
            u = be.dense(hd)
            agg = graph.sum.forward(u)
            be.add(agg, u, alpha=1 + eps[0], out=agg)
            a1 = be.gemm(agg, self.w1)
            be.add(a1, bias=self.b1, relu=True, out=a1)
        z = be.gemm(a1, self.w2)
        be.add(z, bias=self.b2, out=z)
        return z, (hd, u, agg, a1)

    def backward(self, saved: tuple, g: Any, graph: Graph) -> tuple[list[Any], Any]:
        be, eps, (hd, u, agg, a1) = self.be, self.eps, saved
        db2, dw2 = be.colsum(g), be.gemm_tn(a1, g)
        dz1 = be.relu_grad(be.gemm(g, self.w2.T), a1)
        db1, dagg = be.colsum(dz1), (dz1 if self.w_first else be.gemm(dz1, self.w1.T))
        deps = be.vdot(dagg, u)  # d/d eps of (1 + eps) u
        if self.w_first:
            du = graph.sum.transpose(dagg)
            be.add(du, dagg, alpha=1 + eps[0], out=du)
            dw1, dh = be.gemm_tn(hd, du), (None if self.first else be.gemm(du, self.w1.T))
        else:
            dw1, dh = be.gemm_tn(agg, dz1), None
            if not self.first:
                dh = graph.sum.transpose(dagg)
                be.add(dh, dagg, alpha=1 + eps[0], out=dh)
        return [dw1, db1, dw2, db2, deps], dh


class GIN(Stack):
    """Per layer: ``w1`` (d_in, d_out), ``b1``, ``w2`` (d_out, d_out), ``b2``, ``eps`` (1,)."""

    spec = specs.GIN

    layer, stream = GINLayer, 0x61E
