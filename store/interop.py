"""The store as a PyTorch Geometric ``Data`` or a DGL graph: the whole graph,
or one rank's block with its halo.

Everything is read through the public reader (:func:`open_store`); torch,
PyG and DGL are optional (extras ``pyg`` and ``dgl``) and imported only when
an exporter is called. Without them, :func:`graph_arrays` gives the same
export as numpy arrays.

Conventions (the same for PyG and DGL)
--------------------------------------
Edges point the way messages flow in the trainer's SpMM ``Â @ H``: a nonzero
``Â[i, j]`` is the edge ``j -> i`` (source ``j``, the vertex whose row is
sent; destination ``i``, the vertex that aggregates). PyG's ``edge_index``
is ``[sources; destinations]`` and PyG and DGL both aggregate at the
destination, so their GCN layers compute the trainer's product. For an
undirected graph (Â symmetric) this is simply the graph's edge list with
both directions of every edge; for a directed graph, whose rows hold
out-neighbours, an input edge ``i -> j`` appears as ``j -> i``.

Edges are sorted by destination, then source (CSR order of Â's rows).

``normalized=False`` (the default): the input graph's pattern, no self
loops and no weights, as PyG's and DGL's datasets are. PyG's ``GCNConv()``
and DGL's ``GraphConv(norm="both")`` after ``dgl.add_self_loop`` then form
D^-1/2 (A+I) D^-1/2 themselves, which is the store's Â for an undirected
graph.

``normalized=True``: Â exactly as the trainer uses it, self loops included,
its values as ``edge_weight`` (PyG) or ``edata["edge_weight"]`` (DGL), float32;
use ``GCNConv(..., normalize=False)`` or ``GraphConv(norm="none")`` with
``edge_weight``. This is the export to use for a directed graph, whose Â
scales rows by out-degree and columns by in-degree (which PyG's own
normalization does not reproduce).

A rank's export
---------------
Nodes are the rank's own rows (in the store's order), then its halo: the
rows it receives, grouped by sender, exactly the block's local column ids,
so local node ``k`` is local column ``k`` of the stored plan. Edges are the
rank's rows of Â, i.e. every edge whose destination the rank owns: one GCN
layer on the export gives the rank's own output rows. Halo rows carry their
features and labels (read from their owners' blocks) but no train/val/test
mask, so summing the per-rank losses counts every vertex once.
Global ids: PyG ``n_id`` and DGL ``ndata[dgl.NID]`` hold each node's
original vertex index (its row in the whole-graph export and in
``store.nodes()``); PyG ``halo`` and DGL ``ndata["inner_node"]`` mark the halo.
"""

from __future__ import annotations

import importlib
import warnings
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from ._reader import Store, open_store
from .errors import UserError

__all__ = ["GraphArrays", "graph_arrays", "require", "to_dgl", "to_pyg"]


@dataclass
class GraphArrays:
    """One export as numpy arrays (N nodes, E edges).

    Attributes
    ----------
    src, dst : (E,) int64
        Edge endpoints as local node ids; messages flow ``src -> dst``.
    weight : (E,) float32 or None
        Â's value of each edge (``normalized=True`` only).
    features : (N, D) float32
    labels : (N,) int64, -1 where unknown; (N, C) float32 0/1 for multi-label targets (as PyG's and
        DGL's multi-label datasets hold them)
    train_mask, val_mask, test_mask : (N,) bool
    node_ids : (N,) int64
        Original vertex index of each node.
    halo : (N,) bool
        True for rows received from other ranks (rank exports only).
    rank : int or None
        The rank exported, None for the whole graph.
    """

    src: np.ndarray
    dst: np.ndarray
    weight: np.ndarray | None
    features: np.ndarray
    labels: np.ndarray
    train_mask: np.ndarray
    val_mask: np.ndarray
    test_mask: np.ndarray
    node_ids: np.ndarray
    halo: np.ndarray
    rank: int | None = None

    @property
    def num_nodes(self) -> int:
        return int(self.node_ids.shape[0])

    @property
    def num_edges(self) -> int:
        return int(self.src.shape[0])


# what an extra needs beyond ``pip install``: DGL's last PyPI wheel (2.1) pins torch and numpy below what the rest
# of shgcn (and a PyG install) uses, so installing it into the working environment would downgrade them
EXTRA_CAVEATS = {"dgl": "in a separate environment (DGL 2.1 loads only beside torch <= 2.2.1 and numpy < 2; "
                        "docs/interop.md): "}


