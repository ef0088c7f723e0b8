"""Samplers, mini-batch hypergraphs, Hoeffding counts and the shp model."""

import multiprocessing as mp

import numpy as np
import pytest
import scipy.sparse as sp
from helpers.graphs import FIG2_EDGES, FIG2_PART, a_hat, graph

from shgcn.pipeline import batch_quality, quality, stochastic
from shgcn.pipeline.errors import UserError
from shgcn.pipeline.hypergraph import (
    batch_nets,
    connectivity,
    hoeffding_nets,
    merge_identical,
    net_connectivity,
    stochastic_hypergraph,
)
from shgcn.pipeline.inclusion import inclusion
from shgcn.pipeline.partition import PartitionConfig
from shgcn.pipeline.stochastic import SHPConfig, Validation, build_shp, column_nets, expected_surrogate
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
    valid = {tuple(s.batch(k, sample.VALIDATION)) for k in range(50)}
    assert not build & held and not valid & held and not valid & build
    # different generators, not just different batches: the seed sequences differ in the stream word
    assert len(set(sample.STREAMS.values())) == len(sample.STREAMS) == 5
    assert (sample.BUILD, sample.HELDOUT, sample.TRAIN, sample.NORM) == (0, 1, 2, 3)  # stable meaning


class _Recorder:
    """Wraps ``Sampler.batch`` to record every (stream, batch number) drawn."""

    def __init__(self, monkeypatch):
        self.calls: list[tuple[int, int]] = []
        real = sample.Sampler.batch

        def batch(this, k, stream=sample.BUILD):
            self.calls.append((stream, k))
            return real(this, k, stream)

        monkeypatch.setattr(sample.Sampler, "batch", batch)

    def take(self) -> set[tuple[int, int]]:
        out, self.calls = set(self.calls), []
        return out


@pytest.mark.parametrize("kind", ["edge", "rw"])
def test_heldout_batches_are_never_used_by_shp(sbm_graph, monkeypatch, kind):
    """shp draws its sampled nets from BUILD and chooses on VALIDATION; the
    reported volume uses HELDOUT batches 0..eval-1 only, and says so."""
    g, a = sbm_graph
    rec = _Recorder(monkeypatch)
    pcfg = PartitionConfig(parts=4, seed=0)
    scfg = SHPConfig(sampler=kind, batch_size=100, eval_batches=30, validation_batches=20, max_rounds=2)
    res = build_shp(a, g.adj, pcfg, scfg)
    used = rec.take()
    assert {s for s, _ in used} == {sample.BUILD, sample.VALIDATION}
    assert {k for s, k in used if s == sample.VALIDATION} == set(range(20))
    s = sample.Sampler(g.adj, scfg.sampler_config(a.shape[0], 0))
    ds = batch_quality.minibatch_dataset(a, s, {"shp": res.part}, 4, eval_batches=30, theta=0.1, delta=0.5)
    reported = {k for st, k in rec.take() if st == sample.HELDOUT}
    assert reported == set(range(30))
    assert (ds.attrs["heldout_stream"], ds.attrs["validation_stream"], ds.attrs["build_stream"]) == \
        (sample.HELDOUT, sample.VALIDATION, sample.BUILD)
    assert "never used to build or choose" in ds.attrs["streams"]
    assert res.record(scfg)["validation_stream"] == sample.VALIDATION


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
    res = build_shp(a, g.adj, pcfg, SHPConfig(batch_size=120, max_rounds=2), starts={"gp": start})
    e = {k: batch_quality.expected_volume_node(a, x, 4, 120)[0] for k, x in (("start", start), ("shp", res.part))}
    assert e["shp"] <= e["start"]
    assert (res.rounds[0]["step"], res.rounds[0]["model"]) == ("start", "gp") and res.required_nets == 624
    assert quality.partition_quality(a, res.part, 4).imbalance <= 0.03 + 1e-9
    # deterministic
    again = build_shp(a, g.adj, pcfg, SHPConfig(batch_size=120, max_rounds=2), starts={"gp": start})
    assert np.array_equal(res.part, again.part)


