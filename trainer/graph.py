"""What a layer aggregates with in one step: the operators on a rank's rows
(all own rows in full batch, a batch's in mini-batch mode), composed from the
products its algorithm gives (:class:`Operators`) and shared by every layer
of the step.

``norm`` is Â (GCN), ``mean`` D⁻¹A over each row's neighbours (GraphSAGE),
``sum`` A (GIN); the degrees and the scales are made here, once, whatever
the algorithm. A layer that exchanges rows itself (GAT's attention) uses
``csr``, ``split_rows`` and ``ex``, which the row-wise algorithms give.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any, Protocol

import numpy as np
import scipy.sparse as sp

from shgcn.core.archs import MEAN, NORM, SUM

from .backends import Backend
from .exchanges import Exchange
from .plan import LocalMatrix
from .spmm import LocalProduct, Product, Scaled

PATTERN = "pattern"  # the adjacency without self loops: what MEAN and SUM aggregate over


class Operators(Protocol):
    """An algorithm's products on a rank's rows: ``product(NORM)`` multiplies by Â, ``product(PATTERN)`` by
    A's pattern; ``degree`` (n_own,) neighbours of each row within the step's rows (self excluded); ``be``
    the backend the products compute with."""

    n_own: int
    be: Backend

    def product(self, matrix: str) -> Product: ...

    @property
    def degree(self) -> np.ndarray: ...


class RowOperators:
    """The 1D operators (also 1.5D's gather): the local matrix and its pattern over the rank's exchange.

    Parameters
    ----------
    lm : LocalMatrix, the rows of Â (own columns, then each sender's)
    ex : Exchange, whose plan matches ``lm``
    symmetric : bool, Â's pattern is symmetric (undirected graph)
    """

    def __init__(self, lm: LocalMatrix, ex: Exchange, symmetric: bool, backend):
        self.lm, self.ex, self.symmetric, self.be = lm, ex, symmetric, backend
        self.n_own = lm.n_own

    @cached_property
    def pattern(self) -> LocalMatrix:
        return self.lm.pattern()

    def product(self, matrix: str) -> Product:
        return LocalProduct(self.lm if matrix == NORM else self.pattern, self.ex, self.symmetric, self.be)

    @cached_property
    def degree(self) -> np.ndarray:
        p = self.pattern
        return (np.diff(p.own.indptr) + sum((np.diff(m.indptr) for m in p.halo.values()),
                                            np.zeros(self.n_own, np.int64))).astype(np.float32)

    @cached_property
    def csr(self) -> sp.csr_matrix:
        """(n_own, n_own + R) Â's pattern in local columns (GAT attends over it, self loops included)."""
        return self.lm.full

    @cached_property
    def split_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """(interior, boundary) own rows: without and with a nonzero in a received column."""
        halo = self.lm.halo_nnz()
        return np.flatnonzero(halo == 0).astype(np.int64), np.flatnonzero(halo > 0).astype(np.int64)


class Graph:
    """A rank's rows of the graph for one step.

    Parameters
    ----------
    ops : the algorithm's :class:`Operators` for these rows
    col_gids : (n_own + R,) int64, original vertex id of every local column (own rows first): the dropout counters
    left : (n_own,) float32 or None, a row scale of Â (GraphSAINT's aggregator normalization)
    """

    def __init__(self, ops: Operators, col_gids: np.ndarray, left: np.ndarray | None = None):
        self.ops = ops
        self.col_gids = np.asarray(col_gids, np.int64)
        self.left = left
        self.n_own = ops.n_own

    @property
    def gids(self) -> np.ndarray:
        """(n_own,) original ids of the own rows."""
        return self.col_gids[:self.n_own]

    def operator(self, kind: str) -> Scaled:
        """The operator a layer aggregates with (:data:`~shgcn.core.archs.NORM`, ``MEAN``, ``SUM``)."""
        return {NORM: self.norm, MEAN: self.mean, SUM: self.sum}[kind]

    @cached_property
    def norm(self) -> Scaled:
        """Â (GCN)."""
        return Scaled(self.ops.product(NORM), self.left, self.ops.be)

    @cached_property
    def mean(self) -> Scaled:
        """D^-1 A: the mean over each row's neighbours (GraphSAGE; 0 for a row without any)."""
        deg = self.ops.degree
        with np.errstate(divide="ignore"):
            inv = np.where(deg > 0, 1.0 / np.maximum(deg, 1), 0.0).astype(np.float32)
        return Scaled(self.ops.product(PATTERN), inv, self.ops.be)

    @cached_property
    def sum(self) -> Scaled:
        """A: the sum over each row's neighbours (GIN)."""
        return Scaled(self.ops.product(PATTERN))

    @property
    def degree(self) -> np.ndarray:
        return self.ops.degree

    def _rows(self) -> Any:
        if not isinstance(self.ops, RowOperators):
            raise TypeError(f"{type(self.ops).__name__} gives products only; a layer that exchanges rows itself "
                            "needs the row-wise operators (1d, or 1.5d with --row-combine gather)")
        return self.ops

    @property
    def csr(self) -> sp.csr_matrix:
        return self._rows().csr

    @property
    def split_rows(self) -> tuple[np.ndarray, np.ndarray]:
        return self._rows().split_rows

    @property
    def ex(self) -> Exchange:
        return self._rows().ex
