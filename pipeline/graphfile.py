"""Graph files for graph partitioners, written by row blocks: the METIS text
format and the ParHIP binary format (KaHIP's ParHIP, KaMinPar, dKaMinPar,
ParMETIS through METIS files).

Both hold an undirected graph: the pattern of A + Aᵀ without self loops (for
an undirected A, A itself), with one integer weight per vertex (what the
partitioner balances). Each row block's piece is a pure function of the
block (:func:`symmetric_block`, :func:`metis_text`, :func:`parhip_pieces`);
the writers place the pieces at their byte offsets, so blocks are written
in parallel and no process holds the whole graph.

ParHIP (little-endian, 64-bit): a header of three uint64 (version, n, m),
then n + 1 uint64 byte offsets of each vertex's neighbours in the file
(``(3 + n + 1 + first edge) * 8``), then the m uint64 neighbour ids
(0-based; m counts both directions of every edge), then n int64 vertex
weights. Version 1 = vertex weights and no edge weights (3: neither), the
negated METIS ``fmt`` code, as KaMinPar and KaGen read it.

METIS: a header ``n m 010`` (m undirected edges; 010: vertex weights), then
per vertex one line: its weight, then its neighbours, 1-based.
"""

from __future__ import annotations

import os

import numpy as np

from .arrays import PIECE_ENTRIES, index_dtype, row_pieces, sorted_unique
from .blocks import RowBlock, slice_rows

PARHIP_VERTEX_WEIGHTS = 1  # version: vertex weights, no edge weights
HEADER_BYTES = 24


def symmetric_block(a: RowBlock, at: RowBlock | None, limit: int = PIECE_ENTRIES) -> RowBlock:
    """Rows lo..hi-1 of the pattern of A + Aᵀ (``at``: the same rows of Aᵀ;
    None for an undirected A, whose blocks are symmetric already). No self
    loops (the blocks have none); columns sorted. Sorted in row ranges of at
    most ``limit`` entries of A and Aᵀ (:func:`..arrays.row_pieces`)."""
    if at is None:
        return RowBlock(a.lo, a.hi, a.n, a.indptr, a.indices)
    counts = np.zeros(a.rows, np.int64)
    cols: list[np.ndarray] = []
    for lo, hi in row_pieces(np.diff(a.indptr) + np.diff(at.indptr), limit):  # a loop over pieces of the block
        pa, pt = slice_rows(a, a.lo + lo, a.lo + hi), slice_rows(at, a.lo + lo, a.lo + hi)
        key = sorted_unique(np.concatenate([(pa.row_ids() - pa.lo) * a.n + pa.indices,
                                            (pt.row_ids() - pt.lo) * a.n + pt.indices]))
        r, c = np.divmod(key, a.n)
        del key
        counts[lo:hi] = np.bincount(r, minlength=hi - lo)
        cols.append(c.astype(index_dtype(a.n)))
    indptr = np.zeros(a.rows + 1, np.int64)
    np.cumsum(counts, out=indptr[1:])
    return RowBlock(a.lo, a.hi, a.n, indptr, np.concatenate(cols) if cols else np.zeros(0, index_dtype(a.n)))


def block_edges(b: RowBlock) -> int:
    return b.nnz


# ------------------------------------------------------------------ ParHIP

def parhip_header(n: int, m: int) -> bytes:
    return np.array([PARHIP_VERTEX_WEIGHTS, n, m], "<u8").tobytes()


