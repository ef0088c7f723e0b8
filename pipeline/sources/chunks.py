"""What the client and the ingest stage do with parsed chunks: a few numbers
per chunk (:class:`ChunkMeta`, gathered by :func:`gather_metas`), and the
small tasks that fix up, relabel and count them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..arrays import index_dtype, lookup, sorted_unique
from ..errors import UserError
from .records import ParsedChunk
from .tokens import ChunkError

_EMPTY = np.zeros(0, np.int64)


@dataclass(frozen=True)
class ChunkMeta:
    """What the client learns about a parsed chunk: a few numbers.

    ``first`` is the chunk's first pair; ``max_id`` the largest id (either
    column) and ``max_a`` the largest first id; ``lower`` / ``upper``: every
    pair has a >= b / a <= b (a matrix triangle)."""

    n_lines: int
    n_comments: int
    edges: int
    error: ChunkError | None
    first: tuple[int, int] | None = None
    max_id: int = -1
    max_a: int = -1
    lower: bool = True
    upper: bool = True
    max_rest: int = -1  # the largest id after the first pair


def meta(c: ParsedChunk) -> ChunkMeta:
    if c.error is not None or c.a.size == 0:
        return ChunkMeta(c.n_lines, c.n_comments, int(c.a.size), c.error)
    rest = int(max(c.a[1:].max(initial=-1), c.b[1:].max(initial=-1)))
    return ChunkMeta(c.n_lines, c.n_comments, int(c.a.size), None, (int(c.a[0]), int(c.b[0])),
                     int(max(c.a.max(), c.b.max())), int(c.a.max()), bool((c.a >= c.b).all()), bool((c.a <= c.b).all()),
                     rest)


def gather_metas(tasks, chunks: list) -> list[ChunkMeta]:
    """Every chunk's :class:`ChunkMeta`, computed where the chunk is."""
    return tasks.gather([tasks.submit("ingest-meta", meta, c, index=i) for i, c in enumerate(chunks)])


def checked_metas(tasks, chunks: list) -> list[ChunkMeta]:
    """:func:`gather_metas`; the first chunk error (it names its array) as a UserError."""
    metas = gather_metas(tasks, chunks)
    for m in metas:
        if m.error is not None:
            raise UserError(m.error.message)
    return metas


def drop_first(c: ParsedChunk) -> ParsedChunk:
    """The chunk without its first pair (a header line read as an edge)."""
    return ParsedChunk(c.a[1:], c.b[1:], c.n_lines, c.n_comments + 1, c.error)


def nth(chunks: list[ParsedChunk], i: int) -> ParsedChunk:
    return chunks[i]


def count(chunks: list) -> int:
    return len(chunks)


def shift_vertices(c: ParsedChunk, shift: int) -> ParsedChunk:
    """Adjacency formats: chunk-local vertex lines -> global vertex numbers."""
    return ParsedChunk(c.a + shift, c.b, c.n_lines, c.n_comments, c.error)


def chunk_ids(c: ParsedChunk) -> np.ndarray:
    """Sorted distinct vertex labels of a chunk."""
    return sorted_unique(np.concatenate([c.a, c.b]))


def union(*ids: np.ndarray) -> np.ndarray:
    return sorted_unique(np.concatenate(ids)) if ids else _EMPTY


def relabel(c: ParsedChunk, node_ids: np.ndarray) -> ParsedChunk:
    """File labels -> 0..n-1 (positions in the sorted ``node_ids``), 4-byte
    where they fit."""
    idx = index_dtype(node_ids.size)
    return ParsedChunk(lookup(node_ids, c.a).astype(idx), lookup(node_ids, c.b).astype(idx), c.n_lines, c.n_comments)
