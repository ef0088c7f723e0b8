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

from ..backends import Noise
from ..graph import Graph
from .base import Layer, Stack, glorot


class SAGELayer(Layer):
    """``w`` (d_in, 2 d_out) = [W_n | W_r] and bias ``b`` (d_out,)."""

    names, decay = ("w", "b"), ("w",)

    def __init__(self, model: Stack, k: int, rng: np.random.Generator):
        super().__init__(model, k, rng)
        a, self.d = model.dims[k:k + 2]
        self.w = model.be.asarray(np.hstack([glorot(rng, a, self.d), glorot(rng, a, self.d)]))
        self.b = model.be.zeros((self.d,))

    def forward(self, hd: Any, graph: Graph, noise: Noise | None) -> tuple[Any, tuple]:
        be, w, d = self.be, self.w, self.d
        if self.w_first:
            y = be.gemm(hd, w)
            z = graph.mean.forward(be.concat([y[:, :d]], 1))
            be.add(z, y[:, d:], bias=self.b, out=z)  # into the mean's new array: no new array (nor its pages)
            return z, (hd, None)
        mh = graph.mean.forward(be.dense(hd))
        z = be.gemm(mh, w[:, :d])
        be.add(z, be.gemm(hd, w[:, d:]), bias=self.b, out=z)
        return z, (hd, mh)

    def backward(self, saved: tuple, g: Any, graph: Graph) -> tuple[list[Any], Any]:
        be, w, d, (hd, mh) = self.be, self.w, self.d, saved
        db = be.colsum(g)
        if self.w_first:
            dy = be.concat([graph.mean.transpose(g), g], 1)
            return [be.gemm_tn(hd, dy), db], (None if self.first else be.gemm(dy, w.T))
        dw = be.concat([be.gemm_tn(mh, g), be.gemm_tn(hd, g)], 1)
        if self.first:
            return [dw, db], None
        dh = graph.mean.transpose(be.gemm(g, w[:, :d].T))
        be.add(dh, be.gemm(g, w[:, d:].T), out=dh)
        return [dw, db], dh


class SAGE(Stack):
    """Per layer: ``w`` (d_in, 2 d_out) = [W_n | W_r] and bias ``b`` (d_out,)."""

    spec = specs.SAGE

    layer, stream = SAGELayer, 0x5A6E
