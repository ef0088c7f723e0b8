import numpy as np
import pytest
from helpers.conformance import PartitionerTests, sbm_graph  # noqa: F401  (the fixture)

from shgcn.pipeline.errors import UserError
from shgcn.pipeline.metrics.hypergraph import column_net, connectivity_minus_one
from shgcn.pipeline.metrics.volume import partition_quality
from shgcn.pipeline.models import Inputs, PartitionConfig, default_options
from shgcn.pipeline.models.kahypar import kahypar_partition
from shgcn.pipeline.models.run import run


class TestHypergraphPartition(PartitionerTests):
    model = "hp"
    bad_options = {"hp_preset": "fastest"}


class TestHypergraphPartitionKahypar(PartitionerTests):
    model = "hp"
    options = {"hp_preset": "deterministic"}


def test_beats_random_within_the_hard_bound(sbm_graph):  # noqa: F811
    a, _ = sbm_graph
    cfg = PartitionConfig(parts=4, eps=0.05, seed=1, options={**default_options(), "hp_preset": "deterministic"})
    part = run("hp", Inputs(a.shape[0], a), cfg).part
    q = partition_quality(a, part, 4)
    assert q.imbalance <= 0.05 + 1e-9  # Mt-KaHyPar's eps is a hard bound
    rp = partition_quality(a, run("rp", Inputs(a.shape[0]), cfg).part, 4)
    assert q.total_volume < 0.7 * rp.total_volume


def test_improving_a_partition_is_reproducible(sbm_graph):  # noqa: F811
    a, _ = sbm_graph
    hg = column_net(a)
    start = kahypar_partition(hg, 4, 0.05, 5, threads=2)
    improved = kahypar_partition(hg, 4, 0.05, 5, 2, initial=start, vcycles=1)
    assert np.array_equal(improved, kahypar_partition(hg, 4, 0.05, 5, 2, initial=start, vcycles=1))
    # V-cycles never make the objective worse
    assert connectivity_minus_one(hg, improved, 4) <= connectivity_minus_one(hg, start, 4)


def test_unknown_preset_is_a_user_error(sbm_graph):  # noqa: F811
    a, _ = sbm_graph
    with pytest.raises(UserError, match="--hp-preset 'fast'"):
        kahypar_partition(column_net(a), 2, 0.03, 0, preset="fast")


def test_fast_refines_kaminpars_partition_for_the_hypergraph(sbm_graph):  # noqa: F811
    a, _ = sbm_graph
    res = run("hp", Inputs(a.shape[0], a), PartitionConfig(parts=4, seed=1, options=default_options()))
    refine = res.info["refine"]
    assert res.info["preset"] == "fast" and refine["end"] <= refine["start"]
    assert partition_quality(a, res.part, 4).total_volume == refine["end"]
