"""Row blocks: how the graph lives on the Dask workers.

A graph of n vertices is cut into R contiguous row ranges ``bounds[b]:
bounds[b+1]`` of equal size (the last may be shorter). Each range is one
:class:`RowBlock`, a CSR of those rows with global column ids, held by the
worker that built it. Stages run once per block (assembly, normalization,
quality, layout) and exchange only the pieces other blocks need, worker to
worker; only O(n) vectors (degrees, partition vectors) and counts reach the
client.

The functions here are the tasks: pure, small, on arrays.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from dask.sizeof import sizeof

from .arrays import PIECE_ENTRIES, index_dtype, row_pieces, sorted_unique
from .sources.records import ParsedChunk


@dataclass(frozen=True)
class RowBlock:
    """Rows ``lo..hi-1`` of an n x n sparse matrix.

    Attributes
    ----------
    lo, hi, n : int
    indptr : (hi-lo+1,) int64
    indices : (nnz,) int32 or int64, global column ids, sorted within each row
    data : (nnz,) float32, or None for a pattern (all ones)
    """

    lo: int
    hi: int
    n: int
    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray | None = None

    @property
    def rows(self) -> int:
        return self.hi - self.lo

    @property
    def nnz(self) -> int:
        return int(self.indices.size)

    def row_ids(self) -> np.ndarray:
        """(nnz,) int64 global row of every nonzero."""
        return np.repeat(np.arange(self.lo, self.hi, dtype=np.int64), np.diff(self.indptr))

    def csr(self) -> sp.csr_matrix:
        """(rows, n) csr_matrix (data ones for a pattern)."""
        data = self.data if self.data is not None else np.ones(self.nnz, np.float32)
        return sp.csr_matrix((data, self.indices, self.indptr), shape=(self.rows, self.n))


@dataclass(frozen=True)
class EdgePieces:
    """One chunk's edges cut by destination block: ``rows[b], cols[b]``."""

    rows: list[np.ndarray]
    cols: list[np.ndarray]
    loops: int  # self loops dropped


@sizeof.register(RowBlock)
def _sizeof_block(b: RowBlock) -> int:
    return int(b.indptr.nbytes + b.indices.nbytes + (b.data.nbytes if b.data is not None else 0))


@sizeof.register(EdgePieces)
def _sizeof_pieces(p: EdgePieces) -> int:
    return int(sum(r.nbytes for r in p.rows) + sum(c.nbytes for c in p.cols))


@sizeof.register(ParsedChunk)
def _sizeof_chunk(c: ParsedChunk) -> int:
    return int(c.a.nbytes + c.b.nbytes)


