"""The CPU backend's kernels over T threads (``shgcn-train --threads T``, T > 1): the SpMM, and the per-row
elementwise kernels of :mod:`.kernels` (dropout fused with the activation, and its gradients).

Results do not depend on T. Each kernel splits the rows into T contiguous chunks (a ``prange`` over the
chunks) and each row is computed by one thread, in the order the serial kernel computes it:

- :func:`spmm` sums an output row over its nonzeros in CSR order, starting from zero, in float32: the
  order of scipy's ``csr_matvecs`` (``y += a * x`` per stored entry), so it equals ``m @ x`` bit for bit
  (tested) and needs no atomics. The chunks split the *nonzeros* evenly (:func:`row_bounds`: nonzeros
  plus rows, so empty rows count too); a hub row stays whole in one chunk.
- the dropout masks are keyed by vertex id (counter-based Philox), so a row's mask is the same whichever
  thread draws it.
- GAT's backward adds into the *columns* (dz and ds_src of every neighbour). It runs in two passes: the
  rows' own part (score gradients, ds_dst) over row chunks, then each column's sums over column chunks,
  visiting the column's rows in ascending order through the CSC of the pattern: the order the serial
  kernel adds them in, so the same bits, again without atomics.

Threading layer: numba's first that loads of tbb, omp (GNU OpenMP), workqueue (:mod:`.threads`; omp on
this project's machines). None of them forks: each starts its threads inside the process, so they work in
ranks started by ``mpirun``; omp and tbb also accept parallel kernels launched from two Python threads at
once (workqueue does not: the trainer launches them from its main thread only).
"""

from __future__ import annotations

import numba
import numpy as np
import scipy.sparse as sp

from .kernels import dropout_rows, elu_grad_rows, gat_column_grads, gat_rows, gat_score_grads


def row_bounds(indptr: np.ndarray, chunks: int) -> np.ndarray:
    """(chunks + 1,) int64 row boundaries splitting rows 0..n into ``chunks`` contiguous ranges of about
    equal work, work being a row's nonzeros plus one (its output row). A row heavier than a chunk's share
    (a hub) is never split: chunks after it may be empty."""
    n = indptr.size - 1
    work = np.asarray(indptr, np.int64) + np.arange(n + 1, dtype=np.int64)  # cumulative nonzeros + rows
    targets = (work[-1] * np.arange(chunks + 1, dtype=np.int64)) // max(chunks, 1)
    bounds = np.searchsorted(work, targets, side="left").astype(np.int64)
    bounds[0], bounds[-1] = 0, n
    return np.maximum.accumulate(bounds)


@numba.njit(cache=True, parallel=True, nogil=True)
def spmm(indptr, indices, data, x, bounds, out):
    """``out = m @ x`` for CSR ``m`` (indptr, indices, data float32) and dense x (k, d) float32 (C order):
    rows ``bounds[c]:bounds[c + 1]`` by one thread, each row's sum in CSR order from zero."""
    d = x.shape[1]
    for c in numba.prange(bounds.size - 1):
        acc = np.empty(d, np.float32)
        for i in range(bounds[c], bounds[c + 1]):
            acc[:] = 0
            for p in range(indptr[i], indptr[i + 1]):
                a = data[p]
                j = indices[p]
                for k in range(d):
                    acc[k] += a * x[j, k]
            for k in range(d):
                out[i, k] = acc[k]
    return out


@numba.njit(cache=True, parallel=True, nogil=True)
def dropout_dense(h, gids, key, ctr, threshold, scale, act, out, keep, bounds):
    """:func:`.kernels.dropout_dense` over the row chunks ``bounds``."""
    for c in numba.prange(bounds.size - 1):
        dropout_rows(bounds[c], bounds[c + 1], h, gids, key, ctr, threshold, scale, act, out, keep)
    return out


@numba.njit(cache=True, parallel=True, nogil=True)
def relu_dropout_grad(g, hd, scale, bounds):
    """:func:`.kernels.relu_dropout_grad` (in place) over the row chunks ``bounds``."""
    d = g.shape[1]
    sc = np.float32(scale)
    zero = np.float32(0)
    for c in numba.prange(bounds.size - 1):
        for i in range(bounds[c], bounds[c + 1]):
            for k in range(d):
                g[i, k] = g[i, k] * (sc if hd[i, k] > 0 else zero)
    return g


@numba.njit(cache=True, parallel=True, nogil=True)
def elu_dropout_grad(g, hd, keep, scale, bounds):
    """:func:`.kernels.elu_dropout_grad` (in place) over the row chunks ``bounds``."""
    for c in numba.prange(bounds.size - 1):
        elu_grad_rows(bounds[c], bounds[c + 1], g, hd, keep, scale)
    return g


def even_rows(n: int, chunks: int) -> np.ndarray:
    """(chunks + 1,) boundaries of ``chunks`` contiguous row ranges of (nearly) equal size: the elementwise
    kernels' split (every row costs the same)."""
    return (np.arange(chunks + 1, dtype=np.int64) * n) // max(chunks, 1)


@numba.njit(cache=True, parallel=True, nogil=True)
def gat_forward(rows, indptr, indices, z, s_src, s_dst, slope, rgid, cgid, key, ctr, threshold, scale,
                alpha, alpha_d, out, bounds):
    """:func:`.kernels.gat_forward` over chunks of ``rows`` (positions ``bounds[c]:bounds[c + 1]``)."""
    for c in numba.prange(bounds.size - 1):
        gat_rows(bounds[c], bounds[c + 1], rows, indptr, indices, z, s_src, s_dst, slope, rgid, cgid, key, ctr,
                 threshold, scale, alpha, alpha_d, out)
    return out


@numba.njit(cache=True, parallel=True, nogil=True)
def gat_backward(indptr, indices, z, g, s_src, s_dst, slope, alpha, alpha_d, dz, ds_src, ds_dst, bounds,
                 col_ptr, col_edge, col_row, col_bounds):
    """:func:`.kernels.gat_backward`: the rows' part over the row chunks ``bounds``, then the columns' sums
    over the column chunks ``col_bounds``; column j's edges are ``col_edge[col_ptr[j]:col_ptr[j + 1]]``
    (rows ``col_row``, ascending)."""
    heads = s_dst.shape[1]
    de = np.empty((indices.size, heads), np.float32)
    live = np.empty(indices.size, np.bool_)
    for c in numba.prange(bounds.size - 1):
        dot = np.empty(heads, np.float32)
        for r in range(bounds[c], bounds[c + 1]):
            gat_score_grads(r, indptr[r], indptr[r + 1], 0, indices, z, g, s_src, s_dst, slope, alpha, alpha_d,
                            de, live, dot, ds_dst)
    for c in numba.prange(col_bounds.size - 1):
        for j in range(col_bounds[c], col_bounds[c + 1]):
            for t in range(col_ptr[j], col_ptr[j + 1]):
                p = col_edge[t]
                gat_column_grads(j, col_row[t], p, p, g, alpha_d, de, live, dz, ds_src)
    return dz


def columns(indptr: np.ndarray, indices: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The CSC of a CSR pattern with m columns: (col_ptr (m + 1,), col_edge (nnz,) the CSR position of each
    entry, col_row (nnz,) its row), each column's entries in ascending row order (scipy's counting sort)."""
    n, nnz = indptr.size - 1, indices.size
    csc = sp.csr_matrix((np.arange(nnz, dtype=np.int64), indices, indptr), shape=(n, m)).tocsc()
    return csc.indptr.astype(np.int64), csc.data.astype(np.int64), csc.indices.astype(np.int64)
