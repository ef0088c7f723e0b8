"""From a partition to per-rank blocks: permutation to contiguous rank
ranges, local CSR with compact column ids, send and receive plans.

Rank r owns new ids ``offsets[r]:offsets[r+1]`` (vertices of part r, in
original order). Its local columns are its own rows first, then the rows it
receives, grouped by sending rank and ordered by new id within a sender;
the sender packs them in the same order, so a received buffer maps onto
consecutive local columns without any index exchange.

On the cluster this runs without ever holding the whole matrix: each row
block cuts its rows by rank (:func:`rank_pieces`), each rank joins its
pieces' halos (:func:`pieces_halo`), one task turns every rank's halo into send lists
(:func:`send_lists`), and each rank's block is built where it is written,
piece by piece (:mod:`.rankwrite`). :func:`in_memory` joins each rank's
rows (:func:`rank_rows`, :func:`rank_block`) on one process (tests, small
graphs): the same blocks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp
from dask.sizeof import sizeof

from shgcn.core.csr import segments
from shgcn.store import Plan, RankBlock, release_pages

from ..arrays import index_dtype, sorted_unique
from ..blocks import RowBlock, normalize
from ..nodes import NodeBlock, NodeData, node_block
from . import rankwrite
from .pieces import RankPiece, Rows, exchange_lists, local_rows

if TYPE_CHECKING:
    from ..config import BuildConfig
    from ..runtime.client import Tasks
    from ..runtime.monitor import Monitor
    from .ingest import Ingested
    from .normalize import Normalized
    from .partition import Partitioned


@dataclass
class Layout:
    """Attributes: perm (n,) int64 new id -> original index; inverse (n,)
    int64 original index -> new id; offsets (P+1,) int64; part (n,) int32."""

    perm: np.ndarray
    inverse: np.ndarray
    offsets: np.ndarray
    part: np.ndarray

    @property
    def parts(self) -> int:
        return self.offsets.size - 1


@sizeof.register(Layout)
def _sizeof_layout(x: Layout) -> int:
    return int(x.perm.nbytes + x.inverse.nbytes + x.offsets.nbytes + x.part.nbytes)


def make_layout(part: np.ndarray, parts: int) -> Layout:
    """The ``layout`` task: vertices sorted by part, stably."""
    part = np.asarray(part, np.int32)
    perm = np.argsort(part, kind="stable").astype(np.int64)
    inverse = np.empty_like(perm)
    inverse[perm] = np.arange(perm.size, dtype=np.int64)
    offsets = np.zeros(parts + 1, np.int64)
    np.cumsum(np.bincount(part, minlength=parts), out=offsets[1:])
    return Layout(perm, inverse, offsets, part)


def offsets_of(lay: Layout) -> np.ndarray:
    return lay.offsets


def perm_of(lay: Layout) -> np.ndarray:
    return lay.perm


def _select(b: RowBlock, keep: np.ndarray, inverse: np.ndarray) -> Rows:
    """Rows ``keep`` (block-local) of ``b``, columns renamed to new ids."""
    pos, _ = segments(b.indptr, keep)
    indptr = np.zeros(keep.size + 1, np.int64)
    np.cumsum(b.indptr[keep + 1] - b.indptr[keep], out=indptr[1:])
    data = b.data[pos] if b.data is not None else np.ones(pos.size, np.float32)
    return Rows(indptr, inverse[b.indices[pos]].astype(index_dtype(b.n), copy=False), data)


def rank_pieces(ab: RowBlock, tb: RowBlock | None, nb: NodeBlock, lay: Layout) -> list[RankPiece]:
    """The ``layout-cut`` task of one block: its rows cut by rank."""
    owner = lay.part[ab.lo:ab.hi]
    out = []
    for r in range(lay.parts):  # a loop over ranks
        keep = np.flatnonzero(owner == r)
        nodes = NodeBlock(0, keep.size, nb.features[keep], nb.labels[keep], nb.train[keep], nb.val[keep],
                          nb.test[keep])
        out.append(RankPiece(_select(ab, keep, lay.inverse), None if tb is None else _select(tb, keep, lay.inverse),
                             nodes, keep + ab.lo))
    return out


def cut_block(pattern: tuple[RowBlock, RowBlock | None], degrees: tuple[np.ndarray, np.ndarray],
              node_rows: tuple[int, int, tuple], lay: Layout, *, where: tuple[str, int], slots: tuple,
              halos: tuple, t_halos: tuple | None) -> int:
    """The ``layout-cut`` task from A's pattern (and A^T's, directed) and
    the recipe of the node data (``node_rows``: lo, hi and
    :attr:`Ingested.node_recipe <.ingest.Ingested>`): the block's rows of Â
    (and Â^T, :func:`..blocks.normalize`) and its node data made here, cut
    by rank (:func:`rank_pieces`) and written where they belong in each
    rank's arrays (:func:`.rankwrite.write_pieces`; ``where``: the partial
    store and the block's index; ``slots``, ``halos`` and ``t_halos``: every
    rank's, :mod:`.rankwrite`): only the block being cut is in memory whole,
    and nothing waits on disk. Returns the rows written."""
    a, t = pattern
    row_deg, col_deg = degrees
    lo, hi, recipe = node_rows
    ab = normalize(a, row_deg, col_deg)
    tb = None if t is None else normalize(t, row_deg, col_deg, True)
    pieces = rank_pieces(ab, tb, node_block(lo, hi, *recipe), lay)
    del ab, tb
    # the spilled patterns' pages this task read: their mapping lives on with the block's future
    release_pages(a.indptr, a.indices, *(() if t is None else (t.indptr, t.indices)))
    root, b = where
    return rankwrite.write_pieces(root, b, pieces, lay, slots=slots, halos=halos, t_halos=t_halos)


@dataclass
class RankRows:
    """All rows of rank r (new ids lo..hi-1) and the new ids it receives."""

    r: int
    lo: int
    hi: int
    a: Rows
    t: Rows | None
    nodes: NodeBlock
    node_index: np.ndarray
    halo: np.ndarray  # (R,) int64 sorted new ids received for Â
    t_halo: np.ndarray | None


@sizeof.register(RankRows)
def _sizeof_rows(x: RankRows) -> int:
    rows = [x.a] + ([x.t] if x.t is not None else [])
    return int(sum(r.indptr.nbytes + r.cols.nbytes + r.data.nbytes for r in rows) + sizeof(x.nodes)
               + x.node_index.nbytes + x.halo.nbytes)


def _join(rows: list[Rows]) -> Rows:
    counts = np.concatenate([np.diff(r.indptr) for r in rows]) if rows else np.zeros(0, np.int64)
    indptr = np.zeros(counts.size + 1, np.int64)
    np.cumsum(counts, out=indptr[1:])
    return Rows(indptr, np.concatenate([r.cols for r in rows]), np.concatenate([r.data for r in rows]))


def _halo(rows: Rows, lo: int, hi: int) -> np.ndarray:
    return sorted_unique(rows.cols[(rows.cols < lo) | (rows.cols >= hi)])


def rank_rows(r: int, lo: int, hi: int, *pieces: RankPiece) -> RankRows:
    """The ``layout-rank`` task: rank r's pieces from every block, in block
    order (which is new-id order), and the rows it must receive."""
    a = _join([p.a for p in pieces])
    t = _join([p.t for p in pieces if p.t is not None]) if pieces and pieces[0].t is not None else None
    nb = [p.nodes for p in pieces]
    nodes = NodeBlock(lo, hi, np.concatenate([x.features for x in nb]), np.concatenate([x.labels for x in nb]),
                      np.concatenate([x.train for x in nb]), np.concatenate([x.val for x in nb]),
                      np.concatenate([x.test for x in nb]))
    return RankRows(r, lo, hi, a, t, nodes, np.concatenate([p.node_index for p in pieces]), _halo(a, lo, hi),
                    None if t is None else _halo(t, lo, hi))


def halo_of(x: RankRows, transpose: bool = False) -> np.ndarray:
    h = x.t_halo if transpose else x.halo
    return h if h is not None else np.zeros(0, np.int64)


def send_lists(offsets: np.ndarray, *halos: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """The ``layout-plans`` task: for every rank r, (send_ptr (P+1,),
    send_rows) with ``send_rows[send_ptr[q]:send_ptr[q+1]]`` the local rows
    r sends to q: the part of q's halo inside r's range, in q's order."""
    parts = offsets.size - 1
    cut = np.stack([np.searchsorted(h, offsets) for h in halos])  # (q, r+1): where each owner's ids start in q's halo
    out = []
    for r in range(parts):  # a loop over ranks
        chunks = [halos[q][cut[q, r]:cut[q, r + 1]] - offsets[r] for q in range(parts)]
        ptr = np.zeros(parts + 1, np.int64)
        np.cumsum([c.size for c in chunks], out=ptr[1:])
        out.append((ptr, np.concatenate(chunks).astype(np.int32)))
    return out


