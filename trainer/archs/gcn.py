"""The GCN of Kipf & Welling with explicit forward and backward passes over a
rank's own rows (the paper's equations 1-5).

Layer k computes Z^k = Â H^{k-1} W^k and H^k = ReLU(Z^k) (no activation on
the last layer); dropout on every layer's input, fused with the previous
layer's ReLU. When W^k narrows the rows (d_out < d_in) H W is formed first,
so the rows that travel in the SpMM are d_out wide (MG-GCN's trick).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from shgcn.core import archs as specs

from ..backends import Noise
from ..graph import Graph
from .base import Layer, Stack, glorot


class GCNLayer(Layer):
    """``w`` of shape (dims[k], dims[k+1])."""

    names = decay = ("w",)

    def __init__(self, model: Stack, k: int, rng: np.random.Generator):
        super().__init__(model, k, rng)
        self.w = model.be.asarray(glorot(rng, model.dims[k], model.dims[k + 1]))

    def forward(self, hd: Any, graph: Graph, noise: Noise | None) -> tuple[Any, tuple]:
        """Z and (dropped input, its product with Â when Â comes first)."""
        if self.w_first:
            return graph.norm.forward(self.be.gemm(hd, self.w)), (hd, None)
        ah = graph.norm.forward(self.be.dense(hd))
        return self.be.gemm(ah, self.w), (hd, ah)

    def backward(self, saved: tuple, g: Any, graph: Graph) -> tuple[list[Any], Any]:
        be, (hd, ah) = self.be, saved
        if self.w_first:
            dm = graph.norm.transpose(g)
            return [be.gemm_tn(hd, dm)], (None if self.first else be.gemm(dm, self.w.T))
        return [be.gemm_tn(ah, g)], (None if self.first else graph.norm.transpose(be.gemm(g, self.w.T)))


class GCN(Stack):
    """Weights ``w`` of shape (dims[k], dims[k+1]) per layer, identical on every rank."""

    spec = specs.GCN

    layer, stream = GCNLayer, 0x6C
