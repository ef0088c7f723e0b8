"""From a partition to per-rank blocks: permutation to contiguous rank
ranges, local CSR with compact column ids, send and receive plans.

Rank r owns new ids ``offsets[r]:offsets[r+1]`` (vertices of part r, in
original order). Its local columns are its own rows first, then the rows it
receives, grouped by sending rank and ordered by new id within a sender;
the sender packs them in the same order, so a received buffer maps onto
consecutive local columns without any index exchange.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from shgcn.store import Plan, RankBlock

from .nodedata import NodeData


@dataclass
class Layout:
    """Attributes: perm (n,) int64 new id -> original index; inverse (n,)
    int64 original index -> new id; offsets (P+1,) int64."""

    perm: np.ndarray
    inverse: np.ndarray
    offsets: np.ndarray

    @property
    def parts(self) -> int:
        return self.offsets.size - 1


@dataclass
class Halos:
    """Rows each rank receives, for one matrix: rank q receives the new ids
    ``ids[ptr[q]:ptr[q+1]]`` (sorted)."""

    ptr: np.ndarray
    ids: np.ndarray


def make_layout(part: np.ndarray, parts: int) -> Layout:
    perm = np.argsort(part, kind="stable").astype(np.int64)
    inverse = np.empty_like(perm)
    inverse[perm] = np.arange(perm.size, dtype=np.int64)
    offsets = np.zeros(parts + 1, np.int64)
    np.cumsum(np.bincount(part, minlength=parts), out=offsets[1:])
    return Layout(perm, inverse, offsets)


def permute(a: sp.csr_matrix, lay: Layout) -> sp.csr_matrix:
    """P Â P^T: rows and columns renumbered to new ids, indices sorted."""
    b = a[lay.perm][:, lay.perm].tocsr()
    b.sort_indices()
    return b


def halos(a_new: sp.csr_matrix, offsets: np.ndarray) -> Halos:
    """Rows of H each rank needs from other ranks for one SpMM with ``a_new``."""
    parts = offsets.size - 1
    n = a_new.shape[0]
    owner_of_row = np.repeat(np.arange(parts, dtype=np.int64), np.diff(offsets))
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(a_new.indptr))
    cols = a_new.indices.astype(np.int64)
    receiver = owner_of_row[rows]
    remote = receiver != owner_of_row[cols]
    keys = np.unique(receiver[remote] * n + cols[remote])  # sorted by (receiver, new id)
    ptr = np.searchsorted(keys, np.arange(parts + 1, dtype=np.int64) * n)
    return Halos(ptr=ptr.astype(np.int64), ids=keys % n)


def rank_plan(a_new: sp.csr_matrix, offsets: np.ndarray, h: Halos, r: int) -> Plan:
    """Rank r's local CSR and its send / receive plans."""
    lo, hi = int(offsets[r]), int(offsets[r + 1])
    block = a_new[lo:hi]
    cols = block.indices.astype(np.int64)
    mine = h.ids[h.ptr[r]:h.ptr[r + 1]]
    own = (cols >= lo) & (cols < hi)
    local = np.where(own, cols - lo, (hi - lo) + np.searchsorted(mine, cols))
    local_csr = sp.csr_matrix((block.data.astype(np.float32), local.astype(np.int32), block.indptr.astype(np.int64)),
                              shape=(hi - lo, hi - lo + mine.size))
    local_csr.sort_indices()
    # what rank q receives from r: the part of q's halo inside r's range
    parts = offsets.size - 1
    send_chunks, send_ptr = [], np.zeros(parts + 1, np.int64)
    for q in range(parts):  # a loop over ranks, not vertices
        hq = h.ids[h.ptr[q]:h.ptr[q + 1]]
        a, b = np.searchsorted(hq, [lo, hi])
        send_chunks.append(hq[a:b] - lo)
        send_ptr[q + 1] = send_ptr[q] + (b - a)
    recv_ptr = np.searchsorted(mine, offsets).astype(np.int64)
    return Plan(
        indptr=local_csr.indptr.astype(np.int64),
        indices=local_csr.indices.astype(np.int32),
        data=local_csr.data.astype(np.float32),
        send_ptr=send_ptr,
        send_rows=np.concatenate(send_chunks).astype(np.int32),
        recv_ptr=recv_ptr,
        recv_ids=mine.astype(np.int64),
    )


def rank_block(r: int, lay: Layout, a_new: sp.csr_matrix, h: Halos, nodes: NodeData,
               at_new: sp.csr_matrix | None = None, ht: Halos | None = None) -> RankBlock:
    """Everything rank r stores: its plan for Â, for Â^T if directed, and its node data."""
    lo, hi = int(lay.offsets[r]), int(lay.offsets[r + 1])
    idx = lay.perm[lo:hi]
    return RankBlock(
        rank=r,
        offset=lo,
        plan=rank_plan(a_new, lay.offsets, h, r),
        transpose=None if at_new is None or ht is None else rank_plan(at_new, lay.offsets, ht, r),
        features=nodes.features[idx],
        labels=nodes.labels[idx],
        train_mask=nodes.train[idx],
        val_mask=nodes.val[idx],
        test_mask=nodes.test[idx],
        node_index=idx,
    )
