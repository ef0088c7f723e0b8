"""A store's partition in DistDGL's partition layout.

``pipeline export STORE --format distdgl OUT/`` writes the layout that
``dgl.distributed.partition_graph`` writes and ``dgl.distributed.load_partition``
reads, so that a DistDGL job trains on our partition::

    OUT/
      NAME.json             partition config: graph_name, num_nodes, num_edges, num_parts, halo_hops = 1,
                            part_method (the model), node_map {"_N": [[start, end) per part]},
                            edge_map {"_N:_E:_N": [[start, end) per part]}, ntypes, etypes,
                            "part-i": {node_feats, edge_feats, part_graph} (paths relative to OUT)
      part{i}/graph.dgl     part i's graph, as DGL's 1-hop halo partition builds it: its inner nodes,
                            then its halo (in- and out-neighbours owned by other parts, by new id);
                            edges: in-edges of the inner nodes (inner_edge = 1), then out-edges
                            from inner to halo nodes (inner_edge = 0); ndata _ID (new node id),
                            inner_node (uint8), part_id; edata _ID (new edge id), inner_edge (uint8)
      part{i}/node_feats.dgl  "_N/feat", "_N/label", "_N/train_mask", "_N/val_mask", "_N/test_mask"
                            of the inner nodes, in new-id order
      part{i}/edge_feats.dgl  empty (the graph has no edge data)
      part{i}/orig_nids.dgl {"_N": original vertex index of each inner node}  (as dispatch_data's
      part{i}/orig_eids.dgl {"_N:_E:_N": original edge id of each inner edge}  --save-orig-*)

Ids, as DistDGL numbers them: nodes are renumbered so that part i owns the
contiguous range ``node_map[i]``; for the store's layout model this is the
store's own permutation (DistDGL part i = our rank i, in the same order), for
another model the vertices of each part in original order. Edges follow the
trainer's message flow (see :mod:`shgcn.store.interop`: an entry ``A[i, j]``
of the input graph is the edge ``j -> i``; an undirected graph has both
directions), without self loops; edge ids are renumbered so that part i owns
the contiguous range ``edge_map[i]``: the edges whose destination it owns,
sorted by (destination, source). An original edge id is the edge's position
in the whole-graph export (``shgcn.store.graph_arrays(store)``, CSR order of
``store.graph()``).

The ``.dgl`` files are DGL's own binary format, so this export needs DGL (the
``dgl`` extra); without it the command refuses with one line and writes
nothing, rather than leave a layout that ``load_partition`` cannot load.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from shgcn.store import Store
from shgcn.store.interop import require

from ..errors import UserError
from .assignment import check_out

log = logging.getLogger(__name__)

NTYPE = "_N"
ETYPE = "_N:_E:_N"  # DGL's default canonical edge type, as the config writes it


# --------------------------------------------------------------- distdgl

@dataclass
class DistDGLLayout:
    """DistDGL's numbering of a partitioned graph (n nodes, E edges, P parts).

    Attributes
    ----------
    node_ranges, edge_ranges : (P, 2) int64
        Part i owns new node ids ``node_ranges[i, 0]:node_ranges[i, 1]`` and
        new edge ids ``edge_ranges[i, 0]:edge_ranges[i, 1]``.
    orig_nids : (n,) int64
        Original vertex index of each new node id.
    orig_eids : (E,) int64
        Original edge id of each new edge id.
    src, dst : (E,) int64
        Endpoints (new node ids) of each new edge id, sorted by (dst, src).
    node_part : (n,) int64
        Part of each new node id.
    """

    node_ranges: np.ndarray
    edge_ranges: np.ndarray
    orig_nids: np.ndarray
    orig_eids: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    node_part: np.ndarray

    @property
    def parts(self) -> int:
        return int(self.node_ranges.shape[0])

    @property
    def num_nodes(self) -> int:
        return int(self.orig_nids.shape[0])

    @property
    def num_edges(self) -> int:
        return int(self.orig_eids.shape[0])


@dataclass
class DistDGLPart:
    """Part i's graph as ``graph.dgl`` holds it (N local nodes, M local edges).

    Attributes
    ----------
    node_ids : (N,) int64
        New (global) id of each local node: the inner nodes, then the halo.
    n_inner : int
    part_id : (N,) int64
    src, dst : (M,) int64
        Local endpoints: the inner edges first, then inner -> halo edges.
    edge_ids : (M,) int64
        New (global) id of each local edge.
    n_inner_edges : int
    """

    node_ids: np.ndarray
    n_inner: int
    part_id: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    edge_ids: np.ndarray
    n_inner_edges: int

    @property
    def inner_node(self) -> np.ndarray:
        return np.arange(self.node_ids.shape[0]) < self.n_inner

    @property
    def inner_edge(self) -> np.ndarray:
        return np.arange(self.edge_ids.shape[0]) < self.n_inner_edges


def _ranges(starts: np.ndarray) -> np.ndarray:
    """(P, 2) [start, end) pairs from (P+1,) boundaries."""
    return np.stack([starts[:-1], starts[1:]], axis=1).astype(np.int64)


def distdgl_layout(indptr: np.ndarray, indices: np.ndarray, part: np.ndarray, parts: int,
                   order: np.ndarray | None = None) -> DistDGLLayout:
    """Number nodes and edges as DistDGL does for a given partition.

    Parameters
    ----------
    indptr : (n+1,) int, indices : (E,) int
        CSR pattern of the input graph, original order; entry k, in row i
        and column j, is original edge k, ``j -> i``.
    part : (n,) int
        Part of every original vertex.
    parts : int
        P (parts may be empty).
    order : (n,) int64 or None
        Original vertex of each new id; must list the parts in order, each
        contiguously (default: each part's vertices in original order).
    """
    part = np.asarray(part, dtype=np.int64)
    n = part.shape[0]
    orig_nids = np.argsort(part, kind="stable") if order is None else np.asarray(order, dtype=np.int64)
    node_part = part[orig_nids]
    if np.any(np.diff(node_part) < 0):
        raise ValueError("order does not group the parts contiguously in part order")
    new_of_orig = np.empty(n, np.int64)
    new_of_orig[orig_nids] = np.arange(n)
    starts = np.concatenate([[0], np.cumsum(np.bincount(part, minlength=parts))])
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    dst_new, src_new = new_of_orig[rows], new_of_orig[np.asarray(indices, dtype=np.int64)]
    orig_eids = np.lexsort((src_new, dst_new))
    dst, src = dst_new[orig_eids], src_new[orig_eids]
    edge_starts = np.searchsorted(dst, starts)  # parts own contiguous destination ranges
    return DistDGLLayout(node_ranges=_ranges(starts), edge_ranges=_ranges(edge_starts), orig_nids=orig_nids,
                         orig_eids=orig_eids.astype(np.int64), src=src, dst=dst, node_part=node_part)


def distdgl_part(lay: DistDGLLayout, i: int, by_src: np.ndarray | None = None) -> DistDGLPart:
    """Part ``i``'s local graph (see :class:`DistDGLPart`).

    ``by_src`` is ``np.argsort(lay.src, kind="stable")``, computed once for
    all parts (computed here when not given).
    """
    n0, n1 = (int(v) for v in lay.node_ranges[i])
    e0, e1 = (int(v) for v in lay.edge_ranges[i])
    src_in = lay.src[e0:e1]
    # edges from inner nodes to nodes of other parts (their destinations' parts own them)
    if by_src is None:
        by_src = np.argsort(lay.src, kind="stable")
    lo, hi = np.searchsorted(lay.src, [n0, n1], sorter=by_src)
    cand = np.sort(by_src[lo:hi])
    d = lay.dst[cand]
    out_e = cand[(d < n0) | (d >= n1)]
    # the halo: in- and out-neighbours of the inner nodes owned by other parts, by new id
    halo = np.unique(np.concatenate([src_in[(src_in < n0) | (src_in >= n1)], lay.dst[out_e]]))
    node_ids = np.concatenate([np.arange(n0, n1, dtype=np.int64), halo])
    n_inner = n1 - n0

    def local(v: np.ndarray) -> np.ndarray:
        inner = (v >= n0) & (v < n1)
        return np.where(inner, v - n0, n_inner + np.searchsorted(halo, v))

    edge_ids = np.concatenate([np.arange(e0, e1, dtype=np.int64), out_e.astype(np.int64)])
    return DistDGLPart(node_ids=node_ids, n_inner=n_inner, part_id=lay.node_part[node_ids],
                       src=local(lay.src[edge_ids]), dst=local(lay.dst[edge_ids]), edge_ids=edge_ids,
                       n_inner_edges=e1 - e0)


def part_files(i: int) -> dict[str, str]:
    """Paths of part i's files, relative to the output directory."""
    return {"node_feats": f"part{i}/node_feats.dgl", "edge_feats": f"part{i}/edge_feats.dgl",
            "part_graph": f"part{i}/graph.dgl"}


def partition_config(lay: DistDGLLayout, graph_name: str, part_method: str,
                     extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """DistDGL's partition config (the ``NAME.json`` of ``partition_graph``)."""
    cfg: dict[str, Any] = {
        "graph_name": graph_name, "num_nodes": lay.num_nodes, "num_edges": lay.num_edges,
        "part_method": part_method, "num_parts": lay.parts, "halo_hops": 1,
        "node_map": {NTYPE: lay.node_ranges.tolist()}, "edge_map": {ETYPE: lay.edge_ranges.tolist()},
        "ntypes": {NTYPE: 0}, "etypes": {ETYPE: 0},
    }
    cfg.update({f"part-{i}": part_files(i) for i in range(lay.parts)})
    if extra:
        cfg.update(extra)
    return cfg


class PartWriter(Protocol):
    """Writes one tensor dict or one part graph (DGL's binary files)."""

    def tensors(self, path: Path, tensors: dict[str, np.ndarray]) -> None: ...

    def graph(self, path: Path, g: DistDGLPart) -> None: ...


class DGLWriter:
    """:class:`PartWriter` with DGL's ``save_tensors`` and ``save_graphs``."""

    def __init__(self) -> None:
        self.torch = require("torch", "dgl", "pipeline export --format distdgl")
        self.dgl = require("dgl", "dgl", "pipeline export --format distdgl")

    def _t(self, a: np.ndarray):
        return self.torch.from_numpy(np.ascontiguousarray(a))

    def tensors(self, path: Path, tensors: dict[str, np.ndarray]) -> None:
        from dgl.data.utils import save_tensors

        save_tensors(str(path), {k: self._t(v) for k, v in tensors.items()})

    def graph(self, path: Path, g: DistDGLPart) -> None:
        dgl, torch = self.dgl, self.torch
        pg = dgl.graph((self._t(g.src), self._t(g.dst)), num_nodes=g.node_ids.shape[0], idtype=torch.int64)
        pg.ndata[dgl.NID] = self._t(g.node_ids)
        pg.ndata["inner_node"] = self._t(g.inner_node.astype(np.uint8))
        pg.ndata["part_id"] = self._t(g.part_id)
        pg.edata[dgl.EID] = self._t(g.edge_ids)
        pg.edata["inner_edge"] = self._t(g.inner_edge.astype(np.uint8))
        dgl.save_graphs(str(path), [pg])


@dataclass
class NodeData:
    """Node data in original order: features (n, D) float32, labels (n,)
    int64 (or (n, C) float32 0/1, multi-label, as DGL's multi-label datasets hold them), masks (n,) bool."""

    features: np.ndarray
    labels: np.ndarray
    train_mask: np.ndarray
    val_mask: np.ndarray
    test_mask: np.ndarray

    def rows(self, ids: np.ndarray) -> dict[str, np.ndarray]:
        """DistDGL's node feature dict of these original vertices."""
        return {f"{NTYPE}/feat": self.features[ids], f"{NTYPE}/label": self.labels[ids],
                **{f"{NTYPE}/{k}": getattr(self, k)[ids] for k in ("train_mask", "val_mask", "test_mask")}}


def write_distdgl(out: Path, lay: DistDGLLayout, nodes: NodeData, writer: PartWriter, *, graph_name: str,
                  part_method: str, extra: dict[str, Any] | None = None) -> Path:
    """Write the layout into the (new, empty) directory ``out``; return the config's path (``graph_name``,
    ``part_method`` and ``extra``: the config's)."""
    by_src = np.argsort(lay.src, kind="stable")
    for i in range(lay.parts):  # one pass per part
        d = out / f"part{i}"
        d.mkdir()
        n0, n1 = lay.node_ranges[i]
        e0, e1 = lay.edge_ranges[i]
        writer.graph(out / part_files(i)["part_graph"], distdgl_part(lay, i, by_src))
        writer.tensors(out / part_files(i)["node_feats"], nodes.rows(lay.orig_nids[n0:n1]))
        writer.tensors(out / part_files(i)["edge_feats"], {})
        writer.tensors(d / "orig_nids.dgl", {NTYPE: lay.orig_nids[n0:n1]})
        writer.tensors(d / "orig_eids.dgl", {ETYPE: lay.orig_eids[e0:e1]})
    config = out / f"{graph_name}.json"
    config.write_text(json.dumps(partition_config(lay, graph_name, part_method, extra), indent=2) + "\n")
    return config


def graph_name_of(s: Store) -> str:
    """A default graph name: the store directory's name without ``.zarr``,
    reduced to letters, digits, ``_``, ``-`` and ``.``."""
    stem = s.path.name.removesuffix(".zarr") or "graph"
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", stem)


def store_layout(s: Store, model: str) -> tuple[DistDGLLayout, NodeData]:
    """The DistDGL numbering of ``model``'s partition of the store, and its node data."""
    g = s.graph()
    part = s.partition(model)
    order = s.permutation() if model == s.attrs["model"] else None
    lay = distdgl_layout(g.indptr, g.indices, part, s.parts, order)
    ds = s.nodes()
    nodes = NodeData(features=np.ascontiguousarray(ds["features"].values, dtype=np.float32),
                     labels=ds["labels"].values.astype(np.float32 if ds["labels"].ndim == 2 else np.int64),
                     **{k: ds[k].values.astype(bool) for k in ("train_mask", "val_mask", "test_mask")})
    return lay, nodes


def export_distdgl(s: Store, out: str | Path, model: str | None = None, graph_name: str | None = None,
                   overwrite: bool = False, writer: PartWriter | None = None) -> Path:
    """Write ``model``'s partition of the store (default: its layout model) in
    DistDGL's layout into the directory ``out``; return the config's path.

    The directory is written as a hidden sibling and renamed into place, so
    an interrupted export leaves no layout that looks complete.
    """
    model = model or s.attrs["model"]
    name = graph_name or graph_name_of(s)
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
        raise UserError(f"--graph-name {name!r}: use letters, digits, '_', '-' and '.' only")
    out = Path(out)
    s.partition(model)  # an unknown model fails here, before any work
    check_out(out, overwrite, directory=True)
    writer = writer if writer is not None else DGLWriter()
    lay, nodes = store_layout(s, model)
    tmp = out.with_name(f".{out.name}.partial-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        extra = {"shgcn": {"store": str(s.path.resolve()), "model": model, "layout_model": s.attrs["model"],
                           "edges": "input pattern without self loops; A[i, j] is the edge j -> i",
                           "orig_ids": "orig_nids: original vertex index; orig_eids: CSR position in store.graph()"}}
        config = write_distdgl(tmp, lay, nodes, writer, graph_name=name, part_method=model, extra=extra)
        if out.exists():
            shutil.rmtree(out)
        os.replace(tmp, out)
    except OSError as e:  # a write() names no file, or one inside the hidden sibling: the user's is ``out``
        if e.filename is None or str(e.filename).startswith(str(tmp)):
            raise OSError(e.errno, e.strerror or str(e), str(out)) from None
        raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    log.info("DistDGL layout of %s (%d parts, %d nodes, %d edges) in %s", model, lay.parts, lay.num_nodes,
             lay.num_edges, out)
    return out / config.name