def parhip_offsets(b: RowBlock, first_edge: int, last: bool) -> np.ndarray:
    """The block's vertex offsets (bytes into the file); with ``last``, the
    end offset of the whole list too."""
    off = (HEADER_BYTES // 8 + b.n + 1 + first_edge + b.indptr[:-1 if not last else None]) * 8
    return off.astype("<u8")


def write_parhip_block(path: str, b: RowBlock, weights: np.ndarray, first_edge: int, m: int) -> int:
    """Write block ``b``'s offsets, neighbours and weights (``weights``: the
    whole graph's, (n,)) at their places in the ParHIP file ``path`` (which
    exists, at its full size); returns the bytes written."""
    n = b.n
    pieces = [(HEADER_BYTES + 8 * b.lo, parhip_offsets(b, first_edge, b.hi == n)),
              (HEADER_BYTES + 8 * (n + 1 + first_edge), b.indices.astype("<u8")),
              (HEADER_BYTES + 8 * (n + 1 + m + b.lo), np.asarray(weights[b.lo:b.hi], "<i8"))]
    return write_pieces(path, pieces)


def write_pieces(path: str, pieces: list[tuple[int, np.ndarray]]) -> int:
    """Each ``(pos, array)`` of ``pieces`` written at byte ``pos`` of ``path`` (which exists); the bytes written."""
    fd = os.open(path, os.O_WRONLY)
    try:
        done = 0
        for pos, arr in pieces:
            data = np.ascontiguousarray(arr).reshape(-1).view(np.uint8).data
            while data:  # a write may be short
                k = os.pwrite(fd, data, pos)
                data, pos, done = data[k:], pos + k, done + k
        return done
    finally:
        os.close(fd)


def parhip_size(n: int, m: int) -> int:
    return HEADER_BYTES + 8 * (n + 1) + 8 * m + 8 * n


def read_parhip(path: str) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(xadj (n+1,) int64, adjncy (m,) int64, vertex weights (n,) int64 or
    None) of a ParHIP file (64-bit ids and weights), memory-mapped."""
    head = np.fromfile(path, "<u8", count=3)
    if head.size < 3:
        raise ValueError(f"{path}: not a ParHIP file (shorter than its header)")
    version, n, m = (int(x) for x in head)
    if version & ~3:
        raise ValueError(f"{path}: ParHIP version {version}: only 64-bit ids and weights are read")
    offsets = np.memmap(path, "<u8", mode="r", offset=HEADER_BYTES, shape=(n + 1,))
    xadj = (offsets.astype(np.int64) - 8 * (3 + n + 1)) // 8
    adjncy = np.memmap(path, "<u8", mode="r", offset=HEADER_BYTES + 8 * (n + 1), shape=(m,))
    weights = None
    if not version & 2:
        weights = np.memmap(path, "<i8", mode="r", offset=HEADER_BYTES + 8 * (n + 1 + m), shape=(n,))
    return xadj, adjncy, weights



def read_neighbours(path: str, chunk: int = PIECE_ENTRIES) -> np.ndarray:
    """The m neighbour ids of a ParHIP file (as :func:`read_parhip` reads
    them), int32 where n allows, read ``chunk`` entries at a time: 4 bytes an
    entry held instead of the file's 8, and none of the file's pages mapped
    (a memory map's pages count in the reader's resident memory)."""
    xadj, adjncy, _ = read_parhip(path)  # checks the header
    n, m = xadj.size - 1, adjncy.size
    out: np.ndarray = np.empty(m, index_dtype(n))
    with open(path, "rb") as f:
        f.seek(HEADER_BYTES + 8 * (n + 1))
        for lo in range(0, m, chunk):
            out[lo:lo + chunk] = np.fromfile(f, "<u8", count=min(chunk, m - lo))
    return out

# ------------------------------------------------------------------ METIS

def metis_header(n: int, m: int) -> bytes:
    """``m``: undirected edges (half the adjacency entries)."""
    return f"{n} {m} 010\n".encode()


def metis_text(b: RowBlock, weights: np.ndarray) -> bytes:
    """The block's lines: weight, then the 1-based neighbours (vectorized in
    pyarrow: no Python loop over vertices or edges)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if b.rows == 0:
        return b""
    nbr = pc.cast(pa.array(b.indices.astype(np.int64) + 1), pa.string())
    lists = pa.ListArray.from_arrays(pa.array(b.indptr, pa.int64()), nbr)
    adj = pc.binary_join(lists, " ")
    w = pc.cast(pa.array(np.asarray(weights[b.lo:b.hi], np.int64)), pa.string())
    lines = pc.binary_join_element_wise(w, adj, " ")
    lines = pc.utf8_rtrim(lines, characters=" ")  # a vertex without neighbours: "w " -> "w"
    one = pc.binary_join(pa.LargeListArray.from_arrays(pa.array([0, len(lines)], pa.int64()),
                                                       lines.cast(pa.large_string())), pa.scalar("\n", pa.large_string()))
    return one[0].as_buffer().to_pybytes() + b"\n"


def write_at(path: str, pos: int, data: bytes) -> int:
    """``data`` at byte ``pos`` of ``path`` (a block's METIS lines)."""
    return write_pieces(path, [(pos, np.frombuffer(data, np.uint8))])
