"""The ingest stage: read the source on the workers, relabel its ids, cut the
edges into row blocks (deduplicated, no self loops; A^T's blocks too for a
directed graph), and make the node data of every block.

:func:`to_graph` does the same in memory: the reference the tests compare
the blocks with, and the path for small graphs.
"""

from __future__ import annotations

import itertools
import logging
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from .. import blocks, nodes
from ..config import BuildConfig
from ..errors import UserError, option
from ..nodes import NodePlan
from ..runtime.client import Tasks
from ..runtime.monitor import Monitor
from ..sources import budget, datasets
from ..sources import chunks as chunk_tasks
from ..sources.base import RawSource, ReadOptions
from ..sources.records import Graph, RawGraph
from ..sources.resolve import Source, read_source

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Ingested:
    """The clean graph on the workers: row blocks of A's pattern (and of
    A^T's for a directed graph), node data per block, and what the client
    needs to know (n, bounds, counts)."""

    name: str
    n: int
    directed: bool
    bounds: np.ndarray
    a: tuple  # futures: RowBlock patterns of A, no self loops
    at: tuple  # futures: the same rows of A^T (the same futures when undirected)
    file_ids: Any  # future: (n,) int64 label of each vertex in the input
    node_recipe: tuple  # (spec, plan, source future or None, split codes future or None): see below
    node_plan: NodePlan
    feature_norm: str
    stats: dict
    notes: tuple[str, ...] = ()
    # The node data is made by the tasks that use it, from node_recipe (nodes.node_block(lo, hi, *node_recipe)):
    # ingest checks it (and keeps none), the layout's cut makes its block's, the write each chunk of the store's
    # rows. Its rows depend on (seed, vertex) only, not on how they are cut: the same values every time, and the
    # node data never waits in memory (beside the partitioner's child, or beside the layout's pieces).


