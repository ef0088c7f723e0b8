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


def column_net(a: sp.spmatrix, drop_single_pin: bool = True, weights: np.ndarray | None = None) -> Hypergraph:
    """Column-net hypergraph of ``a``; vertex weights ``weights`` (default:
    the nonzeros of the row).

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
        vertex_weights=np.diff(sp.csr_matrix(a).indptr).astype(np.int64) if weights is None
        else np.asarray(weights, np.int64),
        net_weights=np.ones(net_ids.size, np.int64),
        net_ids=net_ids,
    )


def connectivity(hg: Hypergraph, part: np.ndarray, parts: int) -> np.ndarray:
    """(N,) int64: number of distinct parts among the pins of each net."""
    return net_connectivity(hg.net_ptr, hg.pins, part, parts)


def net_connectivity(ptr: np.ndarray, pins: np.ndarray, part: np.ndarray, parts: int) -> np.ndarray:
    """(N,) int64: distinct parts among the pins of each net (CSR ``ptr``,
    ``pins``). Up to 64 parts, one bit per part OR-ed over each net's pins
    (no sort); more parts sort (net, part) pairs."""
    n_nets = ptr.size - 1
    sizes = np.diff(ptr)
    if parts <= 64:
        bits = np.left_shift(np.uint64(1), part[pins].astype(np.uint64))
        out = np.zeros(n_nets, np.uint64)
        nonempty = sizes > 0
        if pins.size:
            out[nonempty] = np.bitwise_or.reduceat(bits, ptr[:-1][nonempty])
        return popcount64(out)
    net_of_pin = np.repeat(np.arange(n_nets, dtype=np.int64), sizes)
    pairs = np.unique(net_of_pin * parts + part[pins])
    return np.bincount(pairs // parts, minlength=n_nets).astype(np.int64)


def popcount64(x: np.ndarray) -> np.ndarray:
    """(N,) int64 set bits of each uint64 (SWAR; numpy < 2 has no bitwise_count)."""
    x = x.astype(np.uint64, copy=True)
    x -= (x >> np.uint64(1)) & np.uint64(0x5555555555555555)
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return ((x * np.uint64(0x0101010101010101)) >> np.uint64(56)).astype(np.int64)


def connectivity_minus_one(hg: Hypergraph, part: np.ndarray, parts: int) -> int:
    """Σ_nets w(n) (λ(n) - 1), the objective minimized by ``hp``."""
    lam = connectivity(hg, part, parts)
    return int(np.dot(hg.net_weights, lam - 1))


# ------------------------------------------------------- mini-batch models

def hoeffding_nets(parts: int, theta: float, delta: float) -> int:
    """Nets needed so that the mean connectivity of the sampled nets is
    within ``theta`` of its expectation with probability ``1 - delta``:
    ``ceil((p-1)^2 / (2 theta^2) * ln(2/delta))`` (connectivity lies in [1, p]).
    Rounded up, since fewer nets would not meet the bound."""
    if theta <= 0 or not 0 < delta < 1:
        from ..errors import UserError
        raise UserError(f"need theta > 0 and 0 < delta < 1 (got theta={theta}, delta={delta})")
    return int(np.ceil((parts - 1) ** 2 / (2 * theta**2) * np.log(2 / delta) - 1e-9))


@dataclass
class BatchNets:
    """Nets of one or more mini-batches, in sampling order.

    A mini-batch V' gives one net per column j in V' (pins: the rows of V'
    with a nonzero in column j, always including j itself). ``columns[k]``
    is the column of net k. ``total`` counts every net, including the
    single-pin ones that are not kept in ``ptr`` / ``pins`` (they cannot be
    cut) when ``keep_single`` is False.
    """

    columns: np.ndarray
    ptr: np.ndarray
    pins: np.ndarray
    total: int
    per_batch: np.ndarray | None = None  # (b,) int64 kept nets of each batch, when made from batches

    @property
    def n_nets(self) -> int:
        return self.columns.size


def batch_nets(a_csc: sp.csc_matrix, batches: list[np.ndarray], keep_single: bool = False) -> BatchNets:
    """Nets of the submatrices Â[V', V'] of ``batches``, concatenated: the
    same column sampled in two batches gives two distinct nets."""
    n = a_csc.shape[0]
    cols_out, sizes_out, pins_out, total = [], [], [], 0
    in_batch = np.zeros(n, bool)
    for b in batches:  # a loop over batches, vectorized inside
        in_batch[b] = True
        sub = a_csc[:, b]
        keep = in_batch[sub.indices]
        col_of_pin = np.repeat(np.arange(b.size), np.diff(sub.indptr))
        sizes = np.bincount(col_of_pin[keep], minlength=b.size)
        net_keep = sizes >= (1 if keep_single else 2)
        pins = sub.indices[keep]
        pins_out.append(pins[np.repeat(net_keep, sizes)].astype(np.int64))
        cols_out.append(b[net_keep])
        sizes_out.append(sizes[net_keep])
        total += int(b.size)
        in_batch[b] = False
    sizes = np.concatenate(sizes_out) if sizes_out else np.zeros(0, np.int64)
    ptr = np.zeros(sizes.size + 1, np.int64)
    np.cumsum(sizes, out=ptr[1:])
    return BatchNets(columns=np.concatenate(cols_out) if cols_out else np.zeros(0, np.int64), ptr=ptr,
                     pins=np.concatenate(pins_out) if pins_out else np.zeros(0, np.int64), total=total,
                     per_batch=np.array([c.size for c in cols_out], np.int64))


def concat_nets(parts: list[BatchNets]) -> BatchNets:
    sizes = np.concatenate([np.diff(p.ptr) for p in parts])
    ptr = np.zeros(sizes.size + 1, np.int64)
    np.cumsum(sizes, out=ptr[1:])
    per_batch = np.concatenate([p.per_batch for p in parts]) \
        if all(p.per_batch is not None for p in parts) else None
    return BatchNets(columns=np.concatenate([p.columns for p in parts]), ptr=ptr,
                     pins=np.concatenate([p.pins for p in parts]), total=sum(p.total for p in parts),
                     per_batch=per_batch)


def merge_identical(nets: BatchNets, n_vertices: int, weights: np.ndarray | None = None
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Merge nets with identical pin sets into one net whose weight is their
    count (the km1 objective is unchanged). Pin sets are compared by a 64-bit
    Zobrist hash with random keys per vertex (and the net size); a collision
    would merge two different nets, with probability about N^2 / 2^64.

    Returns ``(ptr, pins, net_weights, first)``: the merged nets and, for
    each, the index of its first occurrence.
    """
    sizes = np.diff(nets.ptr)
    if sizes.size == 0:
        return nets.ptr, nets.pins, np.zeros(0, np.int64), np.zeros(0, np.int64)
    keys = np.random.default_rng(0x5EED).integers(0, 2**63, n_vertices, dtype=np.uint64)
    with np.errstate(over="ignore"):
        h = np.add.reduceat(keys[nets.pins], nets.ptr[:-1]) ^ (sizes.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15))
    _, first, inverse = np.unique(h, return_index=True, return_inverse=True)
    w = np.bincount(inverse, weights=weights, minlength=first.size)
    w = np.rint(w).astype(np.int64) if weights is not None else w.astype(np.int64)
    keep = np.zeros(sizes.size, bool)
    keep[first] = True
    kept_sizes = sizes[keep]
    ptr = np.zeros(kept_sizes.size + 1, np.int64)
    np.cumsum(kept_sizes, out=ptr[1:])
    # `first` is sorted by hash; the kept nets are in sampling order: reorder the weights to match
    order = np.argsort(first)
    return ptr, nets.pins[np.repeat(keep, sizes)], w[order], first[order]


def stochastic_hypergraph(nets: BatchNets, vertex_weights: np.ndarray, merge: bool = True) -> Hypergraph:
    """The stochastic hypergraph of the sampled nets: every vertex of the
    graph (untouched vertices are isolated but still placed, under the
    balance constraint, by their weight), one net per sampled net, merged
    into weighted nets when identical."""
    n = vertex_weights.size
    if merge:
        ptr, pins, w, first = merge_identical(nets, n)
        cols = nets.columns[first]
    else:
        ptr, pins, w, cols = nets.ptr, nets.pins, np.ones(nets.n_nets, np.int64), nets.columns
    return Hypergraph(n_vertices=n, net_ptr=ptr, pins=pins, vertex_weights=vertex_weights.astype(np.int64),
                      net_weights=w, net_ids=cols)
