"""The column-net and stochastic hypergraphs (pipeline/metrics/hypergraph.py):
batch nets, merging, connectivity and the Hoeffding count."""

import numpy as np
import pytest
import scipy.sparse as sp
from helpers.graphs import FIG2_EDGES, FIG2_PART, a_hat

from shgcn.pipeline.errors import UserError
from shgcn.pipeline.metrics.batches import batch_volumes
from shgcn.pipeline.metrics.hypergraph import (
    batch_nets,
    connectivity,
    hoeffding_nets,
    merge_identical,
    net_connectivity,
    stochastic_hypergraph,
)


def test_hoeffding_counts():
    # (p-1)^2 / (2 theta^2) ln(2/delta), rounded up: 11250 ln 4 = 15595.8 -> 15596
    assert hoeffding_nets(16, 0.1, 0.5) == 15596
    assert hoeffding_nets(64, 0.1, 0.5) == 275111
    assert hoeffding_nets(4, 0.1, 0.5) == 624
    assert hoeffding_nets(2, 0.5, 2 / np.e) == 2  # 1 / 0.5 * ln(e) = 2 exactly: no extra net
    assert hoeffding_nets(1, 0.1, 0.5) == 0
    with pytest.raises(UserError):
        hoeffding_nets(4, 0, 0.5)

def test_batch_nets_of_a_fixed_batch_set():
    a = sp.csc_matrix(a_hat(6, FIG2_EDGES))
    batches = [np.array([0, 1, 3]), np.array([1, 2, 4])]
    nets = batch_nets(a, batches, keep_single=True)
    # batch {0,1,3}: column 0 -> rows {0,1,3}; column 1 -> {0,1}; column 3 -> {0,3}
    # batch {1,2,4}: column 1 -> {1,2,4}; column 2 -> {1,2}; column 4 -> {1,4}
    got = [nets.pins[nets.ptr[k]:nets.ptr[k + 1]].tolist() for k in range(nets.n_nets)]
    assert nets.columns.tolist() == [0, 1, 3, 1, 2, 4]
    assert got == [[0, 1, 3], [0, 1], [0, 3], [1, 2, 4], [1, 2], [1, 4]]
    assert nets.total == 6
    lam = connectivity(stochastic_hypergraph(nets, np.ones(6, np.int64), merge=False), FIG2_PART, 3)
    assert lam.tolist() == [2, 1, 2, 3, 2, 2]
    # the same column in two batches is two nets of the stochastic hypergraph
    vol, mx, mean_lam = batch_volumes(a, batches, FIG2_PART, 3)
    assert vol.tolist() == [2, 4] and mx.tolist() == [1, 2]
    np.testing.assert_allclose(mean_lam, [5 / 3, 7 / 3])

def test_single_pin_nets_are_dropped_but_counted():
    a = sp.csc_matrix(a_hat(6, FIG2_EDGES))
    nets = batch_nets(a, [np.array([0, 2, 5])])  # no edges inside: three single-pin nets
    assert nets.n_nets == 0 and nets.total == 3

def test_merging_identical_nets_sums_weights():
    a = sp.csc_matrix(a_hat(6, FIG2_EDGES))
    nets = batch_nets(a, [np.array([0, 1, 3]), np.array([0, 1, 3]), np.array([1, 2, 4])])
    ptr, pins, w, first = merge_identical(nets, 6)
    assert w.tolist() == [2, 2, 2, 1, 1, 1] and first.tolist() == [0, 1, 2, 6, 7, 8]
    hg = stochastic_hypergraph(nets, np.ones(6, np.int64))
    # the objective is unchanged by merging
    unmerged = stochastic_hypergraph(nets, np.ones(6, np.int64), merge=False)
    assert np.dot(hg.net_weights, connectivity(hg, FIG2_PART, 3) - 1) == \
        np.dot(unmerged.net_weights, connectivity(unmerged, FIG2_PART, 3) - 1)

@pytest.mark.parametrize("parts", [3, 64, 65])
def test_net_connectivity_counts_distinct_parts(parts):
    rng = np.random.default_rng(parts)
    sizes = rng.integers(0, 9, 300)
    ptr = np.concatenate([[0], np.cumsum(sizes)])
    pins = rng.integers(0, 500, ptr[-1])
    part = rng.integers(0, parts, 500)
    want = [np.unique(part[pins[ptr[k]:ptr[k + 1]]]).size for k in range(sizes.size)]
    assert net_connectivity(ptr, pins, part, parts).tolist() == want