def require(module: str, extra: str, purpose: str) -> ModuleType:
    """Import an optional dependency, or raise a one-line :class:`UserError`
    naming the extra to install (also when the package is installed but
    fails to import, as DGL does beside a torch it was not built for), with
    the extra's caveat (:data:`EXTRA_CAVEATS`: DGL's own environment)."""
    install = f"{EXTRA_CAVEATS.get(extra, '')}pip install 'shgcn[{extra}]'"
    try:
        with warnings.catch_warnings():  # import-time deprecation banners (torchdata's, under DGL) are not ours to show
            warnings.simplefilter("ignore")
            return importlib.import_module(module)
    except ImportError as e:
        missing = (e.name or module).split(".")[0]
        raise UserError(f"{purpose} needs {missing}, which is not installed: {install}") from None
    except Exception as e:  # an installed package that cannot load
        first = (str(e).splitlines() or [""])[0]
        raise UserError(f"{purpose} needs {module.split('.')[0]}, which is installed but does not import "
                        f"({type(e).__name__}: {first}); install a build that matches your torch: {install}") from None


def _open(store: Store | str | Path) -> Store:
    return store if isinstance(store, Store) else open_store(store)


def _csr_rows(indptr: np.ndarray) -> np.ndarray:
    """(nnz,) int64 row of every entry of a CSR matrix with this indptr."""
    return np.repeat(np.arange(indptr.shape[0] - 1, dtype=np.int64), np.diff(indptr))


def graph_arrays(store: Store | str | Path, rank: int | None = None, *, normalized: bool = False,
                 verify: bool = True) -> GraphArrays:
    """The export as numpy arrays (what :func:`to_pyg` and :func:`to_dgl` wrap).

    Parameters
    ----------
    store : Store or path
    rank : int or None
        None for the whole graph (original vertex order); r for rank r's
        block with its halo.
    normalized : bool
        Â with self loops and its values as weights instead of the pattern.
    verify : bool
        Check the checksum of every block read in full (see :meth:`Store.rank`).
    """
    s = _open(store)
    if rank is None:
        return _whole(s, normalized, verify)
    if not 0 <= rank < s.parts:
        raise UserError(f"{s.path}: rank {rank} out of range: the store has {s.parts} parts")
    return _rank(s, rank, normalized, verify)


def _whole(s: Store, normalized: bool, verify: bool) -> GraphArrays:
    n = int(s.attrs["n"])
    if normalized:
        src, dst, weight = _a_hat(s, verify)
    else:
        g = s.graph()
        src, dst, weight = g.indices.astype(np.int64), _csr_rows(g.indptr), None
    nodes = s.nodes()
    return GraphArrays(
        src=src, dst=dst, weight=weight,
        features=np.ascontiguousarray(nodes["features"].values, dtype=np.float32),
        labels=_labels(nodes["labels"].values),
        **{k: nodes[k].values.astype(bool) for k in ("train_mask", "val_mask", "test_mask")},
        node_ids=np.arange(n, dtype=np.int64), halo=np.zeros(n, bool))


def _global_columns(block, offset: int) -> np.ndarray:
    """(n_own + R,) int64 permuted id of each local column of a block."""
    own = np.arange(offset, offset + block.n_own, dtype=np.int64)
    return np.concatenate([own, np.asarray(block.plan.recv_ids, dtype=np.int64)])


