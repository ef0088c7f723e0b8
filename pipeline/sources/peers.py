"""Graphs from the peers' own objects, for the Python API: a PyG ``Data``
(or a PyG dataset: its first graph), a DGL graph, or an OGB node-property
dataset (``NodePropPredDataset``, and OGB's PyG and DGL variants), with
their features, labels and train/val/test split.

Direction: in a PyG or DGL graph an edge ``u -> v`` carries a message from u
to v, so it becomes the entry A[v, u] (row v aggregates over u), the inverse
of what :func:`shgcn.store.to_pyg` and ``to_dgl`` export: building from their
graphs gives back the store they came from. OGB's raw ``edge_index``
(``NodePropPredDataset``) holds ``edge.csv.gz``'s lines and is read like the
directory, A[u, v] per line. Nothing here imports torch,
PyG, DGL or OGB: objects are recognised by their class's module and read
through their public attributes, so the libraries are needed only by whoever
made the object."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..errors import UserError

_FEATURES = ("feat", "features", "x")
_LABELS = ("label", "labels", "y")
_MASKS = (("train_mask", "train"), ("val_mask", "val"), ("test_mask", "test"))


@dataclass
class PeerGraph:
    """What a peer object holds: the adjacency (n, n) with its isolated
    vertices, node data in vertex order, and whether every edge has its reverse."""

    matrix: sp.coo_matrix
    features: np.ndarray | None
    labels: np.ndarray | None
    masks: dict[str, np.ndarray] | None
    directed: bool
    kind: str  # what it was, for messages


def _numpy(t: Any) -> np.ndarray | None:
    if t is None:
        return None
    if hasattr(t, "detach"):  # a torch tensor
        t = t.detach().cpu().numpy()
    return np.asarray(t)


def _array(t: Any) -> np.ndarray:
    """A required array (edge lists, sizes)."""
    a = _numpy(t)
    if a is None:
        raise UserError("the graph has no edges (edge_index is None)")
    return a


def _library(obj: Any) -> str:
    return type(obj).__module__.split(".")[0]


def is_peer(obj: Any) -> bool:
    return _library(obj) in ("torch_geometric", "dgl", "ogb")


def _graph(rows: np.ndarray, cols: np.ndarray, n: int, kind: str) -> tuple[sp.coo_matrix, bool]:
    """The adjacency with an entry (rows[k], cols[k]) per edge, and whether it
    is not symmetric: the API's one rule (:func:`.memory.symmetric`; the edges
    carry no values, so their pattern decides)."""
    from .memory import symmetric

    rows, cols = np.asarray(rows, np.int64).ravel(), np.asarray(cols, np.int64).ravel()
    if rows.size and (min(rows.min(), cols.min()) < 0 or max(rows.max(), cols.max()) >= n):
        raise UserError(f"{kind}: an edge names a vertex outside 0..{n - 1}")
    m = sp.coo_matrix((np.ones(rows.size, np.int8), (rows, cols)), shape=(n, n))
    return m, not symmetric(rows, cols, n)[0]


def _masks_of(get) -> dict[str, np.ndarray] | None:
    found = {name: _numpy(get(key)) for key, name in _MASKS}
    if all(v is None for v in found.values()):
        return None
    if any(v is None for v in found.values()):
        raise UserError("the graph has some of train_mask, val_mask, test_mask but not all three")
    return {k: np.asarray(v, bool).ravel() for k, v in found.items()}


def _first(get, keys: tuple[str, ...]) -> np.ndarray | None:
    for k in keys:
        v = _numpy(get(k))
        if v is not None:
            return v
    return None


def from_pyg(data: Any) -> PeerGraph:
    """A ``torch_geometric.data.Data`` (a dataset: its first graph)."""
    if not hasattr(data, "edge_index") and hasattr(data, "__getitem__"):
        data = data[0]
    n = int(data.num_nodes)
    ei = _array(data.edge_index)
    m, directed = _graph(ei[1], ei[0], n, "PyG Data")  # messages flow source -> target: row target
    get = (lambda k: getattr(data, k, None))
    return PeerGraph(m, _numpy(data.x), _numpy(getattr(data, "y", None)), _masks_of(get), directed, "PyG Data")


def from_dgl(g: Any) -> PeerGraph:
    """A ``dgl.DGLGraph`` (homogeneous): ``ndata`` feat, label and the three masks."""
    u, v = g.edges()
    m, directed = _graph(_array(v), _array(u), int(g.num_nodes()), "DGL graph")  # messages u -> v: row v
    nd = g.ndata
    get = (lambda k: nd[k] if k in nd else None)
    return PeerGraph(m, _first(get, _FEATURES), _first(get, _LABELS), _masks_of(get), directed, "DGL graph")


def from_ogb(ds: Any) -> PeerGraph:
    """An OGB node-property dataset: the graph, its labels and the split of
    ``get_idx_split()`` (train, valid, test)."""
    item = ds[0]
    split = {k: _numpy(v) for k, v in ds.get_idx_split().items()}
    if isinstance(item, tuple):  # NodePropPredDataset: (graph dict, labels); DglNodePropPredDataset: (DGLGraph, labels)
        graph, labels = item
        if isinstance(graph, dict):
            n = int(graph["num_nodes"])
            # OGB's raw edge_index is edge.csv.gz's lines: read as the directory (and any edge list) is read
            m, directed = _graph(graph["edge_index"][0], graph["edge_index"][1], n, "OGB dataset")
            peer = PeerGraph(m, _numpy(graph.get("node_feat")), None, None, directed, "OGB dataset")
        else:
            peer = from_dgl(graph)
        peer.labels = _numpy(labels)
    else:  # PygNodePropPredDataset
        peer = from_pyg(item)
    n = peer.matrix.shape[0]
    masks = {}
    for key, name in (("train", "train"), ("valid", "val"), ("test", "test")):
        masks[name] = np.zeros(n, bool)
        masks[name][np.asarray(split[key], np.int64)] = True
    peer.masks, peer.kind = masks, f"OGB dataset {getattr(ds, 'name', '')}".strip()
    return peer


def from_peer(obj: Any) -> PeerGraph:
    """The graph of a PyG, DGL or OGB object (see the module docstring)."""
    lib = _library(obj)
    if lib == "ogb" or hasattr(obj, "get_idx_split"):
        return from_ogb(obj)
    if lib == "dgl":
        return from_dgl(obj)
    return from_pyg(obj)


def labels_of(y: np.ndarray | None) -> tuple[np.ndarray | None, str]:
    """Labels as the build takes them: (n,) int32 class ids (NaN or negative:
    -1, unlabelled), or (n, C) bool for several 0/1 columns (multi-label)."""
    if y is None:
        return None, "single"
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim == 2:
        v = np.nan_to_num(y.astype(np.float64), nan=0.0)
        if ((v != 0) & (v != 1)).any():
            raise UserError(f"labels: an (n, {y.shape[1]}) array must hold 0/1 multi-label targets")
        return v.astype(bool), "multi"
    if y.ndim != 1 or y.dtype.kind not in "iufb":
        raise UserError(f"labels: expected (n,) class ids or (n, C) 0/1 targets, got shape {y.shape} of {y.dtype}")
    from .nodefiles import class_ids

    return class_ids(y, "labels"), "single"
