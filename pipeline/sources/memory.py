"""Graphs given in memory through the Python API: a scipy.sparse matrix or a
(2, E) edge_index array (the data starts on the client, so it travels once,
as one task's input), and a peer's graph (:mod:`.peers`) as its matrix.

Direction, one rule for every in-memory graph (:func:`in_memory`): an
exactly symmetric graph is undirected, anything else directed, unless the
caller says ``directed=``. Symmetric means every edge (i, j) has its
reverse (j, i) and, for a scipy matrix, A[i, j] == A[j, i] exactly
(duplicate entries summed, as scipy reads them); an edge_index and a peer's
edges carry no values, so their pattern decides."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import UserError
from .base import RawSource
from .chunks import ChunkMeta
from .records import ParsedChunk


@dataclass(frozen=True)
class InMemory:
    """An in-memory graph with its direction decided (:func:`in_memory`):
    ``graph`` a scipy matrix or an edge_index; ``why`` says why, for the log;
    ``kind`` what the caller gave (the store's ``source`` attribute)."""

    graph: Any
    directed: bool
    why: str
    kind: str


def symmetric(src: np.ndarray, dst: np.ndarray, n: int, values: np.ndarray | None = None) -> tuple[bool, str]:
    """Whether the graph with an edge (src[k], dst[k]) per k (and entry
    ``values[k]``, duplicates summed) is exactly symmetric, and why not."""
    import scipy.sparse as sp

    key = np.unique(src * n + dst)
    if not np.array_equal(key, np.unique(dst * n + src)):
        return False, "an edge without its reverse"
    if values is not None and values.size:
        m = sp.csr_matrix((values, (src, dst)), shape=(n, n))
        if (m != m.T).nnz:
            return False, "every edge has its reverse but A[i, j] != A[j, i] for some"
    return True, "every edge with its reverse" + (", the values too" if values is not None else "")


def in_memory(obj: Any, directed: bool | None, values: bool = True) -> InMemory:
    """The API's one rule of direction (module docstring): ``directed`` as
    given, else undirected exactly when the graph is symmetric; ``values``
    False for a peer's graph (its matrix holds ones, one per edge listed)."""
    import scipy.sparse as sp

    kind = type(obj).__name__
    if directed is not None:
        return InMemory(obj, bool(directed), "as directed= says", kind)
    src, dst, n = edges_of(obj)
    data = sp.coo_matrix(obj).data if values and sp.issparse(obj) else None
    sym, why = symmetric(src, dst, n, data)
    return InMemory(obj, not sym, why, kind)


def edges_of(obj) -> tuple[np.ndarray, np.ndarray, int]:
    """(src, dst, n) of a scipy.sparse matrix or a (2, E) integer array (or
    of the graph of an :class:`InMemory`)."""
    import scipy.sparse as sp

    if isinstance(obj, InMemory):
        obj = obj.graph
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
    """The in-memory graph as a one-chunk RawSource; an :class:`InMemory`
    says its direction (the source's ``directed``), a bare graph leaves it to
    the build's options."""
    src, dst, n = edges_of(obj)
    chunk = tasks.submit("ingest-memory", ParsedChunk, src, dst, int(src.size))
    raw = RawSource("in-memory graph", [chunk], [ChunkMeta(src.size, 0, src.size, None)], n)
    if isinstance(obj, InMemory):
        raw.directed, raw.direction = obj.directed, obj.why
    return raw
