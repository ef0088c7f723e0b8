"""The process grids of the trainer's distributed algorithms
(``shgcn-train --algorithm 1d | 1.5d | 2d``): who holds which block, which
rank multiplies which column block, and which rows a rank's partial sums
touch. The trainer lays its ranks out with these functions and the cost
models (:mod:`.onehalfd`, :mod:`.twod`) count their bytes with the same ones, so the
prediction is exact by construction and checked by the tests.

Ranks are numbered row by row: rank ``r`` is grid position ``(i, j) =
divmod(r, cols)`` (the c replicas of a block row are consecutive ranks, so
on a cluster they share a node and the in-row traffic stays on it).

- ``1d``: a k x 1 grid; rank i holds the store's block i.
- ``1.5d`` (CAGNET's, with replication c): a k x c grid on k c ranks; the
  c ranks of process row i all hold block row i of Â and of H (each
  memory-maps the store's block i), and split the off-diagonal column
  blocks q among themselves (:func:`assign_pairs`): rank (i, j) receives
  the rows of H_q that its blocks need from rank (q, j), the rank of
  process row q in the same grid column. The diagonal block is split by
  rows: rank (i, j) multiplies the rows of its chunk (:func:`chunk_bounds`).
- ``2d`` (SUMMA, as CAGNET's 2D): an s x s grid on P = s^2 ranks over a
  store of s parts; rank (i, j) keeps block (i, j) of Â (block row i's
  columns owned by part j) and multiplies column slice j of the rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import scipy.sparse as sp

from ..errors import UserError


@dataclass(frozen=True)
class GridShape:
    """A process grid: ``rows`` block rows (the store's parts) x ``cols``
    ranks per row (1 for 1d, the replication c for 1.5d, s for 2d).

    ``algorithm`` names the algorithm that laid it out (for messages and the run log)."""

    algorithm: str
    rows: int
    cols: int

    @property
    def ranks(self) -> int:
        return self.rows * self.cols

    def position(self, rank: int) -> tuple[int, int]:
        """(process row i, grid column j) of ``rank``."""
        i, j = divmod(int(rank), self.cols)
        return i, j

    @property
    def replication(self) -> int:
        """How many ranks hold each block row (c; s for 2d, 1 for 1d)."""
        return self.cols


def rows_by_columns(algorithm: str, ranks: int, parts: int, replication: int) -> GridShape:
    """A k x c grid of ``ranks`` ranks over ``parts`` parts (c = ``replication``); a :class:`UserError`
    (one line) when the job's rank count is not ``parts x c``."""
    if replication < 1:
        raise UserError(f"--replication {replication}: must be >= 1")
    if ranks != parts * replication:
        how = f" (--algorithm {algorithm}: {parts} parts x --replication {replication})" if replication > 1 else ""
        raise UserError(f"the store has {parts} part{'s' if parts != 1 else ''} but the job has {ranks} "
                        f"rank{'s' if ranks != 1 else ''}; run with mpirun -n {parts * replication}{how}")
    return GridShape(algorithm, parts, replication)


def assign_pairs(volume: np.ndarray, c: int, oblivious: bool = False) -> np.ndarray:
    """Which rank of process row i multiplies column block q.

    Sparsity-aware (default): greedy by volume, largest pairs first, each to
    the grid column j that keeps ``max(rows received by (i, j), rows sent by
    (q, j))`` lowest (ties: the smaller sum, then the smaller j), so that both
    the receives of a process row and the sends of the sending row are split
    evenly (ties: the column whose two ranks move the fewest rows so far).
    Sparsity-oblivious (``--exchange bcast``, CAGNET's 1.5D): q mod
    c, the blocks that grid column j broadcasts.

    Parameters
    ----------
    volume : (k, k) int, rows of H part q sends to part i at ``volume[q, i]``
    c : replication

    Returns
    -------
    (k, k) int64 ``a``: ``a[i, q]`` = the grid column j of rank (i, j) that multiplies block (i, q).
    """
    v = np.asarray(volume, np.int64).copy()
    k = v.shape[0]
    np.fill_diagonal(v, 0)
    a = np.broadcast_to(np.arange(k) % c, (k, k)).copy()
    if oblivious or c == 1:
        return a if c > 1 else np.zeros((k, k), np.int64)
    recv = np.zeros((k, c), np.int64)
    send = np.zeros((k, c), np.int64)
    q_idx, i_idx = np.nonzero(v)
    order = np.lexsort((q_idx, i_idx, -v[q_idx, i_idx]))  # largest first, then by (i, q)
    for q, i in zip(q_idx[order].tolist(), i_idx[order].tolist()):  # a loop over pairs of parts, not vertices
        w = int(v[q, i])
        load = np.maximum(recv[i] + w, send[q] + w)
        best = np.flatnonzero(load == load.min())
        traffic = recv[i] + send[i] + recv[q] + send[q]  # ties: the two ranks that move the least so far
        j = int(best[np.argmin(traffic[best])])
        a[i, q] = j
        recv[i, j] += w
        send[q, j] += w
    return a


def chunk_bounds(n: int, c: int) -> np.ndarray:
    """(c+1,) int64: rank (i, j) of a 1.5D row owns block rows ``bounds[j]:bounds[j+1]``
    (the rows of the diagonal block it multiplies and of the sums it reduces)."""
    return (np.arange(c + 1, dtype=np.int64) * int(n)) // int(c)


def slice_bounds(width: int, s: int) -> np.ndarray:
    """(s+1,) int64: the columns of H that rank (i, j) of a 2D grid multiplies: ``bounds[j]:bounds[j+1]``."""
    return chunk_bounds(width, s)


def local_index(part: np.ndarray, parts: int) -> np.ndarray:
    """(n,) int64: each vertex's row within its part's block (blocks keep the original order)."""
    part = np.asarray(part, np.int64)
    order = np.argsort(part, kind="stable")
    starts = np.concatenate([[0], np.cumsum(np.bincount(part, minlength=parts))[:-1]])
    out = np.empty(part.size, np.int64)
    out[order] = np.arange(part.size) - starts[part[order]]
    return out


def chunk_of(part: np.ndarray, parts: int, c: int) -> np.ndarray:
    """(n,) int64: the grid column whose chunk holds each vertex's row."""
    part = np.asarray(part, np.int64)
    sizes = np.bincount(part, minlength=parts)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    bounds = (np.arange(c, dtype=np.int64)[None, :] * sizes[:, None]) // c + starts[:, None]  # (parts, c) starts
    pos = starts[part] + local_index(part, parts)
    return np.searchsorted(bounds.ravel(), pos, side="right") - 1 - part * c


def row_supports(graph: sp.csr_matrix, part: np.ndarray, parts: int, a: np.ndarray, c: int
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The rows a 1.5D rank's partial sums touch, counted by chunk.

    Forward (Â H): rank (i, j)'s partial sum is nonzero on the rows of block
    i with a nonzero in a column block it multiplies. Fold (Âᵀ G on a
    directed graph): rank (q, j) receives partial sums for the rows of q
    that the rows of i need, for every i with ``a[i, q] = j``.

    Parameters
    ----------
    graph : (n, n) csr_matrix, the pattern of Â (original order, any values)
    part : (n,) int, the part of each vertex
    a : (k, k) from :func:`assign_pairs`

    Returns
    -------
    fwd, fold : (k, c, c) int64, ``[i, j, t]`` = rows of rank (i, j)'s support in the chunk of grid column t.
    """
    import scipy.sparse as sp

    coo = sp.coo_matrix(graph)
    part = np.asarray(part, np.int64)
    prow, pcol = part[coo.row], part[coo.col]
    off = prow != pcol
    rows, cols, prow, pcol = coo.row[off].astype(np.int64), coo.col[off].astype(np.int64), prow[off], pcol[off]
    j = np.asarray(a, np.int64)[prow, pcol]
    chunk = chunk_of(part, parts, c)
    out = []
    for v in (rows, cols):  # the forward's rows; the fold's columns (rows of the sending part)
        key = np.unique(v * c + j)
        vert, col = key // c, key % c
        out.append(np.bincount((part[vert] * c + col) * c + chunk[vert], minlength=parts * c * c)
                   .reshape(parts, c, c).astype(np.int64))
    return out[0], out[1]


def block_nnz(graph: sp.csr_matrix, part: np.ndarray, parts: int) -> np.ndarray:
    """(k, k) int64: nonzeros of Â in the rows of part i and the columns of part q."""
    import scipy.sparse as sp

    coo = sp.coo_matrix(graph)
    part = np.asarray(part, np.int64)
    return np.bincount(part[coo.row] * parts + part[coo.col], minlength=parts * parts).reshape(parts, parts)
