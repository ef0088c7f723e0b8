"""A rank's rows of one row block (:class:`RankPiece`), and the ``.npy``
files the build's spilled patterns are saved in (:func:`save_npy`,
:func:`map_npy`).

Each ``layout-cut`` task cuts one row block of Â (and Â^T) and its node data
by rank (:func:`.layout.rank_pieces`) and writes each rank's piece where it
belongs in that rank's arrays (:mod:`.rankwrite`). The pieces once waited
for the write, first in memory (R-MAT scale 21, ``--parts 64``: 44 bytes a
nonzero in the write stage), then in ``.npy`` files in the temporary area
(R-MAT scale 26, ``--parts 2``: 25 GiB of disk beside the store at its
peak); now they wait nowhere.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..arrays import index_dtype, lookup
from ..nodes import NodeBlock


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


def local_rows(rows: Rows, lo: int, hi: int, halo: np.ndarray) -> sp.csr_matrix:
    """``rows`` (some of rank ``lo..hi-1``'s) with local column ids: own
    columns ``0..hi-lo-1``, then the halo's, each row's sorted."""
    n_own = hi - lo
    own = (rows.cols >= lo) & (rows.cols < hi)
    local = np.where(own, rows.cols - lo, n_own + lookup(halo, np.where(own, halo[0] if halo.size else 0, rows.cols)))
    m = sp.csr_matrix((rows.data.astype(np.float32), local.astype(index_dtype(n_own + halo.size)), rows.indptr),
                      shape=(rows.indptr.size - 1, n_own + halo.size))
    m.sort_indices()
    return m


def exchange_lists(halo: np.ndarray, sends: tuple[np.ndarray, np.ndarray], offsets: np.ndarray) -> dict:
    """A plan's send and receive lists (:class:`shgcn.store.Plan`'s send_ptr, send_rows, recv_ptr, recv_ids)."""
    return {"send_ptr": sends[0].astype(np.int64), "send_rows": sends[1].astype(np.int32),
            "recv_ptr": np.searchsorted(halo, offsets).astype(np.int64), "recv_ids": halo.astype(np.int64)}
