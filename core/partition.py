"""What the cost models need of one row partition: :class:`PartitionCost`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import scipy.sparse as sp


@dataclass
class PartitionCost:
    """What the models need of one row partition into P parts.

    Attributes
    ----------
    model : str
        The partition model that made it.
    volume : (P, P) int64
        Rows of H part m sends to part q per SpMM.
    load : (P,) int64
        Nonzeros of Â in each part's rows.
    rows : (P,) int64
        Rows per part.
    own : (P,) int64 or None
        Nonzeros of each part's rows in its own columns (the product that
        p2p overlaps with the messages); None: no overlap is modelled.
    directed : bool
    graph, part : Â's pattern (n, n) csr_matrix and (n,) the part of each vertex, original order; what the
        1.5D and 2D byte counts and the node-aware exchange need, None where only the flat 1D exchanges are
        modelled
    """

    model: str
    volume: np.ndarray
    load: np.ndarray
    rows: np.ndarray
    own: np.ndarray | None
    directed: bool
    graph: sp.csr_matrix | None = None
    part: np.ndarray | None = None

    @property
    def parts(self) -> int:
        return int(self.volume.shape[0])

    def pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """The distinct (row j, part q) pairs of the partition's communication: row j of H travels from its
        owner to part q once per expand (q != owner; j's column has a nonzero in a row of q). Sorted by
        (owner, j, q); (m,) int64 each."""
        if self.graph is None or self.part is None:
            raise ValueError("the row-level pairs need the partition's graph and part vector")
        import scipy.sparse as sp

        coo = sp.coo_matrix(self.graph)
        part = np.asarray(self.part, np.int64)
        q, j = part[coo.row], coo.col.astype(np.int64)
        keep = q != part[j]
        key = np.unique(j[keep] * self.parts + q[keep])
        rows, dest = key // self.parts, key % self.parts
        order = np.lexsort((dest, rows, part[rows]))
        return rows[order], dest[order]


def own_nonzeros(a: sp.csr_matrix, part: np.ndarray, parts: int) -> np.ndarray:
    """(P,) int64: nonzeros of each part's rows whose column the part owns."""
    rows = np.repeat(np.arange(a.shape[0]), np.diff(a.indptr))
    own = part[rows] == part[a.indices]
    return np.bincount(part[rows][own], minlength=parts).astype(np.int64)


def dims_of(feature_dim: int, hidden, classes: int) -> list[int]:
    """Layer widths [features, *hidden, classes], as the trainer builds its model."""
    return [int(feature_dim), *map(int, hidden), int(classes)]
