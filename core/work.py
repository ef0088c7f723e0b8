"""The work a row gives its rank, from the epoch model: what the partitioners
balance (``--balance work``, the default).

A row of Â costs a term per row (dense products, elementwise work) plus a
term per nonzero (the SpMM), with the layer widths of the GCN the store is
built for (:func:`shgcn.core.costs.work_terms`, coefficients of
:class:`shgcn.core.epoch.ComputeModel`, fitted on this machine). The
partitioners take integer vertex weights: the row term is ``R`` and a
nonzero ``R`` times the ratio of the two terms, rounded, with ``R`` as
large as keeps the total below 2^30 (32-bit weights in METIS, KaMinPar
and Mt-KaHyPar) and at most 1000.
"""

from __future__ import annotations

import numpy as np

from .costs import work_terms
from .machine import ComputeModel, this_compute

BALANCES = ("work", "nnz", "rows")  # what the partitioners balance: modelled compute, nonzeros, rows
MAX_TOTAL = 2**30


def row_costs(dims: list[int], compute: ComputeModel | None = None) -> tuple[float, float]:
    """(seconds per row, seconds per nonzero) of one training step (``compute``: this machine's fit)."""
    compute = compute or this_compute()
    nnz_cols, flops, elem = work_terms(dims)
    return compute.dense * flops + compute.elem * elem, compute.spmm * nnz_cols


def vertex_weights(row_nnz: np.ndarray, balance: str, dims: list[int],
                   compute: ComputeModel | None = None) -> np.ndarray:
    """(n,) int64 vertex weights that make a partitioner balance ``balance``.

    Parameters
    ----------
    row_nnz : (n,) int, nonzeros of each row of Â
    balance : ``work`` (the epoch model's compute), ``nnz`` or ``rows``
    dims : the GCN's layer widths [features, *hidden, classes]
    """
    row_nnz = np.asarray(row_nnz, np.int64)
    if balance == "rows":
        return np.ones(row_nnz.size, np.int64)
    if balance == "nnz":
        return row_nnz.copy()
    if balance != "work":
        raise ValueError(f"balance {balance!r}: one of {', '.join(BALANCES)}")
    per_row, per_nnz = row_costs(dims, compute)
    ratio = per_nnz / per_row if per_row > 0 else 1.0
    total = row_nnz.size + ratio * float(row_nnz.sum())
    scale = max(1, min(1000, int(MAX_TOTAL // max(total, 1.0))))
    return np.rint(scale * (1.0 + ratio * row_nnz)).astype(np.int64)


def modelled_compute(rows: np.ndarray, nnz: np.ndarray, dims: list[int],
                     compute: ComputeModel | None = None) -> np.ndarray:
    """(P,) seconds of compute per part in one training step (rows and
    nonzeros of each part; the constant term is the same on every rank)."""
    per_row, per_nnz = row_costs(dims, compute)
    return per_row * np.asarray(rows, float) + per_nnz * np.asarray(nnz, float)