def ingest_stage(tasks: Tasks, cfg: BuildConfig, mon: Monitor, node_source: Any = None,
                 work_dir: str | None = None, trains: bool = True) -> Ingested:
    """Read, relabel, cut into row blocks (deduplicated, no self loops), and
    make the node data of every block. ``work_dir``: scratch space for
    readers that convert node data into row-addressable files (removed with
    the build's partial store). ``trains``: a store is built, so a training
    set without a labelled vertex is refused (``export graph`` writes the
    graph alone)."""
    src = read_source(tasks, cfg.source, cfg.fmt, cfg.data_dir, cfg.feature_norm,
                      ReadOptions(chunk_bytes=cfg.chunk_bytes, max_line=cfg.max_line, header=cfg.header,
                                  split_scheme=cfg.split_scheme, work_dir=work_dir, feature_dtype=cfg.feature_dtype,
                                  memory_limit=cfg.limit, guard=not cfg.planned))
    raw = src.raw
    directed = cfg.directed if cfg.directed is not None else (
        raw.directed if raw.directed is not None else (src.directed_default if src.directed_default is not None
                                                       else True))
    _say_direction(cfg, src, raw, directed)
    chunks, n, file_ids, ids = _relabel(tasks, raw, mon)
    raw.chunks = []  # chunks holds them now, and lets each go once it is cut
    if cfg.parts > n:
        raise UserError(f"{option('--parts', cfg.parts)}: more parts than the {n:,} vertices of {src.name}")
    _fits(cfg, src.name, n, raw.lines)
    edges = raw.lines * (1 if directed else 2)
    bounds = blocks.block_bounds(n, max(1, -(-edges // cfg.block_nnz)))
    a, loops = _shuffle(tasks, chunks, bounds, directed, mon=mon, ids=ids)  # empties chunks: each goes once cut
    at = _transpose(tasks, a, bounds, mon) if directed else a
    nnz = sum(tasks.gather([tasks.submit("ingest-count", _nnz, b) for b in a]))
    kept = nnz if directed else nnz // 2
    stats = {"lines": int(raw.lines), "self_loops": int(loops), "nodes": int(n), "edges": int(kept),
             "duplicates": int(raw.lines - loops - kept) if directed else None, "row_blocks": int(bounds.size - 1)}
    if directed and src.kind == "file" and cfg.directed is None:
        recip = sum(tasks.gather([tasks.submit("ingest-reciprocal", _reciprocal, x, y) for x, y in zip(a, at)]))
        if recip == 0 and kept:
            log.warning("%s: read as directed, and no edge has its reverse: if the file lists each undirected "
                        "edge once, pass %s", src.name, option("--undirected"))
    log.info("%s: %d nodes, %d %s edges (%d self loops removed)", src.name, n, kept,
             "directed" if directed else "undirected", loops)
    notes = tuple(raw.notes) + _published(src, n, kept, directed)
    nodes_source = node_source if node_source is not None else raw.nodes
    spec = nodes.NodeSpec(cfg.features, cfg.labels, cfg.split, cfg.seed, src.feature_norm, cfg.feature_dtype)
    node_plan, recipe = _node_blocks(tasks, spec, bounds, src, nodes_source, mon, trains=trains)
    return Ingested(src.name, n, directed, bounds, tuple(a), tuple(at), file_ids, recipe, node_plan,
                    src.feature_norm, stats, notes)


def _published(src: Source, n: int, edges: int, directed: bool) -> tuple[str, ...]:
    """A registered dataset whose graph differs from its published counts: a warning, kept in the store's notes."""
    differs = datasets.count_mismatch(src.dataset, n, edges, directed) if src.dataset is not None else None
    if differs is None:
        return ()
    log.warning("%s", differs)
    return (differs,)


def _fits(cfg: BuildConfig, name: str, n: int, lines: int) -> None:
    """The graph and its generated features within the memory budget, before
    the edges are shuffled and any feature is drawn."""
    spec = nodes.NodeSpec(cfg.features, cfg.labels, cfg.split, cfg.seed)
    nodes.check_generated(spec, n, cfg.guard_limit)
    budget.check(cfg.guard_limit, budget.graph_bytes(n, lines), f"{name}: {n:,} vertices and {lines:,} edges")


def _say_direction(cfg: BuildConfig, src: Source, raw: RawSource, directed: bool) -> None:
    how = "directed" if directed else "undirected"
    if cfg.directed is not None:
        why = "as asked"
    elif raw.direction is not None:  # an in-memory graph: the API's rule of symmetry (sources/memory.py)
        why = raw.direction
    elif raw.directed is not None:
        why = "as the file declares"
    elif src.directed_default is not None:
        why = f"as the dataset {src.name} is"
    else:
        why = "the default for edge lists"
    other = option("--undirected" if directed else "--directed")
    log.info("reading %s as %s (%s; %s changes it)", src.name, how, why, other)


def _relabel(tasks: Tasks, raw: RawSource, mon: Monitor) -> tuple[list, int, Any, Any]:
    """File labels -> 0..n-1 when the file declares no size (the labels that
    occur, in increasing order); returns (chunks, n, file ids future, the
    ids to relabel the chunks with: the same future, or None to keep them).
    The chunks are relabelled by the tasks that cut them (:func:`_shuffle`):
    a relabelled copy is never held beside the file's."""
    if raw.n is not None:
        return raw.chunks, raw.n, tasks.submit("ingest-ids", _arange, raw.n, raw.base), None
    if any(m.edges and m.first is not None and min(m.first) < 0 for m in raw.metas):
        raise UserError(f"{raw.name}: negative vertex id")
    node_ids = tasks.submit("ingest-ids", _wide, _union_tree(tasks, raw.chunks, mon))  # the store's file ids: int64
    n = int(tasks.submit("ingest-ids", len, node_ids).result())
    return raw.chunks, n, node_ids, node_ids


def _union_tree(tasks: Tasks, chunks: list, mon: Monitor, fan: int = 8):
    """The sorted distinct labels of all ``chunks``: a tree of unions,
    ``fan`` at a time, submitted depth first. Futures run in the order they
    are submitted, so each union runs as soon as its inputs are made and at
    most ``fan`` sets a level wait, not every chunk's (the chunks' sets were
    all made before the first union: 1,024 of them at R-MAT 26). Every
    chunk's task is counted by the stage's bar (:meth:`Monitor.watch`: not
    held)."""
    levels: list[list] = []
    leaves = 0
    for c in chunks:
        f = tasks.submit("ingest-ids", chunk_tasks.chunk_ids, c)
        mon.watch([f])
        leaves += 1
        for level in itertools.count():
            if level == len(levels):
                levels.append([])
            levels[level].append(f)
            if len(levels[level]) < fan:
                break
            f = tasks.submit("ingest-ids", chunk_tasks.union, *levels[level])
            levels[level] = []
    carry: list = []
    for waiting in levels:  # what is left at each level, bottom up, into one
        rest = waiting + carry
        carry = [tasks.submit("ingest-ids", chunk_tasks.union, *rest)] if len(rest) > 1 else rest
    root = carry[0] if carry else tasks.submit("ingest-ids", chunk_tasks.union)
    mon.bar([root], f"ingest: vertex ids of {leaves:,} chunks")
    return root


def _wide(ids: np.ndarray) -> np.ndarray:
    return ids.astype(np.int64, copy=False)


def _arange(n: int, base: int) -> np.ndarray:
    return np.arange(n, dtype=np.int64) + base


def _shuffle(tasks: Tasks, chunks: list, bounds: np.ndarray, directed: bool, mon: Monitor,
             ids: Any = None) -> tuple[list, int]:
    """Every chunk's edges to the row block that owns them (worker to worker):
    the blocks of A, deduplicated, without self loops; each chunk relabelled
    by ``ids`` first (a future of the sorted file labels, or None), in the
    task that cuts it.

    An undirected graph's edges are cut once each, as (smaller id, larger
    id): the strict upper triangle U, assembled and deduplicated, then A's
    blocks of U's and U^T's pieces (:func:`blocks.symmetric`). Its pieces
    are then 8 bytes an edge of the input, not 16 (both directions), and
    U^T's pieces hold U's deduplicated entries, not the input's repeats.

    ``chunks`` (futures) is emptied: the client holds no chunk, so each goes
    as soon as it is cut, and no split either, so each piece goes as soon as
    its block is made. Held, they were the ingest's peak, all at once at the
    last block: the chunks, every piece and the blocks."""
    split = [tasks.submit("ingest-csr-split", _split, c, ids, bounds, not directed) for c in chunks]
    chunks.clear()
    loops = [tasks.submit("ingest-csr-loops", blocks.pieces_loops, s) for s in split]
    out = _assemble(tasks, "ingest-csr" if directed else "ingest-csr-upper", split, bounds)
    if not directed:  # each edge once, as (smaller id, larger id): A is U + U^T
        t = [tasks.submit("ingest-csr-lower-split", blocks.transpose_pieces, u, bounds) for u in out]
        out = _assemble(tasks, "ingest-csr", t, bounds, own=out)
    mon.bar(out, "ingest: row blocks")
    return out, int(sum(tasks.gather(loops)))


def _split(chunk, ids: np.ndarray | None, bounds: np.ndarray, upper: bool) -> blocks.EdgePieces:
    """The ``ingest-csr-split`` task: a chunk relabelled (with ``ids``) and cut by row block."""
    c = chunk if ids is None else chunk_tasks.relabel(chunk, ids)
    return blocks.split_edges(c, bounds, False, upper=upper)


def _transpose(tasks: Tasks, a: list, bounds: np.ndarray, mon: Monitor) -> list:
    """A^T's row blocks from A's (:func:`blocks.transpose_pieces`): the same
    blocks as from the input's chunks, which are gone by then."""
    split = [tasks.submit("ingest-csr-t-split", blocks.transpose_pieces, b, bounds) for b in a]
    out = _assemble(tasks, "ingest-csr-t", split, bounds)
    mon.bar(out, "ingest: row blocks of A^T")
    return out


def _assemble(tasks: Tasks, name: str, split: list, bounds: np.ndarray, own: list | None = None) -> list:
    """Block b from its piece of every split (a loop over blocks); with
    ``own`` (U's blocks, whose transposes ``split`` holds), A's block b of
    U's block b and those pieces (:func:`blocks.symmetric`). ``split`` and
    ``own`` are emptied once every piece is asked for: a split's pieces are
    then held by their own tasks only, and each goes when its block is made."""
    n = int(bounds[-1])
    out = []
    for b in range(bounds.size - 1):
        pieces = [tasks.submit(f"{name}-piece", blocks.piece, s, b) for s in split]
        lo, hi = int(bounds[b]), int(bounds[b + 1])
        out.append(tasks.submit(name, blocks.assemble, lo, hi, n, *pieces) if own is None
                   else tasks.submit(name, blocks.symmetric, lo, hi, n, own[b], *pieces))
    split.clear()
    if own is not None:
        own.clear()
    return out


def _nnz(b: blocks.RowBlock) -> int:
    return b.nnz


def _reciprocal(ab: blocks.RowBlock, tb: blocks.RowBlock) -> int:
    """Edges of these rows whose reverse exists too (directed graphs)."""
    ka = ab.row_ids() * ab.n + ab.indices
    kt = tb.row_ids() * tb.n + tb.indices
    return int(np.intersect1d(ka, kt, assume_unique=True).size)


def _node_blocks(tasks: Tasks, spec: nodes.NodeSpec, bounds: np.ndarray, src: Source, source,
                 mon: Monitor, *, trains: bool = True) -> tuple[nodes.NodePlan, tuple]:
    """The plan of the node data and its recipe (:meth:`Ingested.nodes`):
    from ``source`` (a future of the graph's :class:`NodeSource`, or None)
    and ``spec``; ``src`` names the graph and carries its reader's notes.
    Every row block's data (``bounds``, the last bound being n) is made and
    checked here, and only the check kept (the blocks are made again when
    the layout asks)."""
    n, name, notes = int(bounds[-1]), src.name, src.raw.notes
    facts = tasks.submit("nodes-facts", nodes.source_facts, source).result() if source is not None \
        else (None, None, False, None, "single")
    npy = tasks.submit("nodes-probe", nodes.npy_shape, spec.features).result() \
        if spec.features.endswith(".npy") else None
    plan = nodes.plan(spec, n, name, facts, npy, notes)
    codes = tasks.submit("nodes-split", nodes.split_codes, n, spec.split, spec.seed) \
        if plan.split_from == "random" else None
    out = [tasks.submit("nodes-check", nodes.block_check, int(lo), int(hi), spec, plan, source, codes)
           for lo, hi in zip(bounds[:-1], bounds[1:])]
    mon.bar(out, "nodes")
    checks = tasks.gather(out)
    for bad, _, _ in checks:
        if bad is not None:
            where = spec.features if plan.features_from == "file" else name
            why = f"NaN, infinity, or beyond {spec.feature_dtype}'s range"
            raise UserError(f"{where}: non-finite feature at vertex {bad[0]}, column {bad[1]} ({why})")
    if trains:  # every reader's split meets here
        roles = tasks.submit("nodes-roles", _roles, source).result() if source is not None else None
        nodes.check_trainable(checks, spec, plan, name, roles)
    return plan, (spec, plan, source, codes)


def _roles(source) -> str | None:
    return source.roles


def relabel_raw(raw: RawGraph) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Map a RawGraph's ids to 0..n-1: ``(src, dst, node_ids)``. With a
    declared size the ids are kept (isolated vertices included); otherwise the
    ids that occur are numbered in increasing order."""
    if raw.n is not None:
        ids = raw.node_ids if raw.node_ids is not None else np.arange(raw.n, dtype=np.int64)
        return raw.src, raw.dst, ids
    both = np.concatenate([raw.src, raw.dst])
    if both.size == 0:
        raise UserError(f"{raw.source}: no edges found (empty file?)")
    if both.min() < 0:
        raise UserError(f"{raw.source}: negative vertex id {both.min()}")
    node_ids, inv = np.unique(both, return_inverse=True)
    return inv[: raw.src.size].astype(np.int64), inv[raw.src.size:].astype(np.int64), node_ids


def to_graph(raw: RawGraph, directed: bool) -> Graph:
    """Relabel, drop self loops and duplicates, symmetrize if undirected, CSR,
    all in memory. The build does the same on row blocks (:mod:`.blocks`);
    this is the reference the tests compare it with, and the path for small
    in-memory inputs."""
    src, dst, node_ids = relabel_raw(raw)
    n = node_ids.size
    if n == 0:
        raise UserError(f"{raw.source}: the graph has no vertices")
    loops = src == dst
    n_loops = int(loops.sum())
    src, dst = src[~loops], dst[~loops]
    if not directed:
        src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
    key = np.unique(src * n + dst)  # sorted by (row, column): CSR order
    rows, cols = np.divmod(key, n)
    idx_dtype = np.int32 if max(n, key.size) < 2**31 else np.int64
    indptr = np.zeros(n + 1, dtype=idx_dtype)
    np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
    adj = sp.csr_matrix((np.ones(key.size, np.float32), cols.astype(idx_dtype), indptr), shape=(n, n))
    adj.has_sorted_indices = True
    kept = key.size if directed else key.size // 2
    stats = {"lines": int(raw.lines), "self_loops": n_loops,
             "duplicates": int(raw.lines - n_loops - kept) if directed else None, "nodes": int(n), "edges": int(kept)}
    return Graph(adj=adj, directed=directed, node_ids=node_ids, source=raw.source,
                 features=raw.features, labels=raw.labels, masks=raw.masks, stats=stats, notes=list(raw.notes))
