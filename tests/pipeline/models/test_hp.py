import numpy as np
import pytest
from helpers.graphs import random_a_hat

from shgcn.pipeline.errors import UserError
from shgcn.pipeline.metrics.hypergraph import column_net, connectivity_minus_one
from shgcn.pipeline.metrics.volume import partition_quality
from shgcn.pipeline.models import Inputs, PartitionConfig, default_options
from shgcn.pipeline.models.hp import kahypar_preset
from shgcn.pipeline.models.kahypar import kahypar_partition
from shgcn.pipeline.models.run import run
from shgcn.testing.partitioners import PartitionerTests


class TestHypergraphPartition(PartitionerTests):
    model = "hp"
    bad_options = {"hp_preset": "fastest"}


@pytest.mark.slow  # quick-suite budget: CI runs it (-m '')
class TestHypergraphPartitionFast(PartitionerTests):
    model = "hp"
    options = {"hp_preset": "fast"}


@pytest.mark.slow  # quick-suite budget: CI runs it (-m '')
class TestHypergraphPartitionQuality(PartitionerTests):
    model = "hp"
    options = {"hp_preset": "quality"}


class TestHypergraphPartitionKahypar(PartitionerTests):
    model = "hp"
    options = {"hp_preset": "mtkahypar-deterministic"}


def test_beats_random_within_the_hard_bound(sbm_graph):
    a, _ = sbm_graph
    cfg = PartitionConfig(parts=4, eps=0.05, seed=1,
                          options={**default_options(), "hp_preset": "mtkahypar-deterministic"})
    part = run("hp", Inputs(a.shape[0], a), cfg).part
    q = partition_quality(a, part, 4)
    assert q.imbalance <= 0.05 + 1e-9  # Mt-KaHyPar's eps is a hard bound
    rp = partition_quality(a, run("rp", Inputs(a.shape[0]), cfg).part, 4)
    assert q.total_volume < 0.7 * rp.total_volume


def test_improving_a_partition_is_reproducible(sbm_graph):
    a, _ = sbm_graph
    hg = column_net(a)
    start = kahypar_partition(hg, 4, 0.05, 5, threads=2)
    improved = kahypar_partition(hg, 4, 0.05, 5, 2, initial=start, vcycles=1)
    assert np.array_equal(improved, kahypar_partition(hg, 4, 0.05, 5, 2, initial=start, vcycles=1))
    # V-cycles never make the objective worse
    assert connectivity_minus_one(hg, improved, 4) <= connectivity_minus_one(hg, start, 4)


def test_unknown_preset_is_a_user_error(sbm_graph):
    a, _ = sbm_graph
    with pytest.raises(UserError, match="--hp-preset 'fast'"):
        kahypar_partition(column_net(a), 2, 0.03, 0, preset="fast")


def _cfg(parts=4, seed=1, **options):
    return PartitionConfig(parts=parts, eps=0.03, seed=seed, options={**default_options(), **options})


def _volume(a, part, parts=4):
    return partition_quality(a, part, parts).total_volume


def test_fast_refines_kaminpars_partition_for_the_hypergraph(sbm_graph):
    a, _ = sbm_graph
    res = run("hp", Inputs(a.shape[0], a), _cfg(hp_preset="fast"))
    assert res.info["preset"] == "fast" and list(res.info["starts"]) == ["kaminpar default"]
    refine = res.info["starts"]["kaminpar default"]
    assert refine["end"] <= refine["start"] and _volume(a, res.part) == refine["end"]


@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.slow), pytest.param(2, marks=pytest.mark.slow)])
def test_default_is_never_above_either_graph_partitioner(seed):
    a = random_a_hat(600, 4.0, seed)
    w = np.diff(a.indptr).astype(np.int64)
    res = run("hp", Inputs(a.shape[0], a, weights=w), _cfg(8, seed))
    starts = res.info["starts"]
    assert res.info["preset"] == "default" and set(starts) == {"kaminpar default", "metis"}
    vol = _volume(a, res.part, 8)
    assert vol == min(s["end"] for s in starts.values()) == starts[res.info["best"]]["end"]
    for options in ({"gp_backend": "metis"}, {"gp_backend": "kaminpar"}):
        gp = run("gp", Inputs(a.shape[0], a, weights=w), _cfg(8, seed, **options)).part
        assert vol <= _volume(a, gp, 8), options


def test_the_builds_gp_partition_is_one_more_start(sbm_graph):
    a, _ = sbm_graph
    planted = np.repeat(np.arange(4, dtype=np.int32), 100)  # sbm: 4 communities of 100 consecutive vertices
    res = run("hp", Inputs(a.shape[0], a, starts={"gp": planted}), _cfg(hp_preset="fast"))
    starts = res.info["starts"]
    assert set(starts) == {"kaminpar default", "gp"}
    assert starts["gp"]["start"] == _volume(a, planted)
    assert _volume(a, res.part) == min(s["end"] for s in starts.values())


@pytest.mark.slow  # quick-suite budget: CI runs it (-m '')
def test_quality_improves_the_default_with_vcycles(sbm_graph):
    a, _ = sbm_graph
    default = run("hp", Inputs(a.shape[0], a), _cfg())
    for preset, starts in (("quality", {"kaminpar default", "metis"}),
                           ("highest", {"kaminpar default", "metis", "mtkahypar"})):
        res = run("hp", Inputs(a.shape[0], a), _cfg(hp_preset=preset))
        assert res.info["vcycles"]["preset"] == "deterministic" and set(res.info["starts"]) == starts
        assert _volume(a, res.part) == res.info["vcycles"]["end"] <= _volume(a, default.part)
        w = np.diff(a.indptr)
        assert np.bincount(res.part, weights=w, minlength=4).max() <= 1.03 * w.sum() / 4


def test_each_preset_names_its_mtkahypar_preset():
    assert [kahypar_preset(_cfg(hp_preset=p)) for p in ("fast", "default", "quality", "highest",
                                                        "mtkahypar-highest_quality")] == \
        ["deterministic", "deterministic", "deterministic", "deterministic", "highest_quality"]


def test_the_plan_figures_with_and_without_metis_start():
    """METIS is a start up to METIS_START_NNZ nonzeros of the default presets: beyond, or with the fast preset, hp
    takes the figures fitted without it (where fitted)."""
    from shgcn.pipeline.models import get
    from shgcn.pipeline.models.hp import METIS_START_NNZ
    from shgcn.pipeline.sources.counts import Counts

    hp = get("hp")
    small = Counts(n=10, nnz=100, edges=90, features=1, classes=2, directed=True, how="t")
    big = Counts(n=10, nnz=METIS_START_NNZ + 1, edges=90, features=1, classes=2, directed=True, how="t")
    fitted = {"partition:hp", "partition:hp-fast"}
    assert hp.figures(small, {}, fitted).key == "hp" and "METIS" in hp.figures(small, {}, fitted).libraries
    assert hp.figures(small, {"hp_preset": "fast"}, fitted).key == hp.figures(big, {}, fitted).key == "hp-fast"
    assert hp.figures(big, {}, {"partition:hp"}).key == "hp"  # no fit without METIS: the one fitted
    assert "--hp-preset fast" in hp.advice(small, {}) and get("hp-vb").advice(small, {}) == hp.advice(small, {})
