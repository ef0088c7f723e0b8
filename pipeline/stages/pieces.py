"""The layout's pieces on disk until the rank that owns them is written.

Each ``layout-cut`` task cuts one row block of Â (and Â^T) and its node data
by rank (:func:`.layout.rank_pieces`). Held in memory, every block's pieces
wait for the last ``write-rank`` task: all of Â, Â^T and the node data at
once (R-MAT scale 21, ``--parts 64``: 44 bytes a nonzero in the write
stage). Here the cut task saves its block's pieces in the partial store's
temporary area, one ``.npy`` file per array with the ranks' rows one after
another, and returns a :class:`SpilledBlock`: offsets only. A task that
needs rank r's piece opens it (:meth:`SpilledBlock.piece`): memory-mapped
slices of those files, whose pages are read when used and let go when the
piece is (an unmapped file's pages leave the process's resident memory).
The arrays are the same, byte for byte.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
from dask.sizeof import sizeof

from ..nodes import NodeBlock

NODE_ARRAYS = ("features", "labels", "train", "val", "test")


@dataclass
class Rows:
    """Some rows of a matrix in CSR form, columns as new (permuted) ids."""

    indptr: np.ndarray  # (k+1,) int64
    cols: np.ndarray  # (nnz,) new ids, int32 below 2^31 vertices
    data: np.ndarray  # (nnz,) float32


@dataclass
class RankPiece:
    """The rows of one block that one rank owns (in new-id order), with their
    rows of Â^T (directed graphs) and their node data."""

    a: Rows
    t: Rows | None
    nodes: NodeBlock  # lo/hi unused: rows are the rank's
    node_index: np.ndarray  # (k,) int64 original index


@sizeof.register(RankPiece)
def _sizeof_piece(p: RankPiece) -> int:
    rows = [p.a] + ([p.t] if p.t is not None else [])
    return int(sum(r.indptr.nbytes + r.cols.nbytes + r.data.nbytes for r in rows) + p.node_index.nbytes
               + sizeof(p.nodes))


@dataclass(frozen=True)
class SpilledBlock:
    """One row block's rank pieces on disk.

    Attributes: prefix (the files are ``prefix.NAME.npy``); rows (P+1,)
    int64, rank r's rows at ``rows[r]:rows[r+1]`` of the row-wise arrays;
    a_nnz (P+1,) int64, its nonzeros of Â at ``a_nnz[r]:a_nnz[r+1]``;
    t_nnz (P+1,) int64 or None (undirected), of Â^T.
    """

    prefix: str
    rows: np.ndarray
    a_nnz: np.ndarray
    t_nnz: np.ndarray | None
    files: dict[str, tuple[str, tuple[int, ...], int]]  # name: dtype, shape, offset (save_npy's)

    def _open(self, name: str, span: np.ndarray, r: int) -> np.ndarray:
        """Rank r's slice of array ``name``, memory-mapped (nothing read yet)."""
        lo, hi = int(span[r]), int(span[r + 1])
        return map_npy(f"{self.prefix}.{name}.npy", self.files[name])[lo:hi]

    def _matrix(self, m: str, nnz: np.ndarray, r: int) -> Rows:
        counts = self._open(f"{m}.counts", self.rows, r)
        indptr = np.zeros(counts.size + 1, np.int64)
        np.cumsum(counts, out=indptr[1:])
        return Rows(indptr, self._open(f"{m}.cols", nnz, r), self._open(f"{m}.data", nnz, r))

    def piece(self, r: int) -> RankPiece:
        """Rank r's piece, as :func:`.layout.rank_pieces` made it (its arrays
        read-only memory maps)."""
        f, y, tr, va, te = (self._open(f"nodes.{k}", self.rows, r) for k in NODE_ARRAYS)
        k = int(self.rows[r + 1] - self.rows[r])
        return RankPiece(self._matrix("a", self.a_nnz, r),
                         None if self.t_nnz is None else self._matrix("t", self.t_nnz, r),
                         NodeBlock(0, k, f, y, tr, va, te), self._open("node_index", self.rows, r))


@sizeof.register(SpilledBlock)
def _sizeof_spilled(x: SpilledBlock) -> int:
    return int(x.rows.nbytes + x.a_nnz.nbytes + (x.t_nnz.nbytes if x.t_nnz is not None else 0))


def _spans(sizes: list[int]) -> np.ndarray:
    out = np.zeros(len(sizes) + 1, np.int64)
    np.cumsum(sizes, out=out[1:])
    return out


def map_npy(path: str, meta: tuple[str, tuple[int, ...], int]) -> np.ndarray:
    """The array of a ``.npy`` file :func:`save_npy` wrote (``meta``: what it
    returned), memory-mapped read-only; an empty array is made, not mapped.
    Not ``np.load``: it parses the header with ``ast``, which CPython 3.11
    can fail to do in several threads at once ("AST constructor recursion
    depth mismatch", seen in a build's write stage)."""
    dtype, shape, offset = meta
    if 0 in shape:
        return np.empty(shape, dtype)
    return np.memmap(path, np.dtype(dtype), "r", offset, shape)


def save_npy(path: str, parts: list[np.ndarray]) -> tuple[str, tuple[int, ...], int]:
    """The arrays ``parts`` one after another in ``path`` (a ``.npy`` file),
    written piece by piece: never joined in memory; (dtype, shape, the data's offset)."""
    dtype = parts[0].dtype
    shape = (sum(p.shape[0] for p in parts), *parts[0].shape[1:])
    with open(path, "wb") as f:
        np.lib.format.write_array_header_1_0(f, {"descr": np.lib.format.dtype_to_descr(dtype),
                                                 "fortran_order": False, "shape": shape})
        offset = f.tell()
        for p in parts:
            f.write(np.ascontiguousarray(p, dtype).view(np.uint8).reshape(-1).data)
    return dtype.str, shape, offset


def save_pieces(pieces: list[RankPiece], prefix: str) -> SpilledBlock:
    """``pieces`` (rank r's at index r) saved at ``prefix.*.npy``; the
    :class:`SpilledBlock` that opens them again."""
    os.makedirs(os.path.dirname(prefix) or ".", exist_ok=True)
    spans = {"rows": _spans([p.node_index.size for p in pieces])}
    matrices = {"a": [p.a for p in pieces]}
    if pieces and pieces[0].t is not None:
        matrices["t"] = [p.t for p in pieces if p.t is not None]
    arrays: dict[str, list[np.ndarray]] = {}
    for m, rows in matrices.items():
        arrays |= {f"{m}.counts": [np.diff(x.indptr) for x in rows], f"{m}.cols": [x.cols for x in rows],
                   f"{m}.data": [x.data for x in rows]}
        spans[m] = _spans([x.cols.size for x in rows])
    arrays |= {f"nodes.{k}": [getattr(p.nodes, k) for p in pieces] for k in NODE_ARRAYS}
    arrays["node_index"] = [p.node_index for p in pieces]
    files = {name: save_npy(f"{prefix}.{name}.npy", parts) for name, parts in arrays.items()}
    return SpilledBlock(prefix, spans["rows"], spans["a"], spans.get("t"), files)


def open_piece(x: RankPiece | tuple[SpilledBlock, int]) -> RankPiece:
    """A piece held in memory as is; a spilled one, ``(block, r)``, opened."""
    if isinstance(x, RankPiece):
        return x
    block, r = x
    return block.piece(r)