def block_bounds(n: int, blocks: int) -> np.ndarray:
    """(R+1,) int64 row bounds of ``blocks`` equal ranges (at least one row each)."""
    blocks = max(1, min(blocks, n))
    size = -(-n // blocks)
    return np.minimum(np.arange(0, blocks + 1, dtype=np.int64) * size, n)[: -(-n // size) + 1]


def split_edges(chunk: ParsedChunk, bounds: np.ndarray, symmetrize: bool, transpose: bool = False, *,
                upper: bool = False) -> EdgePieces:
    """Cut a chunk's 0-based edges by the block of their row; drop self loops.

    ``symmetrize`` adds every edge in both directions (undirected graphs);
    ``transpose`` swaps source and target (the rows of A^T); ``upper`` keeps
    every edge once, as (smaller id, larger id): the strict upper triangle
    of an undirected graph's A, half the entries of ``symmetrize``'s, which
    :func:`symmetric` completes once it is assembled and deduplicated.
    """
    src, dst = (chunk.b, chunk.a) if transpose else (chunk.a, chunk.b)
    keep = src != dst
    loops = int(src.size - keep.sum())
    idx = index_dtype(int(bounds[-1]))  # 4-byte ids below 2^31 vertices: the pieces are half the size
    src, dst = src[keep].astype(idx, copy=False), dst[keep].astype(idx, copy=False)
    del keep
    if upper:
        src, dst = np.minimum(src, dst), np.maximum(src, dst)
    elif symmetrize:
        src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
    return _cut(src, dst, bounds, loops)


def symmetric(lo: int, hi: int, n: int, upper: RowBlock, *lower: tuple[np.ndarray, np.ndarray]) -> RowBlock:
    """Rows lo..hi-1 of A = U + U^T from U's own rows (``upper``: the strict
    upper triangle, deduplicated) and every U block's piece of U^T for these
    rows (:func:`transpose_pieces`): the block :func:`assemble` makes from
    the ``symmetrize`` pieces, with half the entries held between the two."""
    own = np.repeat(np.arange(lo, hi, dtype=upper.indices.dtype), np.diff(upper.indptr))
    return assemble(lo, hi, n, (own, upper.indices), *lower)


def transpose_pieces(b: RowBlock, bounds: np.ndarray) -> EdgePieces:
    """The ``ingest-csr-t-split`` task: a block of A's pattern cut by the
    block of its columns, as rows of A^T (entry (i, j) of A is (j, i) of
    A^T). A^T's blocks are made from A's (:func:`assemble` sorts and merges
    them to the blocks :func:`split_edges` with ``transpose`` gives), so the
    input's chunks can go once A's blocks are made: they are not held
    beside A^T's pieces."""
    idx = index_dtype(int(bounds[-1]))
    rows: np.ndarray = np.repeat(np.arange(b.lo, b.hi, dtype=idx), np.diff(b.indptr))
    return _cut(b.indices.astype(idx, copy=False), rows, bounds, 0)


def _cut(src: np.ndarray, dst: np.ndarray, bounds: np.ndarray, loops: int) -> EdgePieces:
    """Edges (src, dst) cut by the row block of ``src``."""
    size = int(bounds[1] - bounds[0]) if bounds.size > 1 else 1  # blocks are equal, but for the last
    block = (src // max(size, 1)).astype(np.uint16 if bounds.size <= 2**16 else np.int64)
    order = np.argsort(block, kind="stable")  # small ints: numpy's stable sort is a radix sort
    cuts = np.searchsorted(block[order], np.arange(bounds.size), side="left")
    del block
    # each block's piece its own array (not a view of one): a piece's memory goes when its block is assembled
    rows = [src[order[a:b]] for a, b in zip(cuts[:-1], cuts[1:])]
    cols = [dst[order[a:b]] for a, b in zip(cuts[:-1], cuts[1:])]
    return EdgePieces(rows, cols, loops)


def piece(p: EdgePieces, b: int) -> tuple[np.ndarray, np.ndarray]:
    """Block ``b``'s edges of one chunk (a small task next to the chunk)."""
    return p.rows[b], p.cols[b]


def pieces_loops(p: EdgePieces) -> int:
    return p.loops


def assemble(lo: int, hi: int, n: int, *pieces: tuple[np.ndarray, np.ndarray]) -> RowBlock:
    """Rows lo..hi-1 from every chunk's piece: duplicates merged, columns sorted."""
    rows = np.concatenate([r for r, _ in pieces]) if pieces else np.zeros(0, np.int64)
    cols = np.concatenate([c for _, c in pieces]) if pieces else np.zeros(0, np.int64)
    key = sorted_unique((rows.astype(np.int64) - lo) * n + cols)  # sorted by (row, column): CSR order
    r, c = np.divmod(key, n)
    indptr = np.zeros(hi - lo + 1, np.int64)
    np.cumsum(np.bincount(r, minlength=hi - lo), out=indptr[1:])
    return RowBlock(lo, hi, n, indptr, c.astype(index_dtype(n)))


def row_counts(b: RowBlock) -> np.ndarray:
    """(rows,) int64 nonzeros of each row."""
    return np.diff(b.indptr)


def normalize(b: RowBlock, row_deg: np.ndarray, col_deg: np.ndarray, transpose: bool = False, *,
              limit: int = PIECE_ENTRIES) -> RowBlock:
    """Rows of Â = D_r^-1/2 (A + I) D_c^-1/2 (or of Â^T with ``transpose``).

    Parameters
    ----------
    b : pattern of A's rows lo..hi-1 without self loops (A^T's with ``transpose``)
    row_deg, col_deg : (n,) int64 degrees of A + I: out-degrees (rows) and
        in-degrees (columns); the same vector for an undirected graph. Â^T's
        entry (i, j) is Â's (j, i): its row scale is the column degree.
    """
    rows = np.diff(b.indptr)
    indptr = np.zeros(b.rows + 1, np.int64)
    np.cumsum(rows + 1, out=indptr[1:])
    r_deg, c_deg = (col_deg, row_deg) if transpose else (row_deg, col_deg)
    cols: np.ndarray = np.empty(int(indptr[-1]), index_dtype(b.n))
    data: np.ndarray = np.empty(int(indptr[-1]), np.float32)
    for lo, hi in row_pieces(rows + 1, limit):  # a loop over pieces of the block (its temporaries: a piece's)
        p = slice_rows(b, b.lo + lo, b.lo + hi)
        ids = np.arange(p.lo, p.hi, dtype=np.int64)
        # the diagonal joins each row at its sorted place: sort (local row, column) keys
        key = np.concatenate([np.repeat(ids - p.lo, np.diff(p.indptr)) * b.n + p.indices, (ids - p.lo) * b.n + ids])
        key.sort()
        r, c = np.divmod(key, b.n)
        del key
        at = slice(int(indptr[lo]), int(indptr[hi]))
        cols[at] = c
        data[at] = (r_deg[r + p.lo].astype(np.float64) ** -0.5 * c_deg[c].astype(np.float64) ** -0.5)
    return RowBlock(b.lo, b.hi, b.n, indptr, cols, data)


def slice_rows(b: RowBlock, lo: int, hi: int) -> RowBlock:
    """Rows lo..hi-1 (global ids, inside the block) of a block."""
    a, z = int(b.indptr[lo - b.lo]), int(b.indptr[hi - b.lo])
    return RowBlock(lo, hi, b.n, b.indptr[lo - b.lo:hi - b.lo + 1] - a, b.indices[a:z],
                    None if b.data is None else b.data[a:z])


def join_rows(*parts: RowBlock) -> RowBlock:
    """Consecutive row ranges joined into one block."""
    off = np.cumsum([0] + [p.nnz for p in parts[:-1]])
    indptr = np.concatenate([[0]] + [p.indptr[1:] + o for p, o in zip(parts, off)]).astype(np.int64)
    data = None if parts[0].data is None else np.concatenate([p.data for p in parts if p.data is not None])
    return RowBlock(parts[0].lo, parts[-1].hi, parts[0].n, indptr, np.concatenate([p.indices for p in parts]), data)


def pieces_of_range(bounds: np.ndarray, lo: int, hi: int) -> list[tuple[int, int, int]]:
    """(block, start, stop) of the blocks covering rows lo..hi-1."""
    first = int(np.searchsorted(bounds, lo, side="right") - 1)
    out = []
    b = first
    while b < bounds.size - 1 and bounds[b] < hi:  # a loop over the few blocks a range spans
        out.append((b, max(lo, int(bounds[b])), min(hi, int(bounds[b + 1]))))
        b += 1
    return out


STORE_ROWS = 1 << 16  # rows per chunk of the store's node arrays and per block of its graph: fixed, so the store
#                       does not depend on how the build cut its work


def full_matrix(*blocks: RowBlock) -> sp.csr_matrix:
    """The whole n x n matrix from its row blocks (for the partitioners)."""
    n = blocks[0].n
    nnz = sum(b.nnz for b in blocks)
    idx = index_dtype(n, nnz)
    indptr: np.ndarray = np.zeros(n + 1, idx)
    off = 0
    for b in blocks:  # a loop over blocks
        indptr[b.lo + 1:b.hi + 1] = b.indptr[1:] + off
        off += b.nnz
    indices: np.ndarray = np.concatenate([b.indices for b in blocks]).astype(idx, copy=False)
    data = np.concatenate([b.data if b.data is not None else np.ones(b.nnz, np.float32) for b in blocks])
    m = sp.csr_matrix((data, indices, indptr), shape=(n, n))
    m.has_sorted_indices = True
    return m
