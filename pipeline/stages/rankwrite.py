"""The ``write-rank`` task: one rank's block written piece by piece, one
row block's piece at a time, never the rank's rows joined.

A rank of a 2-part store holds half the graph: joining its pieces, making
its local CSR and writing it whole held several copies of half of Â and Â^T
at once, two ranks at a time (R-MAT scale 22, ``--parts 2``: 6.1 GiB in the
write stage, 91 bytes a nonzero, against 1.5 GiB for KaMinPar). Here each
array of the block is opened with its final shape (:class:`shgcn.store.RankStreams`)
and each piece's rows are made local (:func:`.layout.local_rows`: the same
function the joined path runs, so each row comes out the same) and appended.
The halo and the send lists are the layout's (computed from the pieces).
The block is byte for byte the one :func:`.layout.rank_block` makes (tested).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from shgcn import store

from .layout import exchange_lists, local_rows
from .pieces import RankPiece, Rows, SpilledBlock, open_piece

PieceRef = RankPiece | tuple[SpilledBlock, int]


def write_rank(root: str, rank: tuple[int, np.ndarray], halos: tuple, sends: tuple, *pieces: PieceRef) -> str:
    """Write rank r's block from its pieces; returns the block's checksum.

    Parameters
    ----------
    root : the partial store
    rank : (r, offsets) with offsets (P+1,) int64, rank r's new ids ``offsets[r]:offsets[r+1]``
    halos : (halo, t_halo): the sorted new ids r receives for Â, and for Â^T (None: undirected)
    sends : (sends, t_sends): (send_ptr (P+1,), send_rows) of Â, and of Â^T (None: undirected)
    pieces : r's RankPiece of every row block, in block order, or ``(SpilledBlock, r)``
        for a block on disk: each opened (:func:`.pieces.open_piece`) when used and let go after
    """
    r, offsets = rank
    lo, hi = int(offsets[r]), int(offsets[r + 1])
    rows = sum(_rows(x) for x in pieces)
    if rows != hi - lo:
        raise ValueError(f"rank {r}: pieces hold {rows} rows, the layout gives it {hi - lo}")
    with store.RankStreams(root, r) as w:
        _plan(w, "", [_getter(x, False) for x in pieces], (lo, hi, offsets), halos[0], sends[0])
        _nodes(w, pieces, rows)
        if halos[1] is not None:
            _plan(w, "transpose/", [_getter(x, True) for x in pieces], (lo, hi, offsets), halos[1], sends[1])
        return w.finish()


def _rows(x: PieceRef) -> int:
    if isinstance(x, RankPiece):
        return int(x.node_index.size)
    block, r = x
    return int(block.rows[r + 1] - block.rows[r])


def _getter(x: PieceRef, transpose: bool) -> Callable[[], Rows]:
    """A function that opens the piece's rows of Â (or Â^T) when called."""
    def get() -> Rows:
        p = open_piece(x)
        rows = p.t if transpose else p.a
        if rows is None:
            raise ValueError("a piece without Â^T's rows in a directed store")
        return rows
    return get


def _plan(w: store.RankStreams, prefix: str, rows: list[Callable[[], Rows]], span: tuple, halo: np.ndarray,
          sends: tuple) -> None:
    """One matrix's plan (:class:`shgcn.store.Plan`): the local CSR piece by
    piece (each piece's rows opened by ``rows[i]()`` and let go), then the send and receive lists."""
    lo, hi, offsets = span
    counts = [np.diff(get().indptr) for get in rows]
    indptr = np.zeros(hi - lo + 1, np.int64)
    if counts:
        np.cumsum(np.concatenate(counts), out=indptr[1:])
    nnz = int(indptr[-1])
    w.put(prefix + "indptr", indptr)
    indices = w.open(prefix + "indices", (nnz,), np.int32)
    data = w.open(prefix + "data", (nnz,), np.float32)
    for get in rows:
        m = local_rows(get(), lo, hi, halo)
        indices.write(m.indices.astype(np.int32, copy=False))
        data.write(m.data.astype(np.float32, copy=False))
    for name, arr in exchange_lists(halo, sends, offsets).items():
        w.put(prefix + name, arr)


NODE_PARTS: dict[str, Callable[[RankPiece], np.ndarray]] = {
    "features": lambda p: p.nodes.features, "labels": lambda p: p.nodes.labels, "train_mask": lambda p: p.nodes.train,
    "val_mask": lambda p: p.nodes.val, "test_mask": lambda p: p.nodes.test, "node_index": lambda p: p.node_index}


def _nodes(w: store.RankStreams, pieces: tuple[PieceRef, ...], rows: int) -> None:
    """The rank's node arrays, piece by piece (each opened and let go)."""
    for name, get in NODE_PARTS.items():
        first = np.asarray(get(open_piece(pieces[0])))
        s = w.open(name, (rows, *first.shape[1:]), first.dtype)
        for x in pieces:
            s.write(get(open_piece(x)))
