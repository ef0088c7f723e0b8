"""Products with a rank's rows of a matrix: the 1D product over an exchange
(:class:`LocalProduct`), and the row scale every operator may carry
(:class:`Scaled`), composed around any algorithm's product.

A product computes, for the rank's own rows, ``forward(x)`` = P X and
``transpose(g)`` = Pᵀ G (:class:`Product`); the algorithms give their own
(1.5D's reduce, 2D's SUMMA) with the same two methods.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from .backends import Backend
from .exchanges import Exchange
from .plan import LocalMatrix


class Product(Protocol):
    """P X and Pᵀ G restricted to a rank's own rows ((n_own, d) -> (n_own, d))."""

    def forward(self, x: Any) -> Any: ...

    def transpose(self, g: Any) -> Any: ...


class Scaled:
    """M X and Mᵀ G for M = diag(left) P: a product with a per-row scale of the rank's own rows
    (GraphSAGE's 1/degree, GraphSAINT's aggregator normalization), or none; the scale is made the
    backend's array once (a device backend's products are on its device)."""

    def __init__(self, product: Product, left: np.ndarray | None = None, backend: Backend | None = None):
        self.product = product
        scale = None if left is None else np.asarray(left, np.float32)[:, None]
        self.left = scale if scale is None or backend is None else backend.from_host(scale)

    def forward(self, x: Any) -> Any:
        """(n_own, d) -> (n_own, d): rows of M X."""
        y = self.product.forward(x)
        return y * self.left if self.left is not None else y

    def transpose(self, g: Any) -> Any:
        """(n_own, d) -> (n_own, d): rows of Mᵀ G."""
        return self.product.transpose(g * self.left if self.left is not None else g)


class LocalProduct:
    """P X and Pᵀ G for a rank's rows of P (the local matrix: Â, or the adjacency pattern) over an exchange.

    The forward multiplies the own columns while the received rows travel, then each sender's block. For a
    symmetric P, Pᵀ G = P G: the same expand. For a directed P the rank multiplies its received columns'
    transposed blocks by G and folds the partial sums back to their owners: the same rows as the forward
    exchange, in reverse.
    """

    def __init__(self, lm: LocalMatrix, ex: Exchange, symmetric: bool, backend: Backend):
        self.lm, self.ex, self.symmetric, self.be = lm, ex, symmetric, backend

    def forward(self, x: Any) -> Any:
        out = {}

        def local():
            out["y"] = self.be.spmm(self.lm.own, x)

        def on_block(q, rows):
            out["y"] += self.be.spmm(self.lm.halo[q], self.be.from_host(rows))

        self.ex.expand(self.be.host_rows(x), local, on_block)
        return out["y"]

    def transpose(self, g: Any) -> Any:
        if self.symmetric:
            return self.forward(g)
        parts = {q: self.be.to_host(self.be.spmm(m, g)) for q, m in self.lm.halo_t.items()}
        out = {}

        def local():
            out["y"] = self.be.spmm(self.lm.own_t, g)

        def on_block(rows, buf):
            out["y"][rows] += self.be.from_host(buf)  # rows are distinct within one sender

        self.ex.fold(parts, g.shape[1], local, on_block)
        return out["y"]