def _bad_partitioner(parts: int):
    """A stand-in for Mt-KaHyPar that returns a random partition: worse than any start."""
    def partition(hg, cfg, initial=None, vcycles=1):
        return np.random.default_rng(7).integers(0, parts, hg.n_vertices).astype(np.int32)
    return partition


@pytest.mark.parametrize("kind", ["node", "edge"])
def test_shp_keeps_no_step_that_is_worse_than_its_best_start(sbm_graph, monkeypatch, kind):
    """Every refinement returns a worse partition: shp must return its best
    start, bit for bit, and record every other step as not kept."""
    from shgcn.pipeline.partition import metis_partition, random_partition
    g, a = sbm_graph
    pcfg = PartitionConfig(parts=4, seed=0)
    good, bad = metis_partition(a, pcfg), random_partition(a, pcfg)
    monkeypatch.setattr(stochastic, "kahypar_partition", _bad_partitioner(4))
    scfg = SHPConfig(sampler=kind, batch_size=120, max_rounds=2, min_gain=0.0, validation_batches=20)
    res = build_shp(a, g.adj, pcfg, scfg, starts={"gp": bad, "hp": good})  # the better one is "hp" here
    assert np.array_equal(res.part, good) and res.chosen == "start hp"
    assert [(r["step"], r.get("model"), r["kept"]) for r in res.rounds[:2]] == \
        [("start", "gp", True), ("start", "hp", True)]  # gp was the incumbent until hp beat it
    assert not any(r["kept"] for r in res.rounds[2:]) and len(res.rounds) > 3
    objective = Validation(a, sample.Sampler(g.adj, scfg.sampler_config(a.shape[0], 0)), 4, 20)
    assert all(r["validation_volume"] > objective(good) for r in res.rounds[2:])


def test_shp_starts_from_the_best_start_and_keeps_improvements(sbm_graph):
    from shgcn.pipeline.partition import metis_partition, random_partition
    g, a = sbm_graph
    pcfg = PartitionConfig(parts=4, seed=0)
    good, bad = metis_partition(a, pcfg), random_partition(a, pcfg)
    res = build_shp(a, g.adj, pcfg, SHPConfig(batch_size=120, max_rounds=1), starts={"gp": bad, "hp": good})
    vols = [r["validation_volume"] for r in res.rounds]
    best = np.minimum.accumulate(vols)
    assert [r["kept"] for r in res.rounds] == [True] + list(np.diff(best) < 0)
    assert res.rounds[2]["step"] == "surrogate from hp"  # hp is refined first
    exact = batch_quality.expected_volume_node(a, res.part, 4, 120)[0]
    assert exact == pytest.approx(best[-1]) and exact <= batch_quality.expected_volume_node(a, good, 4, 120)[0]


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
    assert [r["step"] for r in res.rounds] == ["start", "surrogate from gp"]
    free = build_shp(a, g.adj, pcfg, SHPConfig(batch_size=120, max_rounds=2, min_gain=0.0, tangent_passes=0))
    assert [r["step"] for r in free.rounds][:4] == ["start", "surrogate from gp", "surrogate from scratch",
                                                    "round 0"]


def test_edge_inclusion_probabilities_are_exact():
    """Against every sequence of the m = 2 edge draws, enumerated."""
    import itertools
    g, a = graph(6, FIG2_EDGES), a_hat(6, FIG2_EDGES)
    s = sample.Sampler(g.adj, sample.SamplerConfig(kind="edge", size=5, seed=0))  # size // 2 = 2 draws
    inc = inclusion(a, s)
    er, ec, p = s.edge_probabilities()
    assert s.edge_draws == 2 and p.sum() == pytest.approx(1)
    vertex, pair = np.zeros(6), np.zeros(inc.rows.size)
    for seq in itertools.product(range(p.size), repeat=2):
        drawn = np.zeros(6, bool)
        drawn[er[list(seq)]] = drawn[ec[list(seq)]] = True
        prob = p[seq[0]] * p[seq[1]]
        vertex += prob * drawn
        pair += prob * (drawn[inc.rows] & drawn[inc.cols])
    np.testing.assert_allclose(inc.vertex, vertex, atol=1e-12)
    np.testing.assert_allclose(inc.pair, pair, atol=1e-12)