def nth(items: list, i: int):
    return items[i]


def local_plan(lo: int, hi: int, rows: Rows, halo: np.ndarray, sends: tuple[np.ndarray, np.ndarray],
               offsets: np.ndarray) -> Plan:
    """A rank's local CSR (own columns, then halo columns grouped by sender)
    and its send / receive plan."""
    m = local_rows(rows, lo, hi, halo)
    return Plan(indptr=m.indptr.astype(np.int64), indices=m.indices.astype(np.int32), data=m.data.astype(np.float32),
                **exchange_lists(halo, sends, offsets))


def rank_block(x: RankRows, offsets: np.ndarray, sends: tuple[np.ndarray, np.ndarray],
               t_sends: tuple[np.ndarray, np.ndarray] | None) -> RankBlock:
    """Everything rank r stores: its plan for Â, for Â^T if directed, its node data."""
    nb = x.nodes
    transpose = None
    if x.t is not None and x.t_halo is not None and t_sends is not None:
        transpose = local_plan(x.lo, x.hi, x.t, x.t_halo, t_sends, offsets)
    return RankBlock(rank=x.r, offset=x.lo, plan=local_plan(x.lo, x.hi, x.a, x.halo, sends, offsets),
                     transpose=transpose, features=nb.features, labels=nb.labels, train_mask=nb.train,
                     val_mask=nb.val, test_mask=nb.test, node_index=x.node_index)


