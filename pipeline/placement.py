"""Placement of a partition's parts on nodes (``pipeline build --ranks-per-node
k``): which parts share a node, so that the rows that cross the network are
fewest.

Ranks are placed in blocks (ranks ``k i .. k i + k - 1`` on node i), so a
placement is an order of the parts: part p becomes rank ``rank_of_part[p]``.
What crosses the network depends on the exchange:

- the node-aware exchange sends each row once to each other node that needs
  it: the inter-node rows are the connectivity-1, over nodes, of the rows'
  *part sets* (the part owning row j and the parts needing it); so the
  ``hypergraph`` placement partitions the hypergraph whose vertices are the
  parts and whose nets are those sets (identical sets merged, weighted by
  their count) into nodes of k parts with Mt-KaHyPar's connectivity-1
  objective (the process-mapping objective), from scratch and improving
  block placement, the better refined by pairwise swaps (up to
  :data:`SWAP_PARTS` parts);
- a flat exchange sends a row once to each part that needs it: its
  inter-node rows are the volume matrix's entries between nodes; the
  ``graph`` placement partitions the parts' quotient graph (edge weight
  V[m, q] + V[q, m]) into nodes of k parts, minimizing the cut;
- ``block``: the parts in their partitioner's order.

A placement is kept only if it sends fewer node-aware rows across than
block placement and its busiest node sends and receives no more (the epoch
waits for the busiest node's link); the tie goes to block. Same seed, same
placement.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .metrics.internode import Nets, inter_rows, node_loads

PLACEMENTS = ("hypergraph", "graph", "block")
SWAP_PARTS = 2048  # the swap search holds (P, P) float64 deltas: 32 MiB each at this P, and P² work a round

@dataclass(frozen=True)
class Placement:
    """Parts on nodes: ``rank_of_part`` (P,) int64, the rank (and so the node, rank // k) of every part;
    ``how`` the method that won; the node-aware inter-node rows of it and of block placement."""

    rank_of_part: np.ndarray
    ranks_per_node: int
    how: str
    inter_rows: int
    block_rows: int


def block_nodes(parts: int, k: int) -> np.ndarray:
    return np.arange(parts, dtype=np.int64) // k


def _ranks_from_nodes(node_of_part: np.ndarray) -> np.ndarray:
    """Ranks in blocks by node, the parts of a node in their old order."""
    order = np.lexsort((np.arange(node_of_part.size), node_of_part))
    out = np.empty(node_of_part.size, np.int64)
    out[order] = np.arange(node_of_part.size)
    return out


def _kahypar_nodes(ptr: np.ndarray, pins: np.ndarray, weights: np.ndarray, parts: int, k: int, seed: int, *,
                   start: np.ndarray | None = None, preset: str = "DETERMINISTIC") -> np.ndarray:
    """Parts into nodes of exactly k (the last the rest) minimizing connectivity-1 (Mt-KaHyPar,
    one thread; ``preset`` a name of ``mtkahypar.PresetType``, the product's the reproducible DETERMINISTIC);
    with ``start`` (P,) nodes, that placement improved (3 V-cycles)."""
    import mtkahypar

    from .models.kahypar import KAHYPAR_LOCK, _kahypar

    nodes = -(-parts // k)
    sizes = [k] * (nodes - 1) + [parts - k * (nodes - 1)]
    init = _kahypar(1)
    ctx = init.context_from_preset(getattr(mtkahypar.PresetType, preset))
    ctx.set_partitioning_parameters(nodes, 0.0, mtkahypar.Objective.KM1)
    ctx.set_individual_target_block_weights(sizes)
    ctx.logging = False
    nets = np.split(pins, ptr[1:-1]) if weights.size else []
    with KAHYPAR_LOCK:  # the seed is the process's, and the place stage places every model at once
        mtkahypar.set_seed(seed)
        h = init.create_hypergraph(ctx, parts, len(nets), nets, np.ones(parts, np.int64), weights.astype(np.int64))
        if start is None:
            ph = h.partition(ctx)
        else:
            ph = h.create_partitioned_hypergraph(ctx, nodes, np.asarray(start, np.int64))  # (context, k)
            ph.improve_partition(ctx, 3)
        node = np.asarray(ph.get_partition(), np.int64)
    if not np.array_equal(np.bincount(node, minlength=nodes), sizes):  # never trust a balance we did not check
        raise RuntimeError(f"Mt-KaHyPar placed {np.bincount(node, minlength=nodes).tolist()} parts on the nodes, "
                           f"not {sizes}")
    return node


def swap_deltas(nets: Nets, node: np.ndarray, inc: sp.csr_matrix) -> np.ndarray:
    """(P, P) the change of the rows across when parts u and v trade nodes (inf on one node).

    Part u moving from node A to B adds w for each of its sets with no part on B and saves w for each
    where it is alone on A: M[u, B]. A swap is M[u, B] + M[v, A] less what those count on the sets
    holding both u and v (where nothing changes): + w for each such set in which u is alone on A, and
    for each in which v is alone on B. ``inc`` (m, P): the sets' 0/1 incidence."""
    parts = node.size
    net = np.repeat(np.arange(nets.count), np.diff(nets.ptr))
    cnt = np.zeros((nets.count, int(node.max()) + 1))
    np.add.at(cnt, (net, node[nets.pins]), 1.0)
    w = nets.weights.astype(np.float64)[:, None]
    one = (cnt == 1) * w
    m = np.asarray(inc.T @ ((cnt == 0) * w)) - np.asarray(inc.T @ one)[np.arange(parts), node][:, None]
    alone = sp.csr_matrix((one[net, node[nets.pins]], (nets.pins, net)), shape=(parts, nets.count))
    both = (alone @ inc).toarray()
    mv = m[:, node]  # mv[u, v] = M[u, node of v]
    delta = mv + mv.T + both + both.T
    delta[node[:, None] == node[None, :]] = np.inf
    return delta


def swap_search(nets: Nets, node: np.ndarray, rounds: int = 100, batch: int = 32) -> np.ndarray:
    """(P,) nodes after pairwise swaps of parts between nodes while one lowers the rows across: each
    round the best ``batch`` swaps of disjoint parts at once, or the best alone when together they
    gain nothing. Deterministic; node sizes kept."""
    node = np.asarray(node, np.int64).copy()
    if not nets.count or node.size < 2:
        return node
    net = np.repeat(np.arange(nets.count), np.diff(nets.ptr))
    inc = sp.csr_matrix((np.ones(net.size), (net, nets.pins)), shape=(nets.count, node.size))
    cost = inter_rows(nets, node)
    iu, iv = np.triu_indices(node.size, 1)
    for _ in range(rounds):
        d = swap_deltas(nets, node, inc)[iu, iv]
        used = np.zeros(node.size, bool)
        picks: list[tuple[int, int]] = []
        for i in np.argsort(d, kind="stable")[:4 * batch]:  # a few candidates, best first
            if d[i] >= 0 or len(picks) == batch:
                break
            if not (used[iu[i]] or used[iv[i]]):
                used[[iu[i], iv[i]]] = True
                picks.append((int(iu[i]), int(iv[i])))
        for chosen in (picks, picks[:1]):
            trial = node.copy()
            for u, v in chosen:
                trial[u], trial[v] = node[v], node[u]
            rows = inter_rows(nets, trial)
            if chosen and rows < cost:
                node, cost = trial, rows
                break
        else:
            return node
    return node


def quotient_nets(volume: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The parts' quotient graph as 2-pin nets (m < q) of weight V[m, q] + V[q, m]."""
    v = np.asarray(volume, np.int64)
    w = np.triu(v + v.T, 1)
    m, q = np.nonzero(w)
    return np.arange(0, 2 * m.size + 1, 2, dtype=np.int64), np.stack([m, q], 1).ravel(), w[m, q]


def place(nets: Nets, volume: np.ndarray, k: int, how: str = "hypergraph", seed: int = 0) -> Placement:
    """The placement of P parts (``volume`` (P, P)) on nodes of ``k`` ranks by ``how``
    (:data:`PLACEMENTS`), kept only when its node-aware inter-node rows are below block placement's."""
    parts = int(np.asarray(volume).shape[0])
    k = max(1, min(int(k), parts))
    block = block_nodes(parts, k)
    base = inter_rows(nets, block)
    if how == "block" or k in (1, parts):
        return Placement(np.arange(parts, dtype=np.int64), k, "block", base, base)
    if how == "graph":
        node = _kahypar_nodes(*quotient_nets(volume), parts, k, seed)
    elif how == "hypergraph":
        found = [_kahypar_nodes(nets.ptr, nets.pins, nets.weights, parts, k, seed, start=s) for s in (None, block)]
        node = min(found, key=lambda n: inter_rows(nets, n))
        node = swap_search(nets, node) if parts <= SWAP_PARTS else node
    else:
        raise ValueError(f"placement {how!r}: one of {', '.join(PLACEMENTS)}")
    rows = inter_rows(nets, node)
    if rows >= base or _busiest(nets, node) > _busiest(nets, block):
        return Placement(np.arange(parts, dtype=np.int64), k, "block", base, base)
    return Placement(_ranks_from_nodes(node), k, how, rows, base)


def _busiest(nets: Nets, node: np.ndarray) -> int:
    """The most rows a node sends or receives across in one node-aware expand."""
    send, recv = node_loads(nets, node)
    return int(max(send.max(initial=0), recv.max(initial=0)))