@pytest.mark.parametrize("kind", ["node", "rw"])
def test_inclusion_probabilities_match_sampled_batches(kind):
    n = 150
    edges = [(i, (i * 7 + 3) % n) for i in range(n)] + [(i, (i + 1) % n) for i in range(n)]
    g, a = graph(n, edges), a_hat(n, edges)
    s = sample.Sampler(g.adj, sample.SamplerConfig(kind=kind, size=24, seed=1))
    inc = inclusion(a, s)
    k = 4000
    drawn = np.zeros((k, n), bool)
    for i in range(k):
        drawn[i, s.batch(i, sample.HELDOUT)] = True
    v, pr = drawn.mean(0), (drawn[:, inc.rows] & drawn[:, inc.cols]).mean(0)
    # means over all vertices and pairs: within 3 standard errors of the k batches
    assert abs(v.mean() - inc.vertex.mean()) < 3 * np.sqrt(inc.vertex.mean() / k / n) + 1e-3
    assert abs(pr.mean() - inc.pair.mean()) < 3 * np.sqrt(inc.pair.mean() / k / pr.size) + 1e-3
    assert np.abs(v - inc.vertex).max() < 5 * np.sqrt(inc.vertex.max() / k)


@pytest.mark.parametrize("parts", [3, 64, 65])
def test_net_connectivity_counts_distinct_parts(parts):
    rng = np.random.default_rng(parts)
    sizes = rng.integers(0, 9, 300)
    ptr = np.concatenate([[0], np.cumsum(sizes)])
    pins = rng.integers(0, 500, ptr[-1])
    part = rng.integers(0, parts, 500)
    want = [np.unique(part[pins[ptr[k]:ptr[k + 1]]]).size for k in range(sizes.size)]
    assert net_connectivity(ptr, pins, part, parts).tolist() == want


def test_batch_set_equals_batch_traffic():
    a = sp.csc_matrix(a_hat(6, FIG2_EDGES))
    batches = [np.array([0, 1, 3]), np.array([1, 2, 4]), np.array([0, 2, 5]), np.arange(6)]
    tot, mx, lam = batch_quality.BatchSet(a, batches).volumes(FIG2_PART, 3)
    for i, b in enumerate(batches):
        send, _, lam_sum, nets = batch_quality.batch_traffic(a, b, FIG2_PART, 3)
        assert (tot[i], mx[i]) == (send.sum(), send.max()) and lam[i] == pytest.approx(lam_sum / nets)
    assert tot[-1] == quality.partition_quality(a_hat(6, FIG2_EDGES), FIG2_PART, 3).total_volume == 9


def _store_files(root) -> dict[str, bytes]:
    """Every file of a store but its root metadata and the timings."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.name != "zarr.json" and "seconds" not in p.relative_to(root).as_posix()}


@pytest.mark.slow
def test_same_seed_gives_byte_identical_shp_store(tmp_path, client):
    """A build with gp, hp and shp (default options: no time budget, so no step depends on the
    clock) twice with one seed: the same partitions and mini-batch table,
    byte for byte; the table names its streams."""
    from pathlib import Path

    from shgcn import store
    from shgcn.pipeline.compose import BuildConfig, build

    def make(name):
        cfg = BuildConfig(source="sbm:n=300,classes=3,degree=6,features=4,seed=2", out=str(tmp_path / name), parts=2,
                          models=("gp", "hp", "shp"),  # the default: no time budget
                          shp=SHPConfig(sampler="rw", eval_batches=20, validation_batches=10, max_rounds=1,
                                        tangent_passes=1))
        return build(cfg, client, echo=lambda *a: None)

    first, again = make("a.zarr"), make("b.zarr")
    fa, fb = _store_files(Path(first.path)), _store_files(Path(again.path))
    assert fa.keys() == fb.keys() and [k for k in fa if fa[k] != fb[k]] == []
    s = store.open_store(first.path)
    assert np.array_equal(s.partition("shp"), store.open_store(again.path).partition("shp"))
    mb = s.minibatch()
    assert (mb.attrs["heldout_stream"], mb.attrs["validation_stream"]) == (sample.HELDOUT, sample.VALIDATION)
    assert "never used to build or choose" in mb.attrs["streams"]
