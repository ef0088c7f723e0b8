"""What the store holds, independent of how it is laid out on disk."""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from .errors import StoreError  # noqa: F401  (re-exported)

SCHEMA_VERSION = 2


@dataclass
class Plan:
    """One rank's share of a matrix (Â, or Â^T for directed graphs).

    Local column ids: ``0..n_own-1`` are the rank's own rows, in order;
    ``n_own + k`` is the k-th received row, grouped by sending rank (in rank
    order) and by global id within a sender.

    Attributes
    ----------
    indptr : (n_own+1,) int64
    indices : (nnz,) int32, local column ids
    data : (nnz,) float32
    send_ptr : (P+1,) int64
        ``send_rows[send_ptr[q]:send_ptr[q+1]]`` go to rank q.
    send_rows : (S,) int32
        Local row ids to send, in the order rank q expects them.
    recv_ptr : (P+1,) int64
        Received rows from rank q are local columns
        ``n_own + recv_ptr[q] .. n_own + recv_ptr[q+1] - 1``.
    recv_ids : (R,) int64
        Global (permuted) id of each received row.
    """

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    send_ptr: np.ndarray
    send_rows: np.ndarray
    recv_ptr: np.ndarray
    recv_ids: np.ndarray

    @property
    def n_own(self) -> int:
        return self.indptr.shape[0] - 1

    def send_volume(self) -> np.ndarray:
        """(P,) rows sent to each rank per SpMM."""
        return np.diff(self.send_ptr)

    def recv_volume(self) -> np.ndarray:
        """(P,) rows received from each rank per SpMM."""
        return np.diff(self.recv_ptr)


PLAN_DTYPES = {"indptr": "<i8", "indices": "<i4", "data": "<f4", "send_ptr": "<i8", "send_rows": "<i4",
               "recv_ptr": "<i8", "recv_ids": "<i8"}


@dataclass
class RankBlock:
    """Everything rank ``rank`` reads: its rows of Â (``plan``), of Â^T for
    directed graphs (``transpose``), and its node data.

    Attributes
    ----------
    offset : int
        Global (permuted) id of the first own row.
    features : (n_own, d) float32 (float16 in a store built with ``--feature-dtype float16``)
    labels : (n_own,) int32, -1 where unknown; (n_own, C) bool for multi-label targets
    train_mask, val_mask, test_mask : (n_own,) bool
    node_index : (n_own,) int64
        Original vertex index (ingest order) of each own row.
    """

    rank: int
    offset: int
    plan: Plan
    features: np.ndarray
    labels: np.ndarray
    train_mask: np.ndarray
    val_mask: np.ndarray
    test_mask: np.ndarray
    node_index: np.ndarray
    transpose: Plan | None = None

    @property
    def n_own(self) -> int:
        return self.plan.n_own


NODE_DTYPES = {"features": "<f4", "labels": "<i4", "train_mask": "|b1", "val_mask": "|b1", "test_mask": "|b1",
               "node_index": "<i8"}
FEATURE_DTYPES = {"float32": "<f4", "float16": "<f2"}  # the store's feature_dtype attribute
LABEL_KINDS = ("single", "multi")  # labels (n,) int32 class, -1 unknown; or (n, C) bool, one column per class


def node_dtypes(attrs: dict) -> dict[str, str]:
    """The node arrays' data types in a store with these root attributes:
    features float16 when ``feature_dtype`` says so, labels (n, C) bool for
    multi-label targets (``label_kind`` ``multi``)."""
    out = dict(NODE_DTYPES)
    out["features"] = FEATURE_DTYPES.get(attrs.get("feature_dtype", "float32"), "<f4")
    if attrs.get("label_kind", "single") == "multi":
        out["labels"] = "|b1"
    return out


def block_array_names(transpose: bool) -> list[str]:
    """The store names of a block's arrays, in checksum order (``transpose``: a directed store's block)."""
    plan = [f.name for f in fields(Plan)]
    return plan + list(NODE_DTYPES) + ([f"transpose/{n}" for n in plan] if transpose else [])


def block_arrays(block: RankBlock) -> dict[str, np.ndarray]:
    """The arrays of a block by their store name, in checksum order."""
    def array(name: str) -> np.ndarray:
        if name in NODE_DTYPES:
            return getattr(block, name)
        where, _, field = name.rpartition("/")
        return getattr(block.transpose if where else block.plan, field)

    return {name: array(name) for name in block_array_names(block.transpose is not None)}
