"""What crosses between nodes: a placed partition's communication at node
level (``pipeline build --ranks-per-node k``), by the same column blocks as
the part-level quality (:mod:`.volume`), and the part sets its placement
partitions (:mod:`..placement`).

Nodes are blocks of k consecutive ranks (part p on node p // k). Per SpMM:

- the node volume matrix NV (N, N): rows of H that node A's ranks own and a
  rank of node B needs, each row once per node pair: what the node-aware
  exchange sends across the network (``inter_volume`` = its sum);
- the flat exchange's inter-node rows: the part volume matrix's entries
  between nodes (``inter_volume_flat``), each row once per receiving part;
- per node, the rows it sends and receives across, and the nodes it sends to
  (the node-aware exchange's inter-node messages).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..arrays import sorted_unique
from ..blocks import RowBlock

_HASH_SEED = 0x5EED  # the random weights that name a part set (two 64-bit sums: collisions are out of reach)


@dataclass(frozen=True)
class Nets:
    """Distinct (owner, part set) of the rows that travel (each set of at least two parts), with their counts.

    Attributes: ptr (m+1,) int64; pins (ptr[-1],) int64 sorted part ids per set; weights (m,) int64 rows
    with that owner and set; owner (m,) int64 the part that owns those rows; keys (m, 2) uint64 the hashes
    (to merge blocks' nets)."""

    ptr: np.ndarray
    pins: np.ndarray
    weights: np.ndarray
    keys: np.ndarray
    owner: np.ndarray

    @classmethod
    def empty(cls) -> Nets:
        return cls(np.zeros(1, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, 2), np.uint64),
                   np.zeros(0, np.int64))

    @property
    def count(self) -> int:
        return int(self.weights.size)


def _hash_weights(parts: int) -> np.ndarray:
    """(parts, 4) random words: two name a part as a pin, two as an owner."""
    return np.random.default_rng(_HASH_SEED).integers(0, 2**63, (parts, 4), dtype=np.uint64)


def part_nets(row_of_pin: np.ndarray, part_of_pin: np.ndarray, parts: int, owner_of_row: np.ndarray) -> Nets:
    """The distinct (owner, part set) of rows from (row, part) pins (a row's owner among them; any order,
    duplicates allowed; ``owner_of_row`` indexed by row), keeping the sets of at least two parts."""
    key = np.unique(np.asarray(row_of_pin, np.int64) * parts + np.asarray(part_of_pin, np.int64))
    rows, pins = key // parts, key % parts
    starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]]) if rows.size else np.zeros(0, np.int64)
    sizes = np.diff(np.r_[starts, rows.size])
    keep = np.repeat(sizes >= 2, sizes)
    owner = np.asarray(owner_of_row, np.int64)[rows[starts][sizes >= 2]] if rows.size else np.zeros(0, np.int64)
    rows, pins = rows[keep], pins[keep]
    sizes = sizes[sizes >= 2]
    if not sizes.size:
        return Nets.empty()
    hw = _hash_weights(parts)
    w = hw[pins]
    starts = np.r_[0, np.cumsum(sizes)[:-1]]
    h = np.stack([np.add.reduceat(w[:, 0], starts) + hw[owner, 2],  # wraps mod 2^64
                  np.add.reduceat(w[:, 1], starts) + hw[owner, 3]], axis=1)
    return _dedupe(np.r_[0, np.cumsum(sizes)].astype(np.int64), pins, np.ones(sizes.size, np.int64), h, owner)


def _dedupe(ptr: np.ndarray, pins: np.ndarray, weights: np.ndarray, keys: np.ndarray, owner: np.ndarray) -> Nets:
    """Identical (owner, set) (equal keys) merged, their weights summed; in key order."""
    uniq, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    w = np.bincount(inverse.ravel(), weights=weights, minlength=uniq.shape[0]).astype(np.int64)
    sizes = np.diff(ptr)[first]
    starts = ptr[first]
    out_ptr = np.r_[0, np.cumsum(sizes)].astype(np.int64)
    idx = np.repeat(starts - out_ptr[:-1], sizes) + np.arange(int(out_ptr[-1]))
    return Nets(out_ptr, pins[idx].astype(np.int64), w, uniq.astype(np.uint64), np.asarray(owner, np.int64)[first])


