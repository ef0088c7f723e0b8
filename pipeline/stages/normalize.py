"""The normalize stage: the GCN's normalized adjacency
Â = D_r^-1/2 (A + I) D_c^-1/2 by row blocks on the workers (directed graphs:
out-degrees for the rows, in-degrees for the columns, and Â^T's blocks as
well); :func:`normalized_adjacency` is the same in memory (the reference)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from .. import blocks
from ..runtime.client import Tasks
from ..runtime.monitor import Monitor
from .ingest import Ingested


@dataclass(frozen=True)
class Normalized:
    """The degrees of A + I at once, and A's patterns by row blocks (A^T's
    too for a directed graph): the quality stage measures on the patterns
    (Â's diagonal and values change no measure) and the layout normalizes
    each block in the task that cuts it (:meth:`degrees`), so the whole Â
    by blocks is made only when a stage asks for it (:meth:`rows`: the
    partitioners that read Â in memory, the mini-batch report); so do the
    whole Â and A's pattern on one worker (:meth:`full`, :meth:`pattern`):
    a build that imports its partition never puts the whole graph on one worker."""

    pattern_blocks: tuple  # futures: A's pattern by row blocks
    weights: Any  # future: (n,) int64 nonzeros per row of Â
    nnz: int
    directed: bool = False
    in_deg: Any = None  # future: (n,) int64 column degrees (directed graphs), else None: the weights
    t_pattern_blocks: tuple = ()  # futures: A^T's pattern by row blocks (directed graphs), else the pattern_blocks
    _made: dict = field(default_factory=dict, compare=False)  # what has been submitted

    def patterns(self) -> tuple[tuple, tuple]:
        """Futures of A's and A^T's pattern blocks (the same for an undirected graph)."""
        return self.pattern_blocks, self.t_pattern_blocks if self.directed else self.pattern_blocks

    def degrees(self) -> tuple[Any, Any]:
        """Futures of the row and column degrees of A + I (the same for an undirected graph)."""
        return self.weights, self.in_deg if self.in_deg is not None else self.weights

    def rows(self, tasks: Tasks) -> tuple[tuple, tuple]:
        """Futures of Â's and Â^T's row blocks (the same for an undirected
        graph), submitted on the first call."""
        if "a" not in self._made:
            out_deg, in_deg = self.degrees()
            a_p, t_p = self.patterns()
            a = tuple(tasks.submit("normalize", blocks.normalize, b, out_deg, in_deg) for b in a_p)
            at = tuple(tasks.submit("normalize-t", blocks.normalize, b, out_deg, in_deg, True) for b in t_p) \
                if self.directed else a
            self._made.update(a=a, at=at)
        return self._made["a"], self._made["at"]

    def full(self, tasks: Tasks):
        """Future of Â as one csr_matrix."""
        if "full" not in self._made:
            self._made["full"] = tasks.submit("normalize-assemble", blocks.full_matrix, *self.rows(tasks)[0])
        return self._made["full"]

    def pattern(self, tasks: Tasks):
        """Future of A's pattern as one csr_matrix."""
        if "pattern" not in self._made:
            self._made["pattern"] = tasks.submit("normalize-pattern", blocks.full_matrix, *self.pattern_blocks)
        return self._made["pattern"]


def normalize_stage(tasks: Tasks, ing: Ingested, mon: Monitor) -> Normalized:
    """The degrees of A + I (directed: out-degrees for the rows, in-degrees
    for the columns); Â's blocks are made where they are used (:class:`Normalized`)."""
    out_deg = tasks.submit("normalize-degrees", _degrees, *[tasks.submit("normalize-count", blocks.row_counts, b)
                                                            for b in ing.a])
    in_deg = None if not ing.directed else tasks.submit(
        "normalize-degrees", _degrees, *[tasks.submit("normalize-count", blocks.row_counts, b) for b in ing.at])
    mon.bar([out_deg] + ([in_deg] if in_deg is not None else []), "normalize")
    nnz = ing.stats["edges"] * (1 if ing.directed else 2) + ing.n
    return Normalized(tuple(ing.a), out_deg, nnz, ing.directed, in_deg, tuple(ing.at) if ing.directed else ())


def _degrees(*counts: np.ndarray) -> np.ndarray:
    """(n,) degrees of A + I from the blocks' row counts."""
    return np.concatenate(counts) + 1


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
