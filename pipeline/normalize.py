"""The normalized adjacency of the GCN: Â = D_r^-1/2 (A + I) D_c^-1/2."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def normalized_adjacency(adj: sp.csr_matrix, directed: bool) -> sp.csr_matrix:
    """Â = D^-1/2 (A + I) D^-1/2 as float32 CSR with sorted indices.

    Parameters
    ----------
    adj : (n, n) csr_matrix
        Pattern of A without self loops.
    directed : bool
        For an undirected A the row and column degrees coincide and this is
        the usual GCN normalization. For a directed A, rows are scaled by the
        out-degree of A+I and columns by its in-degree, which keeps
        ||Â||_2 <= 1 and keeps the direction (the trainer's backward pass
        then uses Â^T).

    Returns
    -------
    (n, n) csr_matrix, float32; index dtype of ``adj``.
    """
    n = adj.shape[0]
    a = (adj + sp.identity(n, dtype=np.float32, format="csr")).tocsr()
    a.sum_duplicates()
    a.sort_indices()
    a.data[:] = 1.0
    out_deg = np.diff(a.indptr).astype(np.float64)
    in_deg = np.bincount(a.indices, minlength=n).astype(np.float64) if directed else out_deg
    rows = np.repeat(np.arange(n), np.diff(a.indptr))
    a.data = (out_deg[rows] ** -0.5 * in_deg[a.indices] ** -0.5).astype(np.float32)
    idx = np.int32 if a.nnz < 2**31 and n < 2**31 else np.int64
    return sp.csr_matrix((a.data, a.indices.astype(idx), a.indptr.astype(idx)), shape=(n, n))