def in_memory(a: sp.csr_matrix, part: np.ndarray, parts: int, nodes: NodeData | None = None,
              directed: bool | None = None) -> tuple[Layout, list[RankBlock]]:
    """The layout of Â (one process, one row block): the build's functions
    without Dask (tests, small graphs). ``directed`` (default: Â is not
    symmetric) adds Â^T's plans."""
    n = a.shape[0]
    a = sp.csr_matrix(a)
    a.sort_indices()
    if directed is None:
        directed = (a != a.T).nnz > 0
    if nodes is None:
        z = np.zeros(n, bool)
        nodes = NodeData(np.zeros((n, 0), np.float32), np.full(n, -1, np.int32), z, z, z)
    lay = make_layout(part, parts)

    def block(m: sp.csr_matrix) -> RowBlock:
        m = sp.csr_matrix(m)
        m.sort_indices()
        return RowBlock(0, n, n, m.indptr.astype(np.int64), m.indices.astype(np.int64), m.data.astype(np.float32))

    nb = NodeBlock(0, n, nodes.features, nodes.labels, nodes.train, nodes.val, nodes.test)
    pieces = rank_pieces(block(a), block(a.T) if directed else None, nb, lay)
    rows = [rank_rows(r, int(lay.offsets[r]), int(lay.offsets[r + 1]), pieces[r]) for r in range(parts)]
    sends = send_lists(lay.offsets, *[x.halo for x in rows])
    t_sends = send_lists(lay.offsets, *[halo_of(x, True) for x in rows]) if directed else None
    return lay, [rank_block(x, lay.offsets, sends[x.r], t_sends[x.r] if t_sends else None) for x in rows]


# ------------------------------------------------------------------ the stage

@dataclass(frozen=True)
class Laid:
    """The layout on the workers: the permutation and offsets (also on the
    client), every row block's cut (written into the ranks' arrays:
    :mod:`.rankwrite`), every rank's halo and its send lists (of Â, and of
    Â^T for a directed graph)."""

    layout: Any  # future: Layout
    offsets: np.ndarray
    perm: np.ndarray
    cuts: tuple  # futures: each row block's rows written (int)
    sends: tuple  # futures: (send_ptr, send_rows) per rank
    t_sends: tuple | None
    halos: tuple = ()  # futures: the new ids each rank receives for Â (sorted)
    t_halos: tuple | None = None  # and for Â^T (directed graphs)


def layout_stage(tasks: Tasks, cfg: BuildConfig, ing: Ingested, nrm: Normalized, parts: Partitioned,
                 mon: Monitor, *, root: str) -> Laid:
    """Permutation by the layout model; every rank's arrays made in the
    partial store ``root`` at their final shapes and its halo found from
    the pattern; every block cut by rank and written into them; halos turned
    into send lists; nothing goes through the client (:mod:`.rankwrite`)."""
    lay = tasks.submit("layout", _make_layout, parts.futures[cfg.layout], cfg.parts)
    offsets = tasks.submit("layout", offsets_of, lay).result()
    perm = tasks.submit("layout", perm_of, lay).result()
    degrees = nrm.degrees()
    bounds = ing.bounds.tolist()
    a_blocks, t_blocks = nrm.patterns()
    first = tasks.submit("layout-alloc", node_block, 0, 1, *ing.node_recipe)
    slots = tuple(tasks.submit("layout-alloc", rankwrite.allocate, root, r, lay, degrees, ing.bounds, first,
                               directed=ing.directed) for r in range(cfg.parts))
    halos = tuple(tasks.submit("layout-halo", rankwrite.rank_halo, r, lay, *a_blocks) for r in range(cfg.parts))
    t_halos = tuple(tasks.submit("layout-halo", rankwrite.rank_halo, r, lay, *t_blocks)
                    for r in range(cfg.parts)) if ing.directed else None
    cuts = tuple(tasks.submit("layout-cut", cut_block, (ab, tb if ing.directed else None), degrees,
                              (bounds[b], bounds[b + 1], ing.node_recipe), lay, where=(root, b), slots=slots,
                              halos=halos, t_halos=t_halos)
                 for b, (ab, tb) in enumerate(zip(a_blocks, t_blocks)))
    mon.bar(list(cuts), "layout")
    sends = _sends(tasks, offsets, list(halos))
    t_sends = _sends(tasks, offsets, list(t_halos)) if t_halos is not None else None
    return Laid(lay, offsets, perm, cuts, sends, t_sends, halos, t_halos)


def _make_layout(res, parts: int) -> Layout:
    return make_layout(res.part, parts)


def _sends(tasks: Tasks, offsets: np.ndarray, halos: list) -> tuple:
    lists = tasks.submit("layout-plans", send_lists, offsets, *halos)
    return tuple(tasks.submit("layout-plan", nth, lists, r) for r in range(offsets.size - 1))
