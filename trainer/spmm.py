"""Distributed products with the normalized adjacency: Â X and Â^T G for a
rank's own rows, computed from its local matrix and an exchange strategy."""

from __future__ import annotations

import numpy as np

from .exchange import Exchange
from .plan import LocalMatrix


class DistSpMM:
    """Â X and Â^T G restricted to a rank's own rows.

    For a symmetric Â (undirected graph) the transpose product is the same
    expand. For a directed Â the rank multiplies its received columns'
    transposed blocks by its own rows of G and folds the partial sums back to
    their owners: the same rows as the forward exchange, in reverse.
    """

    def __init__(self, lm: LocalMatrix, ex: Exchange, symmetric: bool):
        self.lm = lm
        self.ex = ex
        self.symmetric = symmetric

    def forward(self, x: np.ndarray) -> np.ndarray:
        """(n_own, d) -> (n_own, d): rows of Â X."""
        out = {}

        def local():
            out["y"] = self.lm.own @ x

        def on_block(q, rows):
            out["y"] += self.lm.halo[q] @ rows

        self.ex.expand(x, local, on_block)
        return np.asarray(out["y"], dtype=np.float32)

    def transpose(self, g: np.ndarray) -> np.ndarray:
        """(n_own, d) -> (n_own, d): rows of Â^T G."""
        if self.symmetric:
            return self.forward(g)
        parts = {q: np.asarray(m @ g, dtype=np.float32) for q, m in self.lm.halo_t.items()}
        out = {}

        def local():
            out["y"] = np.asarray(self.lm.own_t @ g, dtype=np.float32)

        def on_block(rows, buf):
            out["y"][rows] += buf  # rows are distinct within one sender

        self.ex.fold(parts, g.shape[1], local, on_block)
        return out["y"]
