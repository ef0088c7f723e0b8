"""Placement of parts on nodes (pipeline/placement.py): placements that beat the parts' own order
when it is bad, keep it when it is good, and fill a short last node."""

import numpy as np
import pytest

from shgcn.pipeline.metrics.internode import inter_rows, part_nets
from shgcn.pipeline.placement import block_nodes, place


def interleaved(parts: int, k: int, rows: int = 400, seed: int = 0):
    """Rows that travel among the parts p, p + P/k, p + 2 P/k...: block placement puts every set across nodes."""
    rng = np.random.default_rng(seed)
    stride = parts // k
    group = rng.integers(0, stride, rows)
    members = group[:, None] + stride * rng.integers(0, k, (rows, 3))
    r = np.repeat(np.arange(rows), 3)
    nets = part_nets(r, members.ravel(), parts, members[:, 0])
    v = np.zeros((parts, parts), np.int64)
    for i in range(nets.count):  # a small loop over sets: the test's own reference volume
        pins = nets.pins[nets.ptr[i]:nets.ptr[i + 1]]
        v[pins[0], pins[1:]] += nets.weights[i]
    return nets, v


@pytest.mark.parametrize("how", ["hypergraph", "graph"])
def test_a_bad_order_is_placed_better_and_reproducibly(how):
    nets, v = interleaved(12, 4)
    p = place(nets, v, 4, how, seed=3)
    assert p.how == how and p.inter_rows < p.block_rows == inter_rows(nets, block_nodes(12, 4))
    node = p.rank_of_part // 4
    assert np.bincount(node).tolist() == [4, 4, 4] and sorted(p.rank_of_part.tolist()) == list(range(12))
    assert inter_rows(nets, node) == p.inter_rows
    assert np.array_equal(place(nets, v, 4, how, seed=3).rank_of_part, p.rank_of_part)


def test_a_short_last_node_and_the_trivial_cases():
    nets, v = interleaved(10, 2)
    p = place(nets, v, 4, "hypergraph")  # nodes of 4, 4, 2
    assert np.bincount(p.rank_of_part // 4).tolist() == [4, 4, 2]
    for k in (1, 10, 20):
        q = place(nets, v, k)
        assert q.how == "block" and q.rank_of_part.tolist() == list(range(10))


def test_a_good_order_is_kept():
    nets = part_nets(np.repeat(np.arange(6), 2), [0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5], 6, [0, 2, 4, 0, 2, 4])  # pairs
    p = place(nets, np.eye(6, k=1, dtype=np.int64), 2)
    assert p.how == "block" and p.inter_rows == p.block_rows == 0


def test_swap_deltas_are_the_exact_change_of_every_swap():
    import scipy.sparse as sp

    from shgcn.pipeline.placement import swap_deltas

    nets, _ = interleaved(12, 3, rows=60, seed=2)
    node = np.random.default_rng(1).permutation(12) // 4
    net = np.repeat(np.arange(nets.count), np.diff(nets.ptr))
    inc = sp.csr_matrix((np.ones(net.size), (net, nets.pins)), shape=(nets.count, 12))
    d = swap_deltas(nets, node, inc)
    base = inter_rows(nets, node)
    for u in range(12):  # every pair: the test's own reference
        for v in range(12):
            if node[u] == node[v]:
                assert d[u, v] == np.inf
                continue
            swapped = node.copy()
            swapped[u], swapped[v] = node[v], node[u]
            assert d[u, v] == inter_rows(nets, swapped) - base


def test_swap_search_keeps_the_node_sizes_and_never_loses():
    from shgcn.pipeline.placement import swap_search

    nets, _ = interleaved(12, 4, seed=5)
    start = np.arange(12) // 4
    node = swap_search(nets, start)
    assert np.bincount(node).tolist() == [4, 4, 4]
    assert inter_rows(nets, node) < inter_rows(nets, start)
    assert np.array_equal(swap_search(nets, start), node) and np.array_equal(swap_search(nets, node), node)
