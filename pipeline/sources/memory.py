"""Graphs given in memory through the Python API: a scipy.sparse matrix or a
(2, E) edge_index array (the data starts on the client, so it travels once,
as one task's input)."""

from __future__ import annotations

import numpy as np

from ..errors import UserError
from .base import RawSource
from .chunks import ChunkMeta
from .records import ParsedChunk


def edges_of(obj) -> tuple[np.ndarray, np.ndarray, int]:
    """(src, dst, n) of a scipy.sparse matrix or a (2, E) integer array."""
    import scipy.sparse as sp

    if sp.issparse(obj):
        m = sp.coo_matrix(obj)
        if m.shape[0] != m.shape[1]:
            raise UserError(f"the matrix is {m.shape[0]} x {m.shape[1]}; an adjacency matrix must be square")
        src, dst, n = m.row.astype(np.int64), m.col.astype(np.int64), m.shape[0]
    else:
        e = np.asarray(obj)
        if e.ndim != 2 or e.shape[0] != 2 or e.dtype.kind not in "iu":
            raise UserError(f"source: expected a scipy.sparse matrix or a (2, E) integer edge_index, got {e.shape}")
        if e.size and e.min() < 0:
            raise UserError("edge_index: negative vertex id")
        src, dst = e[0].astype(np.int64), e[1].astype(np.int64)
        n = int(e.max()) + 1 if e.size else 0
    if n == 0:
        raise UserError("the graph has no vertices")
    return src, dst, n


def submit_memory(tasks, obj) -> RawSource:
    """The in-memory graph as a one-chunk RawSource."""
    src, dst, n = edges_of(obj)
    chunk = tasks.submit("ingest-memory", ParsedChunk, src, dst, int(src.size))
    return RawSource("in-memory graph", [chunk], [ChunkMeta(src.size, 0, src.size, None)], n)
