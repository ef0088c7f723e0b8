"""The column-net hypergraph model of a sparse matrix.

One vertex per row, one net per column; the pins of net j are the rows with
a nonzero in column j. Under a row partition, the connectivity λ_j of net j
is the number of parts holding a pin of j; since Â has a nonzero diagonal,
the owner of row j is one of them, and λ_j - 1 is the number of parts that
must receive row j of H. So the connectivity-1 metric equals the exact
communication volume of one SpMM.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp


@dataclass
class Hypergraph:
    """A hypergraph in CSR-of-nets form.

    Attributes
    ----------
    n_vertices : int
    net_ptr : (N+1,) int64
        Pins of net k are ``pins[net_ptr[k]:net_ptr[k+1]]``.
    pins : (P,) int64 vertex ids
    vertex_weights : (n_vertices,) int64
    net_weights : (N,) int64
    net_ids : (N,) int64
        The column each net came from.
    """

    n_vertices: int
    net_ptr: np.ndarray
    pins: np.ndarray
    vertex_weights: np.ndarray
    net_weights: np.ndarray
    net_ids: np.ndarray

    @property
    def n_nets(self) -> int:
        return self.net_ptr.size - 1


def column_net(a: sp.spmatrix, drop_single_pin: bool = True) -> Hypergraph:
    """Column-net hypergraph of ``a``; vertex weight = nonzeros of the row.

    Nets with one pin can never be cut, so by default they are dropped (the
    partitioner does less work, the objective is unchanged).
    """
    csc = sp.csc_matrix(a)
    csc.sort_indices()
    sizes = np.diff(csc.indptr).astype(np.int64)
    keep = sizes > (1 if drop_single_pin else 0)
    net_ids = np.flatnonzero(keep).astype(np.int64)
    pin_keep = np.repeat(keep, sizes)
    ptr = np.zeros(net_ids.size + 1, np.int64)
    np.cumsum(sizes[keep], out=ptr[1:])
    return Hypergraph(
        n_vertices=a.shape[0],
        net_ptr=ptr,
        pins=csc.indices[pin_keep].astype(np.int64),
        vertex_weights=np.diff(sp.csr_matrix(a).indptr).astype(np.int64),
        net_weights=np.ones(net_ids.size, np.int64),
        net_ids=net_ids,
    )


def connectivity(hg: Hypergraph, part: np.ndarray, parts: int) -> np.ndarray:
    """(N,) int64: number of distinct parts among the pins of each net."""
    net_of_pin = np.repeat(np.arange(hg.n_nets, dtype=np.int64), np.diff(hg.net_ptr))
    pairs = np.unique(net_of_pin * parts + part[hg.pins])
    return np.bincount(pairs // parts, minlength=hg.n_nets).astype(np.int64)


def connectivity_minus_one(hg: Hypergraph, part: np.ndarray, parts: int) -> int:
    """Σ_nets w(n) (λ(n) - 1), the objective minimized by ``hp``."""
    lam = connectivity(hg, part, parts)
    return int(np.dot(hg.net_weights, lam - 1))
