"""``gp``: a graph partition of the symmetrized graph (what DistDGL uses):
METIS, vertex weight = nonzeros of the row of Â, edge-cut objective."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import Assignment, Inputs, Model, PartitionConfig

CHILD_NNZ = 2_000_000  # METIS runs in a child from this size on (it can run for minutes, holding the GIL)


def symmetric_pattern(a) -> tuple[np.ndarray, np.ndarray]:
    """(xadj (n+1,), adjncy) int64 of the pattern of Â + Âᵀ without the
    diagonal, built from one-byte entries (Â's float values alone were
    gigabytes on R-MAT 2^22)."""
    import scipy.sparse as sp

    pat = sp.csr_matrix((np.ones(a.nnz, dtype=np.int8), a.indices, a.indptr), shape=a.shape)
    sym = (pat + pat.T).tocsr()
    del pat
    sym.setdiag(0)
    sym.eliminate_zeros()
    sym.sort_indices()
    return sym.indptr.astype(np.int64), sym.indices.astype(np.int64)


def metis_partition(a, parts: int, eps: float, seed: int, weights: np.ndarray | None = None) -> np.ndarray:
    """pymetis on the symmetrized graph without self loops; vertex weights
    ``weights`` (default: nonzeros of the row of Â); imbalance ``ufactor =
    1000 eps``."""
    import pymetis

    xadj, adjncy = symmetric_pattern(a)
    vweights = np.diff(a.indptr).astype(np.int64) if weights is None else np.asarray(weights, np.int64)
    opts = pymetis.Options(seed=seed, ufactor=max(1, int(round(eps * 1000))))
    _, part = pymetis.part_graph(parts, pymetis.CSRAdjacency(xadj, adjncy), vweights=vweights, options=opts)
    return np.asarray(part, dtype=np.int32)


@dataclass(frozen=True)
class GraphPartition(Model):
    def in_child(self, inputs: Inputs, cfg: PartitionConfig) -> bool:
        return inputs.a is not None and inputs.a.nnz >= CHILD_NNZ

    def run(self, inputs: Inputs, cfg: PartitionConfig) -> Assignment:
        return Assignment(metis_partition(inputs.a, cfg.parts, cfg.eps, cfg.seed, inputs.vertex_weights()))


MODEL = GraphPartition("gp", "METIS on the symmetrized graph, vertex weight = nonzeros of the row (as DistDGL)")
