import numpy as np
from helpers.conformance import PartitionerTests, sbm_graph  # noqa: F401  (the fixture)

from shgcn.pipeline.metrics.volume import partition_quality
from shgcn.pipeline.models import Inputs, PartitionConfig, get
from shgcn.pipeline.models.gp import CHILD_NNZ, symmetric_pattern
from shgcn.pipeline.models.run import run


class TestGraphPartition(PartitionerTests):
    model = "gp"
    balance_slack = 0.05  # METIS' ufactor is a target, not a bound


def test_beats_random(sbm_graph):  # noqa: F811
    a, _ = sbm_graph
    cfg = PartitionConfig(parts=4, eps=0.05, seed=1)
    gp = partition_quality(a, run("gp", Inputs(a.shape[0], a), cfg).part, 4)
    rp = partition_quality(a, run("rp", Inputs(a.shape[0]), cfg).part, 4)
    assert gp.total_volume < 0.7 * rp.total_volume


def test_symmetric_pattern_has_no_diagonal_and_both_directions():
    import scipy.sparse as sp

    a = sp.csr_matrix(np.array([[1, 1, 0], [0, 1, 1], [0, 0, 1]], np.float32))  # 0 -> 1 -> 2, with the diagonal
    xadj, adjncy = symmetric_pattern(a)
    assert xadj.tolist() == [0, 1, 3, 4] and adjncy.tolist() == [1, 0, 2, 1]


def test_runs_in_a_child_only_when_large(sbm_graph):  # noqa: F811
    a, _ = sbm_graph
    cfg = PartitionConfig(parts=2)
    assert not get("gp").in_child(Inputs(a.shape[0], a), cfg)
    assert a.nnz < CHILD_NNZ
