"""Node data block by block (pipeline/nodes.py): the plan of where features, labels and split come from, values
that depend on (seed, vertex) only, the checks of what the user asked for."""

import numpy as np
import pytest

from shgcn.pipeline import nodes
from shgcn.pipeline.errors import UserError
from shgcn.pipeline.nodes import NodePlan, NodeSpec
from shgcn.pipeline.sources.records import NodeSource


def test_parse_generated():
    assert nodes.parse_generated("auto", "features") is None
    assert nodes.parse_generated("random:64", "features") == 64 and nodes.parse_generated("random:1e3", "x") == 1000
    with pytest.raises(UserError, match=r"^--features 'gauss:3': expected 'auto' or 'random:N' with N >= 1, or a "):
        nodes.parse_generated("gauss:3", "features")
    with pytest.raises(UserError, match=r"^--labels 'random:0': expected 'auto' or 'random:N' with N >= 1$"):
        nodes.parse_generated("random:0", "labels")


@pytest.mark.parametrize("spec, fragment", [
    (NodeSpec(feature_dtype="float64"), "--feature-dtype 'float64'"),
    (NodeSpec(feature_norm="l2"), "--feature-norm 'l2'"),
    (NodeSpec(split=(0.6, 0.5, 0.2)), "summing to at most 1"),
    (NodeSpec(split=(0.0, 0.5, 0.5)), "the train fraction is 0"),
])
def test_a_spec_no_build_can_use(spec, fragment):
    with pytest.raises(UserError, match=fragment):
        spec.check()


def test_generated_features_must_fit_the_budget():
    nodes.check_generated(NodeSpec(features="random:8"), 100, 3200)
    with pytest.raises(UserError, match="--features random:8: 101 vertices x 8 features"):
        nodes.check_generated(NodeSpec(features="random:8"), 101, 3200)
    nodes.check_generated(NodeSpec(features="x.npy"), 10**9, 1)  # a file's size is checked when it is read


def test_source_facts():
    src = NodeSource(np.zeros((4, 3)), np.array([0, 2, -1, 1], np.int32), {"train": np.ones(4, bool)})
    assert nodes.source_facts(src) == (3, 3, True, 4, "single")
    multi = NodeSource(None, np.zeros((4, 5), bool), None, None, "multi")
    assert nodes.source_facts(multi) == (None, 5, False, 4, "multi")
    assert nodes.source_facts(NodeSource(np.zeros((4, 1)), np.zeros(3)))[3] == -1  # lengths disagree
    assert nodes.source_facts(None) == (None, None, False, None, "single")


def test_plan_takes_the_source_else_generates():
    facts = (3, 2, True, 5, "single")
    assert nodes.plan(NodeSpec(), 5, "g", facts, None, []) == NodePlan(3, 2, "source", "source", "source")
    assert nodes.plan(NodeSpec(features="random:7"), 5, "g", facts, None, []).features_from == "random"
    assert nodes.plan(NodeSpec(), 5, "g", (None, None, False, None, "single"), None, []) == NodePlan(
        nodes.DEFAULT_DIM, nodes.DEFAULT_CLASSES, "random", "random", "random")
    assert nodes.plan(NodeSpec(features="f.npy"), 5, "g", facts, ((5, 9), "<f4"), []).dim == 9
    with pytest.raises(UserError, match="f.npy: feature matrix has 4 rows but the graph has 5 vertices"):
        nodes.plan(NodeSpec(features="f.npy"), 5, "g", facts, ((4, 9), "<f4"), [])
    with pytest.raises(UserError, match="g: the node data has 6 rows, the graph has 5 vertices"):
        nodes.plan(NodeSpec(), 5, "g", (3, 2, True, 6, "single"), None, [])


def test_split_codes_are_seeded_with_exact_counts():
    codes = nodes.split_codes(10, (0.5, 0.2, 0.2), seed=3)
    assert np.bincount(codes, minlength=4).tolist() == [1, 5, 2, 2]
    assert np.array_equal(codes, nodes.split_codes(10, (0.5, 0.2, 0.2), seed=3))


def test_generated_rows_do_not_depend_on_the_blocks():
    spec, plan = NodeSpec(features="random:3", labels="random:4", seed=2), NodePlan(3, 4, "random", "random", "random")
    codes = nodes.split_codes(nodes.NODE_CHUNK + 10, spec.split, spec.seed)
    whole = nodes.node_block(nodes.NODE_CHUNK - 5, nodes.NODE_CHUNK + 10, spec, plan, None, codes)
    parts = [nodes.node_block(a, b, spec, plan, None, codes) for a, b in
             ((nodes.NODE_CHUNK - 5, nodes.NODE_CHUNK), (nodes.NODE_CHUNK, nodes.NODE_CHUNK + 10))]
    for name in ("features", "labels", "train"):
        assert np.array_equal(getattr(whole, name), np.concatenate([getattr(p, name) for p in parts]))
    assert whole.labels.max() < 4
    part = nodes.node_block(nodes.NODE_CHUNK, nodes.NODE_CHUNK + 2, spec, plan, None, codes)
    assert part.lo == nodes.NODE_CHUNK and np.array_equal(part.features, whole.features[5:7])


def test_a_block_of_the_sources_data():
    src = NodeSource(np.array([[1.0, 3.0], [0.0, 0.0], [np.inf, 1.0]]), np.array([1, 0, 1], np.int32),
                     {k: np.array([k == "train", k == "val", k == "test"]) for k in ("train", "val", "test")})
    b = nodes.node_block(0, 3, NodeSpec(), NodePlan(2, 2, "source", "source", "source"), src, None)
    np.testing.assert_array_equal(b.features[:2], [[1.0, 3.0], [0.0, 0.0]])
    assert b.features.dtype == np.float32 and b.labels.tolist() == [1, 0, 1] and b.train.tolist() == [True, False, False]
    assert b.bad == (2, 0)
    with pytest.raises(ValueError, match="a random split needs its codes"):
        nodes.node_block(0, 3, NodeSpec(), NodePlan(2, 2, "source", "source", "random"), src, None)


def test_row_normalized_features():
    x = np.array([[1.0, 3.0], [0.0, 0.0]], np.float32)
    np.testing.assert_array_equal(nodes.normalize_features(x, "row"), [[0.25, 0.75], [0.0, 0.0]])  # zero rows stay
    assert nodes.normalize_features(x, "none") is x
    with pytest.raises(UserError, match="--feature-norm 'l1'"):
        nodes.normalize_features(x, "l1")


def test_node_data_classes():
    d = nodes.NodeData(np.zeros((3, 1)), np.array([0, 4, -1]), *(np.zeros(3, bool),) * 3)
    assert d.classes == 5
    assert nodes.NodeData(np.zeros((3, 1)), np.zeros((3, 7), bool), *(np.zeros(3, bool),) * 3).classes == 7