def _a_hat(s: Store, verify: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Â's entries in original ids, from the rank blocks: (src=column, dst=row, value),
    sorted by (dst, src)."""
    perm = s.permutation()
    src, dst, val = [], [], []
    for r in range(s.parts):  # one pass per rank, vectorized within
        b = s.rank(r, verify=verify)
        cols = _global_columns(b, b.offset)
        dst.append(perm[b.offset + _csr_rows(np.asarray(b.plan.indptr))])
        src.append(perm[cols[np.asarray(b.plan.indices)]])
        val.append(np.asarray(b.plan.data, dtype=np.float32))
    s_, d_, v_ = np.concatenate(src), np.concatenate(dst), np.concatenate(val)
    order = np.lexsort((s_, d_))
    return s_[order], d_[order], v_[order]


def _rank(s: Store, r: int, normalized: bool, verify: bool) -> GraphArrays:
    b = s.rank(r, verify=verify)
    plan, n_own = b.plan, b.n_own
    recv_ids = np.asarray(plan.recv_ids, dtype=np.int64)
    dst = _csr_rows(np.asarray(plan.indptr))
    src = np.asarray(plan.indices, dtype=np.int64)
    weight: np.ndarray | None = np.asarray(plan.data, dtype=np.float32)
    if not normalized:
        keep = src != dst  # own row i is local column i: the diagonal of Â
        src, dst, weight = src[keep], dst[keep], None
    halo_x, halo_y = _halo_rows(s, plan, b.features.shape[1])
    n_halo = recv_ids.shape[0]
    no_mask = np.zeros(n_halo, bool)
    return GraphArrays(
        src=src, dst=dst, weight=weight,
        features=np.concatenate([np.asarray(b.features, dtype=np.float32), halo_x]),
        labels=_labels(np.concatenate([np.asarray(b.labels), halo_y])),
        train_mask=np.concatenate([np.asarray(b.train_mask, bool), no_mask]),
        val_mask=np.concatenate([np.asarray(b.val_mask, bool), no_mask]),
        test_mask=np.concatenate([np.asarray(b.test_mask, bool), no_mask]),
        node_ids=np.concatenate([np.asarray(b.node_index, dtype=np.int64), s.permutation()[recv_ids]]),
        halo=np.arange(n_own + n_halo) >= n_own, rank=r)


def _halo_rows(s: Store, plan, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """Features (R, D) and labels (R,) of the received rows, read from their
    owners' memory-mapped blocks (only those rows are touched)."""
    offsets = s.offsets
    multi = s.attrs.get("label_kind", "single") == "multi"
    ys = [np.zeros((0, int(s.attrs["classes"])), bool) if multi else np.zeros(0, np.int32)]
    xs = [np.zeros((0, dim), np.float32)]
    recv_ptr, recv_ids = np.asarray(plan.recv_ptr), np.asarray(plan.recv_ids)
    for q in np.flatnonzero(np.diff(recv_ptr)):  # one read per sending rank
        owner = s.rank(int(q), verify=False)
        rows = recv_ids[recv_ptr[q]:recv_ptr[q + 1]] - offsets[q]
        xs.append(np.asarray(owner.features[rows], dtype=np.float32))
        ys.append(np.asarray(owner.labels[rows]))
    return np.concatenate(xs), np.concatenate(ys)


def _labels(y: np.ndarray) -> np.ndarray:
    """Class ids as int64 (-1 unknown); multi-label rows as float32 0/1."""
    return y.astype(np.float32) if y.ndim == 2 else y.astype(np.int64)


def _tensor(torch: Any, a: np.ndarray):
    return torch.from_numpy(np.array(a))  # a writable copy (blocks are read-only memmaps)


def to_pyg(store: Store | str | Path, rank: int | None = None, *, normalized: bool = False, verify: bool = True):
    """The store (or rank ``rank``'s block with its halo) as a
    ``torch_geometric.data.Data``.

    Attributes: ``x`` (N, D) float32, ``edge_index`` (2, E) int64 (sources,
    destinations; see the module docstring for direction and self loops),
    ``y`` (N,) int64 (-1 unknown), ``train_mask``, ``val_mask``, ``test_mask``
    (N,) bool; with ``normalized=True`` also ``edge_weight`` (E,) float32;
    for a rank also ``n_id`` (N,) int64 original vertex ids and ``halo`` (N,)
    bool. Needs the ``pyg`` extra.
    """
    torch = require("torch", "pyg", "the PyG export")
    pyg_data = require("torch_geometric.data", "pyg", "the PyG export")
    a = graph_arrays(store, rank, normalized=normalized, verify=verify)
    data = pyg_data.Data(
        x=_tensor(torch, a.features), edge_index=_tensor(torch, np.stack([a.src, a.dst])),
        y=_tensor(torch, a.labels), train_mask=_tensor(torch, a.train_mask), val_mask=_tensor(torch, a.val_mask),
        test_mask=_tensor(torch, a.test_mask), num_nodes=a.num_nodes)
    if a.weight is not None:
        data.edge_weight = _tensor(torch, a.weight)
    if rank is not None:
        data.n_id = _tensor(torch, a.node_ids)
        data.halo = _tensor(torch, a.halo)
    return data


def to_dgl(store: Store | str | Path, rank: int | None = None, *, normalized: bool = False, verify: bool = True):
    """The store (or rank ``rank``'s block with its halo) as a ``dgl.DGLGraph``.

    ``ndata``: ``feat`` (N, D) float32, ``label`` (N,) int64 (-1 unknown),
    ``train_mask``, ``val_mask``, ``test_mask`` (N,) bool; for a rank also
    ``dgl.NID`` (original vertex ids) and ``inner_node`` (True for own rows).
    ``edata["edge_weight"]`` (E,) float32 with ``normalized=True``. Edges run
    source -> destination as in the module docstring. Needs the ``dgl`` extra.
    """
    torch = require("torch", "dgl", "the DGL export")
    dgl = require("dgl", "dgl", "the DGL export")
    a = graph_arrays(store, rank, normalized=normalized, verify=verify)
    g = dgl.graph((_tensor(torch, a.src), _tensor(torch, a.dst)), num_nodes=a.num_nodes, idtype=torch.int64)
    g.ndata["feat"] = _tensor(torch, a.features)
    g.ndata["label"] = _tensor(torch, a.labels)
    for k in ("train_mask", "val_mask", "test_mask"):
        g.ndata[k] = _tensor(torch, getattr(a, k))
    if a.weight is not None:
        g.edata["edge_weight"] = _tensor(torch, a.weight)
    if rank is not None:
        g.ndata[dgl.NID] = _tensor(torch, a.node_ids)
        g.ndata["inner_node"] = _tensor(torch, ~a.halo)
    return g
