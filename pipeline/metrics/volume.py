"""Partition quality: communication volume and messages of one SpMM with Â,
the work of each part (rows, nonzeros, modelled compute), edge cut,
connectivity-1; as an xarray Dataset (its tables: :mod:`shgcn.core.tables`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from shgcn.core.tables import METRICS, NODE_METRICS
from shgcn.core.work import modelled_compute

from ..arrays import PIECE_ENTRIES, row_pieces, sorted_unique
from ..blocks import RowBlock, slice_rows
from .hypergraph import column_net, connectivity_minus_one
from .internode import NodeQuality


@dataclass
class Quality:
    """Quality of one row partition.

    Attributes
    ----------
    volume : (P, P) int64
        ``volume[m, q]``: rows of H that part m sends to part q per SpMM.
    load : (P,) int64
        Nonzeros of Â in each part's rows (the SpMM work).
    edge_cut : int
        Edges of the symmetrized graph (no self loops) between parts.
    km1 : int
        Connectivity-1 of the column-net hypergraph of Â.
    rows : (P,) int64
        Rows of each part.
    work : (P,) float64 or None
        Modelled compute of each part in one training step, seconds
        (:mod:`shgcn.core.work`); None when the layer widths are unknown.
    """

    model: str
    volume: np.ndarray
    load: np.ndarray
    edge_cut: int
    km1: int
    seconds: float = float("nan")
    rows: np.ndarray | None = None
    work: np.ndarray | None = None
    nodes: NodeQuality | None = None  # between nodes, when the parts are placed on them

    @property
    def parts(self) -> int:
        return self.volume.shape[0]

    @property
    def send(self) -> np.ndarray:
        return self.volume.sum(1)

    @property
    def recv(self) -> np.ndarray:
        return self.volume.sum(0)

    @property
    def send_msgs(self) -> np.ndarray:
        return (self.volume > 0).sum(1)

    @property
    def recv_msgs(self) -> np.ndarray:
        return (self.volume > 0).sum(0)

    @property
    def total_volume(self) -> int:
        return int(self.volume.sum())

    @property
    def imbalance(self) -> float:
        """max / mean load (nonzeros) - 1."""
        return _imbalance(self.load)

    def metrics(self) -> dict[str, float]:
        return {
            "total_volume": self.total_volume,
            "avg_send": float(self.send.mean()),
            "max_send": int(self.send.max()),
            "max_recv": int(self.recv.max()),
            "max_avg_send": _ratio(self.send.max(), self.send.mean()),
            "max_avg_recv": _ratio(self.recv.max(), self.recv.mean()),
            "avg_msgs": float(self.send_msgs.mean()),
            "max_msgs": int(self.send_msgs.max()),
            "imbalance": self.imbalance,
            "rows_imbalance": _imbalance(self.rows) if self.rows is not None else float("nan"),
            "work_imbalance": _imbalance(self.work) if self.work is not None else float("nan"),
            "edge_cut": self.edge_cut,
            "km1": self.km1,
            "seconds": self.seconds,
        }


def _imbalance(x: np.ndarray) -> float:
    """max / mean - 1 (0 for an empty or all-zero vector)."""
    mean = float(np.mean(x)) if np.size(x) else 0.0
    return float(np.max(x) / mean - 1) if mean > 0 else 0.0


def _ratio(a: float, b: float) -> float:
    return float(a / b) if b > 0 else float("nan")


def volume_matrix(a: sp.csr_matrix, part: np.ndarray, parts: int) -> np.ndarray:
    """(P, P) int64 rows of H sent from part m (owner of column j) to part q
    (owner of a row with a nonzero in column j), counted once per (j, q)."""
    rows = np.repeat(np.arange(a.shape[0], dtype=np.int64), np.diff(a.indptr))
    cols = a.indices.astype(np.int64)
    receiver = part[rows].astype(np.int64)
    cut = receiver != part[cols]
    pairs = np.unique(cols[cut] * parts + receiver[cut])
    sender = part[pairs // parts].astype(np.int64)
    return np.bincount(sender * parts + pairs % parts, minlength=parts * parts).reshape(parts, parts)


def edge_cut(adj: sp.csr_matrix, part: np.ndarray) -> int:
    """Undirected edges {u, v}, u != v, of the symmetrized graph with
    ``part[u] != part[v]``."""
    rows = np.repeat(np.arange(adj.shape[0], dtype=np.int64), np.diff(adj.indptr))
    cols = adj.indices.astype(np.int64)
    cut = (part[rows] != part[cols]) & (rows != cols)
    lo, hi = np.minimum(rows[cut], cols[cut]), np.maximum(rows[cut], cols[cut])
    return int(np.unique(lo * adj.shape[0] + hi).size)


def partition_quality(a: sp.csr_matrix, part: np.ndarray, parts: int, model: str = "",
                      seconds: float = float("nan"), dims: list[int] | None = None) -> Quality:
    """All metrics of ``part`` for Â (which has a nonzero diagonal); the
    modelled compute per part for a GCN of layer widths ``dims``, if given."""
    part = np.asarray(part)
    load = np.bincount(part, weights=np.diff(a.indptr), minlength=parts).astype(np.int64)
    rows = np.bincount(part, minlength=parts).astype(np.int64)
    return Quality(
        model=model,
        volume=volume_matrix(a, part, parts),
        load=load,
        edge_cut=edge_cut(a, part),
        km1=connectivity_minus_one(column_net(a), part, parts),
        seconds=seconds,
        rows=rows,
        work=None if dims is None else modelled_compute(rows, load, dims),
    )


# --------------------------------------------------- by row blocks (the build)

@dataclass
class Partial:
    """One block's share of a partition's quality: its columns' volume
    (P, P) and connectivity-1, and its rows' cut edges."""

    volume: np.ndarray
    km1: int
    edge_cut: int


