"""Lower bounds that every row partition under the load bound must meet:
what no partitioner, however good, can go below.

The receive bound. The part holding row v receives every column j != v of
that row (a net v is a pin of) whose owner, row j, lies in another part. Under
the load bound the part can hold, beside v, only so many of those owners: at
most the count of the lightest ones whose weights fit in the room
``lmax - w_v``. So every partition whose loads stay within ``lmax`` has

    max receive >= max_v ( |cols(v) \\ {v}| - fit(v) ).

On power-law graphs at many parts this is tight: a hub's row is as heavy as a
part, its part holds little else, and its part receives nearly all of its
columns whatever the partitioner does (soc-slashdot0902, P = 512, eps 0.01:
2,426 rows; METIS 2,445).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..errors import UserError


@dataclass(frozen=True)
class ReceiveBound:
    """The receive bound (module docstring).

    Attributes
    ----------
    rows : int
        No partition within ``lmax`` receives fewer rows at its busiest part.
    vertex : int
        The row that sets it (-1 for an empty matrix).
    lmax : int
        The load bound it holds for: ``floor((1 + eps) * mean load)``.
    """

    rows: int
    vertex: int
    lmax: int


def receive_lower_bound(a: sp.csr_matrix, weights: np.ndarray, parts: int, eps: float,
                        candidates: int = 64) -> ReceiveBound:
    """The receive bound of Â under the load bound ``floor((1 + eps) * mean)``.

    Parameters
    ----------
    a : (n, n) csr_matrix
        Â (or its pattern): row v's columns are the rows v needs.
    weights : (n,) int
        Vertex weights (a row's load on its part).
    parts : int
    eps : float
        Allowed load imbalance (max/mean - 1).
    candidates : int
        Rows examined: those with the most nonzeros (the bound is the maximum
        over them, so a lower bound for any count; hubs set it).

    Returns
    -------
    ReceiveBound
    """
    n = a.shape[0]
    w = np.asarray(weights, np.int64)
    if w.shape != (n,) or parts < 1 or not eps >= 0:
        raise UserError(f"receive bound: need weights of shape ({n},), parts >= 1 and eps >= 0 "
                        f"(got {w.shape}, {parts}, {eps})")
    lmax = int(np.floor((1 + eps) * w.sum() / parts))
    if n == 0:
        return ReceiveBound(0, -1, lmax)
    nnz = np.diff(a.indptr)
    top = np.argsort(-nnz, kind="stable")[:candidates]
    best, vertex = 0, int(top[0])
    for v in top:  # a few dozen hubs, not every vertex
        cols = a.indices[a.indptr[v]:a.indptr[v + 1]]
        cols = np.unique(cols[cols != v])
        room = lmax - int(w[v])
        fit = int(np.searchsorted(np.cumsum(np.sort(w[cols])), room, side="right")) if room > 0 else 0
        if cols.size - fit > best:
            best, vertex = int(cols.size - fit), int(v)
    return ReceiveBound(best, vertex, lmax)
