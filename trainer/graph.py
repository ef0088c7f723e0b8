"""What a layer aggregates with in one step: the operators on a rank's rows
(all own rows in full batch, a batch's in mini-batch mode), built once per
step from the local matrix and shared by every layer of the step."""

from __future__ import annotations

from functools import cached_property

import numpy as np
import scipy.sparse as sp

from .backend import BACKEND, CPU
from .exchange import Exchange
from .plan import LocalMatrix
from .spmm import DistSpMM


class Graph:
    """A rank's rows of the graph for one step.

    Parameters
    ----------
    lm : LocalMatrix, the rows of Â (own columns, then each sender's)
    ex : Exchange, whose plan matches ``lm``
    symmetric : bool, Â's pattern is symmetric (undirected graph)
    col_gids : (n_own + R,) int64, original vertex id of every local column (own rows first): the dropout counters
    left : (n_own,) float32 or None, a row scale of Â (GraphSAINT's aggregator normalization)
    """

    def __init__(self, lm: LocalMatrix, ex: Exchange, symmetric: bool, col_gids: np.ndarray,
                 left: np.ndarray | None = None, backend: CPU = BACKEND):
        self.lm, self.ex, self.symmetric, self.be = lm, ex, symmetric, backend
        self.col_gids = np.asarray(col_gids, np.int64)
        self.left = left
        self.n_own = lm.n_own

    @property
    def gids(self) -> np.ndarray:
        """(n_own,) original ids of the own rows."""
        return self.col_gids[:self.n_own]

    @cached_property
    def norm(self) -> DistSpMM:
        """Â (GCN)."""
        return DistSpMM(self.lm, self.ex, self.symmetric, self.left, self.be)

    @cached_property
    def _pattern(self) -> LocalMatrix:
        return self.lm.pattern()

    @cached_property
    def degree(self) -> np.ndarray:
        """(n_own,) float32 neighbours of each row (self excluded), within the step's rows."""
        p = self._pattern
        return (np.diff(p.own.indptr) + sum((np.diff(m.indptr) for m in p.halo.values()),
                                            np.zeros(self.n_own, np.int64))).astype(np.float32)

    @cached_property
    def mean(self) -> DistSpMM:
        """D^-1 A: the mean over each row's neighbours (GraphSAGE; 0 for a row without any)."""
        with np.errstate(divide="ignore"):
            inv = np.where(self.degree > 0, 1.0 / np.maximum(self.degree, 1), 0.0).astype(np.float32)
        return DistSpMM(self._pattern, self.ex, self.symmetric, inv, self.be)

    @cached_property
    def sum(self) -> DistSpMM:
        """A: the sum over each row's neighbours (GIN)."""
        return DistSpMM(self._pattern, self.ex, self.symmetric, None, self.be)

    @cached_property
    def csr(self) -> sp.csr_matrix:
        """(n_own, n_own + R) Â's pattern in local columns (GAT attends over it, self loops included)."""
        return self.lm.full

    @cached_property
    def split_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """(interior, boundary) own rows: without and with a nonzero in a received column."""
        halo = self.lm.halo_nnz()
        return np.flatnonzero(halo == 0).astype(np.int64), np.flatnonzero(halo > 0).astype(np.int64)
