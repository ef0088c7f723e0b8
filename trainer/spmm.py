"""Distributed products with a rank's local matrix: M X and M^T G for its
own rows, from its local blocks and an exchange strategy."""

from __future__ import annotations

import numpy as np

from .backend import BACKEND, CPU
from .exchange import Exchange
from .plan import LocalMatrix


class ScaledSpMM:
    """M X and M^T G for M = diag(left) P, from a subclass's P X
    (``_product``) and, for a directed P, P^T G (``_fold``); for a symmetric
    P, M^T G = P (left G)."""

    left: np.ndarray | None
    symmetric: bool

    def _product(self, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _fold(self, g: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def forward(self, x: np.ndarray) -> np.ndarray:
        """(n_own, d) -> (n_own, d): rows of M X."""
        y = self._product(x)
        return y * self.left if self.left is not None else y

    def transpose(self, g: np.ndarray) -> np.ndarray:
        """(n_own, d) -> (n_own, d): rows of M^T G."""
        if self.left is not None:
            g = g * self.left
        return self._product(g) if self.symmetric else self._fold(g)


class DistSpMM(ScaledSpMM):
    """M X and M^T G restricted to a rank's own rows, for M = diag(left) P.

    P is the local matrix (Â, or the adjacency pattern); ``left`` an optional
    per-row scale of the rank's own rows (GraphSAGE's 1/degree, GraphSAINT's
    aggregator normalization). For a symmetric P, M^T G = P (left G): the
    same expand, of scaled rows. For a directed P the rank multiplies its
    received columns' transposed blocks by its own rows of left G and folds
    the partial sums back to their owners: the same rows as the forward
    exchange, in reverse.
    """

    def __init__(self, lm: LocalMatrix, ex: Exchange, symmetric: bool, left: np.ndarray | None = None,
                 backend: CPU = BACKEND):
        self.lm = lm
        self.ex = ex
        self.symmetric = symmetric
        self.left = None if left is None else np.asarray(left, np.float32)[:, None]
        self.be = backend

    def _product(self, x: np.ndarray) -> np.ndarray:
        """P X: the own-column product while the received rows travel, then each sender's block."""
        out = {}

        def local():
            out["y"] = self.be.spmm(self.lm.own, x)

        def on_block(q, rows):
            out["y"] += self.be.spmm(self.lm.halo[q], rows)

        self.ex.expand(self.be.to_host(x), local, on_block)
        return out["y"]

    def _fold(self, g: np.ndarray) -> np.ndarray:
        """P^T G of a directed P: the transposed blocks' partial sums folded back to their owners."""
        parts = {q: self.be.to_host(self.be.spmm(m, g)) for q, m in self.lm.halo_t.items()}
        out = {}

        def local():
            out["y"] = self.be.spmm(self.lm.own_t, g)

        def on_block(rows, buf):
            out["y"][rows] += buf  # rows are distinct within one sender

        self.ex.fold(parts, g.shape[1], local, on_block)
        return out["y"]
