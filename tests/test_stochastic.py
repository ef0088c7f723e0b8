"""Samplers, mini-batch hypergraphs, Hoeffding counts and the shp model."""

import multiprocessing as mp

import numpy as np
import pytest
import scipy.sparse as sp
from graphs import FIG2_EDGES, FIG2_PART, a_hat, graph

from shgcn.pipeline import batch_quality, quality
from shgcn.pipeline.errors import UserError
from shgcn.pipeline.hypergraph import batch_nets, connectivity, hoeffding_nets, merge_identical, stochastic_hypergraph
from shgcn.pipeline.partition import PartitionConfig
from shgcn.pipeline.stochastic import SHPConfig, build_shp, column_nets, expected_surrogate
from shgcn.store import sample


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
    vol, mx, mean_lam = batch_quality.batch_volumes(a, batches, FIG2_PART, 3)
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


@pytest.mark.parametrize("kind", sample.SAMPLERS)
def test_batches_are_redrawn_from_their_number(kind):
    g = graph(200, [(i, (i * 7 + 3) % 200) for i in range(200)] + [(i, (i + 1) % 200) for i in range(200)])
    s = sample.Sampler(g.adj, sample.SamplerConfig(kind=kind, size=30, seed=4))
    b = s.batch(17)
    assert np.array_equal(b, np.unique(b)) and b.min() >= 0 and b.max() < 200
    assert np.array_equal(b, sample.Sampler(g.adj, s.cfg).batch(17))
    assert not np.array_equal(b, s.batch(18))
    if kind == "node":
        assert b.size == 30


def _draw(args):
    from shgcn.store import sample as smp
    adj, cfg, k = args
    return smp.Sampler(adj, cfg).batch(k)


def test_batch_k_is_identical_in_another_process():
    g = graph(300, [(i, (i * 11 + 5) % 300) for i in range(300)])
    cfg = sample.SamplerConfig(kind="rw", size=40, seed=9)
    with mp.get_context("spawn").Pool(1) as pool:
        other = pool.map(_draw, [(g.adj, cfg, 5)])[0]
    assert np.array_equal(other, sample.Sampler(g.adj, cfg).batch(5))


def test_heldout_stream_is_disjoint_from_build_stream():
    g = graph(500, [(i, (i * 13 + 1) % 500) for i in range(500)])
    s = sample.Sampler(g.adj, sample.SamplerConfig(kind="node", size=50, seed=1))
    build = {tuple(s.batch(k, sample.BUILD)) for k in range(50)}
    held = {tuple(s.batch(k, sample.HELDOUT)) for k in range(50)}
    assert not build & held
    # different generators, not just different batches: the seed sequences differ in the stream word
    assert sample.BUILD != sample.HELDOUT != sample.TRAIN


def test_closed_form_matches_sampled_expectation():
    rng = np.random.default_rng(0)
    n = 120
    a = a_hat(n, [tuple(e) for e in rng.integers(0, n, (400, 2))])
    part = rng.integers(0, 4, n).astype(np.int32)
    s = sample.Sampler(graph(n, [tuple(e) for e in rng.integers(0, n, (10, 2))]).adj,
                       sample.SamplerConfig(kind="node", size=30, seed=2))
    vols, _, _ = batch_quality.batch_volumes(sp.csc_matrix(a), s.batches(range(3000), sample.HELDOUT), part, 4)
    exact, send = batch_quality.expected_volume_node(a, part, 4, 30)
    assert abs(vols.mean() - exact) < 3 * vols.std() / np.sqrt(vols.size)
    assert send.sum() == pytest.approx(exact)


def test_surrogate_matches_the_exact_expectation_at_its_anchors():
    # a star: the leaves have one other row (the hub), the hub column has d = 12 leaves,
    # so its chord runs through c = 1 and c* = ceil(12 / 4) = 3
    n, batch = 13, 6
    a = a_hat(n, [(0, i) for i in range(1, n)])
    hg = expected_surrogate(a, batch, np.diff(a.indptr))

    def surrogate(part):
        return np.dot(hg.net_weights, connectivity(hg, part, 2) - 1) / 1000

    def exact(part):  # scaled by n/B: given its column in the batch
        return batch_quality.expected_volume_node(a, part, 2, batch)[0] * n / batch

    for c in (1, 3):  # c leaves in part 1 with their own columns; the hub and the rest in part 0
        part = np.array([0] + [1] * c + [0] * (n - 1 - c), np.int32)
        assert surrogate(part) == pytest.approx(exact(part), rel=2e-3)
    part = np.array([0] + [1] * 2 + [0] * 10, np.int32)  # c = 2: the chord lies below the concave f
    assert surrogate(part) < exact(part)


