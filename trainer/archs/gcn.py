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

from ..backends import Backend, Noise
from ..graph import Graph
from .base import Layers, glorot


class GCN(Layers):
    """Weights ``ws[k]`` of shape (dims[k], dims[k+1]), identical on every rank."""

    spec = specs.GCN

    def __init__(self, dims: list[int], seed: int, backend: Backend, **options: Any):
        rng = np.random.default_rng([seed, 0x6C])
        super().__init__(dims, backend, options)
        self.ws = [backend.asarray(glorot(rng, a, b)) for a, b in zip(dims[:-1], dims[1:])]
        self.params = self.ws
        self.decay = [0]

    def forward(self, x: Any, graph: Graph, noise: Noise | None) -> tuple[np.ndarray, tuple]:
        """Logits (n_own, classes) and what backward needs: the noise and, per
        layer, (dropped input, its product with Â when Â comes first)."""
        be = self.be
        cache: list[tuple[Any, Any]] = []
        z: Any = x  # dense, or CSR for sparse features (first layer only)
        for k, w in enumerate(self.ws):
            hd, _ = be.act_dropout(z, "relu" if k else "none", noise, k, graph.gids)
            if self.w_first(k):
                cache.append((hd, None))
                z = graph.norm.forward(be.gemm(hd, w))
            else:
                ah = graph.norm.forward(be.dense(hd))
                cache.append((hd, ah))
                z = be.gemm(ah, w)
        return z, (noise, cache)

    def backward(self, saved: tuple, g: np.ndarray, graph: Graph) -> list[np.ndarray]:
        """Local weight gradients (before the allreduce) from G = dL/dlogits."""
        be = self.be
        noise, cache = saved
        grads = self.placeholders()
        for k in range(len(self.ws) - 1, -1, -1):
            w, (hd, ah) = self.ws[k], cache[k]
            if self.w_first(k):
                dm = graph.norm.transpose(g)
                grads[k] = be.gemm_tn(hd, dm)
                dh = be.gemm(dm, w.T) if k else None
            else:
                grads[k] = be.gemm_tn(ah, g)
                dh = graph.norm.transpose(be.gemm(g, w.T)) if k else None
            if dh is None:
                break
            g = be.act_dropout_grad(dh, hd, "relu", noise, None)
        return grads
