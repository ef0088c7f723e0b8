"""The partition models' protocol and what flows through it (pipeline/models/base.py)."""

import numpy as np
import pytest
import scipy.sparse as sp

from shgcn.pipeline.errors import UserError
from shgcn.pipeline.models.base import MATRIX, Assignment, Figures, Inputs, Model, Option, PartitionConfig, PartitionResult
from shgcn.pipeline.sources.counts import Counts

PRESET = Option("--my-preset", "fast", "a preset", choices=("fast", "slow"))


def test_an_option_reaches_the_model_by_its_dest():
    assert PRESET.dest == "my_preset" and Option("-x", 1, "h", type=int).dest == "x"
    assert PartitionConfig(parts=2).option(PRESET) == "fast"  # missing: its default
    assert PartitionConfig(parts=2, options={"my_preset": "slow"}).option(PRESET) == "slow"


def test_vertex_weights_are_the_given_ones_else_the_rows_nonzeros():
    a = sp.csr_matrix(np.array([[1, 1, 0], [0, 1, 0], [1, 1, 1]], np.float32))
    assert Inputs(3, a).vertex_weights().tolist() == [2, 1, 3]
    assert Inputs(3, a, weights=np.array([5, 6, 7], np.int32)).vertex_weights().dtype == np.int64
    assert Inputs(3, a, weights=np.array([5, 6, 7])).vertex_weights().tolist() == [5, 6, 7]
    assert Inputs(4).vertex_weights().tolist() == [1, 1, 1, 1]  # no matrix: every row alike


def test_model_defaults():
    m = Model("m", "a model", options=(PRESET,))
    cfg = PartitionConfig(parts=2)
    assert m.needs == frozenset({MATRIX}) and m.needs_for(cfg) == m.needs and m.starts_from == ()
    assert (m.balance, m.record) == ("weight", "partitions")
    assert not m.in_child(Inputs(2), cfg) and m.extra_quality(cfg, 2) is None
    assert Model("c", "in a child", runs_in_child=True).in_child(Inputs(2), cfg)  # native code: in a child
    # the plan: its own fitted figures under its name, else gp's (the default graph partitioner), no advice
    c = Counts(n=2, nnz=4, edges=2, features=1, classes=2, directed=False, how="test")
    assert m.figures(c, {}, set()) == Figures("m") and (m.resembles, m.advice(c, {})) == ("gp", "")
    assert not m.layout_first and m.check_models(("m",), cfg) is None
    m.check(cfg)
    with pytest.raises(UserError, match=r"^--my-preset 'medium': choose one of fast, slow$"):
        m.check(PartitionConfig(parts=2, options={"my_preset": "medium"}))
    with pytest.raises(NotImplementedError):
        m.run(Inputs(2), cfg)


def test_results_carry_their_record():
    a = Assignment(np.array([0, 1], np.int32))
    assert a.info == {} and a.info is not Assignment(a.part).info
    r = PartitionResult("gp", a.part, 1.5)
    assert (r.info, r.peak_rss_mib) == ({}, 0.0)