def test_column_nets_have_the_batch_distribution():
    a = sp.csc_matrix(a_hat(6, FIG2_EDGES))
    nets = column_nets(a, 0.5, seed=1, rounds=range(400))
    assert nets.total == 6 * 400
    # column 3 has 4 other rows: a kept net (>= 2 pins) has 1 + Binomial(4, 0.5 | >= 1) pins
    sizes = np.diff(nets.ptr)[nets.columns == 3]
    assert sizes.min() >= 2 and abs(sizes.mean() - (1 + 2 / (1 - 0.5**4))) < 0.15


@pytest.fixture(scope="module")
def sbm_graph():
    from shgcn.pipeline.ingest import to_graph
    from shgcn.pipeline.normalize import normalized_adjacency
    from shgcn.pipeline.synthetic import sbm
    g = to_graph(sbm(n=1200, classes=6, degree=8, seed=5), directed=False)
    return g, normalized_adjacency(g.adj, False)


def test_shp_is_never_worse_than_its_start_on_heldout(sbm_graph):
    from shgcn.pipeline.partition import metis_partition
    g, a = sbm_graph
    pcfg = PartitionConfig(parts=4, seed=0)
    start = metis_partition(a, pcfg)
    res = build_shp(a, g.adj, pcfg, SHPConfig(batch_size=120, max_rounds=2), start=start)
    e = {k: batch_quality.expected_volume_node(a, x, 4, 120)[0] for k, x in (("start", start), ("shp", res.part))}
    assert e["shp"] <= e["start"]
    assert res.rounds[0]["step"] == "start" and res.required_nets == 624
    assert quality.partition_quality(a, res.part, 4).imbalance <= 0.03 + 1e-9
    # deterministic
    again = build_shp(a, g.adj, pcfg, SHPConfig(batch_size=120, max_rounds=2), start=start)
    assert np.array_equal(res.part, again.part)


def test_shp_batches_override_is_the_papers_model(sbm_graph):
    g, a = sbm_graph
    res = build_shp(a, g.adj, PartitionConfig(parts=4, seed=0), SHPConfig(sampler="edge", batch_size=100, batches=5))
    assert res.construction == "batches" and len(res.rounds) == 1 and res.batches_equivalent == 5


@pytest.mark.dataset
def test_hoeffding_estimate_within_theta_of_heldout(shared_data, client):
    """Over 20 fixed seeds, the mean connectivity of the first Hoeffding-many
    nets lies within theta of the held-out mean connectivity in at least
    (1 - delta) of the runs (the bound promises it for each run with
    probability >= 1 - delta)."""
    from shgcn.pipeline import datasets, readers
    from shgcn.pipeline.ingest import to_graph
    from shgcn.pipeline.normalize import normalized_adjacency
    from shgcn.pipeline.partition import random_partition
    ds = datasets.lookup("facebook")
    g = to_graph(readers.read(datasets.locate(ds, shared_data, download=False), ds.format, client), False)
    a = normalized_adjacency(g.adj, False)
    p, theta, delta = 8, 0.1, 0.2
    part = random_partition(a, PartitionConfig(parts=p, seed=0))
    inside = 0
    for seed in range(20):
        s = sample.Sampler(g.adj, sample.SamplerConfig(kind="node", size=100, seed=seed))
        ds_ = batch_quality.minibatch_dataset(a, s, {"rp": part}, p, eval_batches=300, theta=theta, delta=delta)
        inside += abs(float(ds_["estimated_connectivity"][0]) - float(ds_["heldout_connectivity"][0])) <= theta
    assert inside >= (1 - delta) * 20


def test_time_budget_stops_the_sampling_rounds(sbm_graph):
    g, a = sbm_graph
    pcfg = PartitionConfig(parts=4, seed=0)
    res = build_shp(a, g.adj, pcfg, SHPConfig(batch_size=120, max_rounds=4, min_gain=0.0, time_budget=0.0))
    assert [r["step"] for r in res.rounds] == ["start", "expected"]
    free = build_shp(a, g.adj, pcfg, SHPConfig(batch_size=120, max_rounds=2, min_gain=0.0))
    assert [r["step"] for r in free.rounds][:3] == ["start", "expected", "round 0"]