def block_quality(a_block: RowBlock, at_block: RowBlock, part: np.ndarray, parts: int, directed: bool,
                  limit: int = PIECE_ENTRIES) -> Partial:
    """The ``quality-<model>`` task of one block, in row ranges of at most
    ``limit`` entries (:func:`..arrays.row_pieces`; every measure is a sum
    over rows, so the pieces add up to the block's).

    ``at_block`` holds rows lo..hi-1 of Â^T, i.e. columns j of Â: the parts
    of its pins give λ_j, and part(j) sends row j to the λ_j - 1 others.
    ``a_block`` holds the same rows of Â; with Â^T's rows (directed) they are
    the neighbours of u in the symmetrized graph, for the edge cut (v > u).
    """
    volume, km1, n_cut = np.zeros((parts, parts), np.int64), 0, 0
    lo0 = a_block.lo
    for lo, hi in row_pieces(np.diff(a_block.indptr) + np.diff(at_block.indptr), limit):  # a loop over pieces
        q = _piece_quality(slice_rows(a_block, lo0 + lo, lo0 + hi), slice_rows(at_block, lo0 + lo, lo0 + hi),
                           part, parts, directed)
        volume += q.volume
        km1, n_cut = km1 + q.km1, n_cut + q.edge_cut
    return Partial(volume, km1, n_cut)


def _piece_quality(a_block: RowBlock, at_block: RowBlock, part: np.ndarray, parts: int, directed: bool) -> Partial:
    """:func:`block_quality` of some rows."""
    j = at_block.row_ids()
    pairs = sorted_unique(j * parts + part[at_block.indices])
    del j
    col, q = np.divmod(pairs, parts)
    sender = part[col].astype(np.int64)
    other = q != sender
    volume = np.bincount(sender[other] * parts + q[other], minlength=parts * parts).reshape(parts, parts)
    del pairs, col, q, sender
    u, v = a_block.row_ids(), a_block.indices.astype(np.int64)
    if directed:
        u, v = np.concatenate([u, at_block.row_ids()]), np.concatenate([v, at_block.indices.astype(np.int64)])
    cut = (v > u) & (part[u] != part[v])
    n_cut = int(sorted_unique(u[cut] * a_block.n + v[cut]).size) if directed else int(cut.sum())
    return Partial(volume.astype(np.int64), int(other.sum()), n_cut)


def merge_quality(model: str, parts: int, weights: np.ndarray, part: np.ndarray, seconds: float,
                  *partials: Partial, dims: list[int] | None = None) -> Quality:
    """A partition's :class:`Quality` from its blocks' partials and the row
    weights (nonzeros of each row of Â); the modelled compute per part for a
    GCN of layer widths ``dims``, if given."""
    load = np.bincount(part, weights=weights, minlength=parts).astype(np.int64)
    rows = np.bincount(part, minlength=parts).astype(np.int64)
    return Quality(model=model, volume=np.sum([p.volume for p in partials], axis=0), load=load,
                   edge_cut=sum(p.edge_cut for p in partials), km1=sum(p.km1 for p in partials), seconds=seconds,
                   rows=rows, work=None if dims is None else modelled_compute(rows, load, dims))


def to_dataset(qs: list[Quality]):
    """xarray Dataset with dims (model, part, sender, receiver)."""
    import xarray as xr

    models = [q.model for q in qs]
    data = {
        "volume": (("model", "sender", "receiver"), np.stack([q.volume for q in qs])),
        "send_volume": (("model", "part"), np.stack([q.send for q in qs])),
        "recv_volume": (("model", "part"), np.stack([q.recv for q in qs])),
        "send_msgs": (("model", "part"), np.stack([q.send_msgs for q in qs])),
        "recv_msgs": (("model", "part"), np.stack([q.recv_msgs for q in qs])),
        "load": (("model", "part"), np.stack([q.load for q in qs])),
        "rows": (("model", "part"), np.stack([q.rows if q.rows is not None else np.zeros(q.parts, np.int64)
                                               for q in qs])),
        "work": (("model", "part"), np.stack([q.work if q.work is not None else np.full(q.parts, np.nan)
                                               for q in qs])),
    }
    for key in METRICS:
        data[key] = (("model",), np.array([q.metrics()[key] for q in qs]))
    node = [q.nodes for q in qs]
    if all(nq is not None for q, nq in zip(qs, node)) and node:
        for key in NODE_METRICS:
            data[key] = (("model",), np.array([nq.metrics()[key] for nq in node if nq is not None]))
        data["node_volume"] = (("model", "src_node", "dst_node"), np.stack([nq.node_volume for nq in node
                                                                             if nq is not None]))
    ds = xr.Dataset(data, coords={"model": models, "part": np.arange(qs[0].parts)})
    ds.attrs["description"] = ("Per-SpMM communication (rows of H) and load of each row partition of Â: "
                               "nonzeros (load), rows and modelled compute per training step in seconds (work)")
    return ds
