"""Every rank's block written where it belongs, one row block at a time,
with no piece waiting in between.

A rank of a 2-part store holds half the graph. Joining its pieces, making
its local CSR and writing it whole held several copies of half of Â and Â^T
at once (R-MAT scale 22, ``--parts 2``: 91 bytes a nonzero in the write
stage); writing each row block's piece as the rank's write reached it made
every piece wait in the temporary area until then (R-MAT scale 26, ``--parts
2``: 25 GiB of disk beside the store). Here nothing waits:

1. ``layout-alloc`` (:func:`allocate`): each rank's arrays are made at their
   final shapes (:class:`shgcn.store.RankFiles`). Every shape is known
   before any row is cut: a row of Â has the degree of A + I entries (of
   Â^T, the in-degree), and a rank's rows are its vertices in original
   order, so where each row block's piece starts in each array is known too
   (:class:`Slots`).
2. ``layout-halo`` (:func:`rank_halo`): the new ids each rank receives, from
   the input's pattern (its rows' columns owned by another rank).
3. ``layout-cut`` (:func:`write_pieces`, in :func:`.layout.cut_block`): each
   row block of Â cut by rank, each piece made local
   (:func:`.pieces.local_rows`, with every rank's halo) and written at its
   slot in its rank's arrays.
4. ``write-rank`` (:func:`write_rank`): the send and receive lists, and the
   block's checksum over its arrays once complete.

Every task writes final bytes only, so a task run again (a worker lost)
writes the same bytes. The block is byte for byte the one
:func:`.layout.rank_block` makes (tested).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
from dask.sizeof import sizeof

from shgcn import store
from shgcn.core.csr import segments

from ..arrays import index_dtype, sorted_unique
from ..blocks import RowBlock
from ..nodes import NodeBlock
from .pieces import RankPiece, exchange_lists, local_rows

NODES = {"features": "features", "labels": "labels", "train_mask": "train", "val_mask": "val", "test_mask": "test"}
MERGE_ENTRIES = 1 << 24  # the halo's pending ids merged into it once they pass this many (its memory: the halo's)


class Layout(Protocol):
    """What the rank writes read of :class:`.layout.Layout` (not imported: the layout's stage imports this module)."""

    perm: np.ndarray  # (n,) int64 new id -> original index
    inverse: np.ndarray  # (n,) int64 original index -> new id
    offsets: np.ndarray  # (P+1,) int64
    part: np.ndarray  # (n,) int32


@dataclass(frozen=True)
class Slots:
    """Where each row block's piece of rank r goes in r's arrays.

    Attributes: rows (B+1,) int64, the piece of block b at rows
    ``rows[b]:rows[b+1]`` of the row-wise arrays; a (B+1,) int64, its
    entries of Â at ``a[b]:a[b+1]``; t (B+1,) int64 or None (undirected), of Â^T.
    """

    rows: np.ndarray
    a: np.ndarray
    t: np.ndarray | None


@sizeof.register(Slots)
def _sizeof_slots(x: Slots) -> int:
    return int(x.rows.nbytes + x.a.nbytes + (x.t.nbytes if x.t is not None else 0))


def allocate(root: str, r: int, lay: Layout, degrees: tuple[np.ndarray, np.ndarray], bounds: np.ndarray,
             first: NodeBlock, *, directed: bool) -> Slots:
    """The ``layout-alloc`` task of rank r: its arrays made at their final shapes, its row pointers written.

    Parameters
    ----------
    root : the partial store
    lay : the layout; r's vertices are ``lay.perm[offsets[r]:offsets[r+1]]``, in original order
    degrees : (n,) int64 each, the degrees of A + I (out, in): the entries of each row of Â and of Â^T
    bounds : (B+1,) int64, the row blocks' bounds (original ids)
    first : the node data of one row, for the node arrays' trailing shapes and dtypes
    """
    lo, hi = int(lay.offsets[r]), int(lay.offsets[r + 1])
    ids = lay.perm[lo:hi]
    rows = np.searchsorted(ids, bounds).astype(np.int64)
    files = store.RankFiles(root, r)
    at = []
    for prefix, deg in (("", degrees[0]), *((("transpose/", degrees[1]),) if directed else ())):
        indptr = np.zeros(hi - lo + 1, np.int64)
        np.cumsum(deg[ids], out=indptr[1:])
        files.put(prefix + "indptr", indptr)
        files.create(prefix + "indices", (int(indptr[-1]),), np.int32)
        files.create(prefix + "data", (int(indptr[-1]),), np.float32)
        at.append(indptr[rows])
    for name, attr in NODES.items():
        x = getattr(first, attr)
        files.create(name, (hi - lo, *x.shape[1:]), x.dtype)
    files.create("node_index", (hi - lo,), np.int64)
    return Slots(rows, at[0], at[1] if directed else None)


def rank_halo(r: int, lay: Layout, *blocks: RowBlock) -> np.ndarray:
    """The ``layout-halo`` task: the sorted new ids rank r receives, from the
    input's pattern by row blocks (A's for Â, A^T's for Â^T): the columns of
    r's rows that another rank owns (Â's diagonal is r's own). The same ids
    as the cut rows' columns outside r's range (tested); the pending ids are
    merged into the halo as they pass :data:`MERGE_ENTRIES`."""
    lo, hi = int(lay.offsets[r]), int(lay.offsets[r + 1])
    ids = index_dtype(lay.perm.size)  # the cut rows' column ids' type: int32 below 2^31 vertices
    halo: np.ndarray = np.zeros(0, ids)
    pending: list[np.ndarray] = []
    size = 0
    for b in blocks:
        keep = np.flatnonzero(lay.part[b.lo:b.hi] == r)
        pos, _ = segments(b.indptr, keep)
        new = lay.inverse[b.indices[pos]]
        del pos
        pending.append(sorted_unique(new[(new < lo) | (new >= hi)].astype(ids)))
        size += pending[-1].size
        del new
        store.release_pages(b.indptr, b.indices)  # a spilled pattern's pages, read for this rank
        if size > max(halo.size, MERGE_ENTRIES):
            halo, pending, size = sorted_unique(np.concatenate([halo, *pending])), [], 0
    return sorted_unique(np.concatenate([halo, *pending])) if pending else halo


def write_pieces(root: str, b: int, pieces: list[RankPiece], lay: Layout, *, slots: tuple[Slots, ...],
                 halos: tuple[np.ndarray, ...], t_halos: tuple[np.ndarray, ...] | None) -> int:
    """Row block b's pieces (rank r's at index r) written at their slots in
    their ranks' arrays, each made local with its rank's halo (and Â^T's
    with ``t_halos``); returns the rows written."""
    written = 0
    for r, p in enumerate(pieces):  # a loop over ranks
        lo, hi = int(lay.offsets[r]), int(lay.offsets[r + 1])
        s = slots[r]
        k = int(s.rows[b + 1] - s.rows[b])
        if p.node_index.size != k:
            raise ValueError(f"rank {r}: block {b} cut {p.node_index.size} rows where the layout gives it {k}")
        files = store.RankFiles(root, r)
        for prefix, rows, halo, at in (("", p.a, halos[r], s.a),
                                       *((("transpose/", p.t, t_halos[r], s.t),) if t_halos is not None else ())):
            if rows is None or at is None:
                raise ValueError("a piece without Â^T's rows in a directed store")
            m = local_rows(rows, lo, hi, halo)
            files.write_at(prefix + "indices", int(at[b]), m.indices.astype(np.int32, copy=False))
            files.write_at(prefix + "data", int(at[b]), m.data.astype(np.float32, copy=False))
        for name, attr in NODES.items():
            files.write_at(name, int(s.rows[b]), getattr(p.nodes, attr))
        files.write_at("node_index", int(s.rows[b]), p.node_index)
        written += k
    return written


def write_rank(root: str, rank: tuple[int, np.ndarray], halos: tuple, sends: tuple, *written: int) -> str:
    """The ``write-rank`` task: rank r's send and receive lists, then its
    block's checksum (every row block's pieces written: ``written``, the
    cut tasks' results, which this task waits for).

    Parameters
    ----------
    root : the partial store
    rank : (r, offsets) with offsets (P+1,) int64, rank r's new ids ``offsets[r]:offsets[r+1]``
    halos : (halo, t_halo): the sorted new ids r receives for Â, and for Â^T (None: undirected)
    sends : (sends, t_sends): (send_ptr (P+1,), send_rows) of Â, and of Â^T (None: undirected)
    """
    r, offsets = rank
    files = store.RankFiles(root, r)
    directed = halos[1] is not None
    for prefix, halo, send in (("", halos[0], sends[0]), *((("transpose/", halos[1], sends[1]),) if directed else ())):
        for name, arr in exchange_lists(halo, send, offsets).items():
            files.put(prefix + name, arr)
    return files.checksum(directed)