def merge_nets(*nets: Nets) -> Nets:
    """Several blocks' nets as one (identical ones merged)."""
    nets = tuple(n for n in nets if n.count)
    if not nets:
        return Nets.empty()
    sizes = np.concatenate([np.diff(n.ptr) for n in nets])
    return _dedupe(np.r_[0, np.cumsum(sizes)].astype(np.int64), np.concatenate([n.pins for n in nets]),
                   np.concatenate([n.weights for n in nets]), np.concatenate([n.keys for n in nets]),
                   np.concatenate([n.owner for n in nets]))


def node_loads(nets: Nets, node_of_part: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(N,) rows each node sends across and receives across in one node-aware expand."""
    node_of_part = np.asarray(node_of_part, np.int64)
    nodes = int(node_of_part.max()) + 1 if node_of_part.size else 0
    if not nets.count:
        return np.zeros(nodes, np.int64), np.zeros(nodes, np.int64)
    node = node_of_part[nets.pins]
    net = np.repeat(np.arange(nets.count), np.diff(nets.ptr))
    key = np.unique(net * nodes + node)
    n_of, b = key // nodes, key % nodes
    home = node_of_part[nets.owner]
    away = b != home[n_of]
    recv = np.bincount(b[away], weights=nets.weights[n_of[away]], minlength=nodes).astype(np.int64)
    spans = np.bincount(n_of, minlength=nets.count)
    send = np.bincount(home, weights=(spans - 1) * nets.weights, minlength=nodes).astype(np.int64)
    return send, recv


def inter_rows(nets: Nets, node_of_part: np.ndarray) -> int:
    """Rows that cross between nodes in one node-aware expand: Σ weight (nodes a set spans - 1)."""
    if not nets.count:
        return 0
    node = np.asarray(node_of_part, np.int64)[nets.pins]
    net = np.repeat(np.arange(nets.count), np.diff(nets.ptr))
    spans = np.bincount(np.unique(net * (int(node.max()) + 1) + node) // (int(node.max()) + 1), minlength=nets.count)
    return int(((spans - 1) * nets.weights).sum())


def flat_inter_rows(volume: np.ndarray, node_of_part: np.ndarray) -> int:
    """Rows that cross between nodes in one flat expand: the volume matrix's entries between nodes."""
    node = np.asarray(node_of_part, np.int64)
    return int(np.asarray(volume)[node[:, None] != node[None, :]].sum())


def block_nets(at_block: RowBlock, part: np.ndarray, parts: int) -> Nets:
    """The part sets of one block's columns of Â (rows of Âᵀ: column j's pins and j's own part)."""
    j = at_block.row_ids()
    return part_nets(np.concatenate([j, j]), np.concatenate([part[at_block.indices], part[j]]), parts, part)


def block_node_volume(at_block: RowBlock, part: np.ndarray, k: int, nodes: int) -> np.ndarray:
    """(N, N) int64: one block's rows that cross from their owner's node to each other node that needs them."""
    node = np.asarray(part, np.int64) // k
    j = at_block.row_ids()
    pairs = sorted_unique(j * nodes + node[at_block.indices])
    col, b = np.divmod(pairs, nodes)
    a = node[col]
    other = a != b
    return np.bincount(a[other] * nodes + b[other], minlength=nodes * nodes).reshape(nodes, nodes).astype(np.int64)


@dataclass(frozen=True)
class NodeQuality:
    """A placed partition's node-level communication per SpMM (see the module docstring)."""

    ranks_per_node: int
    node_volume: np.ndarray
    flat: int
    block: int
    how: str

    @property
    def inter_volume(self) -> int:
        return int(self.node_volume.sum())

    def metrics(self) -> dict[str, float]:
        nv = self.node_volume
        msgs = (nv > 0).sum(1)
        return {"ranks_per_node": self.ranks_per_node, "nodes": int(nv.shape[0]), "inter_volume": self.inter_volume,
                "inter_volume_block": self.block, "inter_volume_flat": self.flat,
                "max_node_send": int(nv.sum(1).max()), "max_node_recv": int(nv.sum(0).max()),
                "max_node_msgs": int(msgs.max()), "avg_node_msgs": float(msgs.mean())}


def flat_inter(volume: np.ndarray, k: int) -> int:
    """The flat exchange's rows between nodes: the part volume matrix's entries across node blocks."""
    node = np.arange(volume.shape[0]) // k
    return int(np.asarray(volume)[node[:, None] != node[None, :]].sum())
