"""Volume balancing (pipeline/models/vb/__init__.py): the refinement's guarantees
(max send and receive never rise, balance and total within their bounds) on
random graphs and partitions, and the -vb models' conformance."""

import numpy as np
import pytest
import scipy.sparse as sp
from helpers.graphs import FIG2_EDGES, FIG2_PART, a_hat, random_a_hat, send_recv
from hypothesis import given, settings
from hypothesis import strategies as st

from shgcn.pipeline.errors import UserError
from shgcn.pipeline.metrics.volume import volume_matrix
from shgcn.pipeline.models.vb import Search, volume_balance
from shgcn.testing.partitioners import PartitionerTests


class TestHpVb(PartitionerTests):
    model = "hp-vb"
    bad_options = {"max_total_increase": float("nan")}


class TestGpVb(PartitionerTests):
    model = "gp-vb"
    balance_slack = 0.05  # its start is METIS's
    bad_options = {"vb_messages": "maybe"}


def load_imbalance(a, part, parts):
    load = np.bincount(part, weights=np.diff(a.indptr), minlength=parts)
    return load.max() / load.mean() - 1


def check_guarantees(a, part, parts, eps, mti, seed, search=Search()):
    s0, r0 = send_recv(a, part, parts)
    imb0 = load_imbalance(a, part, parts)
    new, info = volume_balance(a, part, parts, eps=eps, max_total_increase=mti, seed=seed, search=search)
    s, r = send_recv(a, new, parts)
    assert new.dtype == np.int32 and new.shape == part.shape and new.min() >= 0 and new.max() < parts
    assert s.max() <= s0.max()
    assert r.max() <= r0.max()
    assert s.sum() <= np.floor(s0.sum() * (1 + mti))
    mean = np.diff(a.indptr).sum() / parts
    assert np.bincount(new, weights=np.diff(a.indptr), minlength=parts).max() <= max(np.floor((1 + eps) * mean),
                                                                                      (1 + imb0) * mean + 1e-9)
    end = info["end"]
    assert (end["max_send"], end["max_recv"], end["total_volume"]) == (s.max(), r.max(), s.sum())
    return new, info


@settings(max_examples=25, deadline=None)
@given(n=st.integers(8, 150), deg=st.floats(1.0, 8.0), parts=st.integers(2, 9), seed=st.integers(0, 10**6),
       directed=st.booleans(), eps=st.sampled_from([0.03, 0.1, 0.5]), mti=st.sampled_from([0.0, 0.02, 0.1]),
       skew=st.booleans())
def test_never_worse_and_within_bounds(n, deg, parts, seed, directed, eps, mti, skew):
    a = random_a_hat(n, deg, seed, directed)
    rng = np.random.default_rng(seed)
    # skew: an unbalanced start (imbalance above eps), which must not get worse
    p = rng.dirichlet(np.ones(parts) * 0.5) if skew else None
    part = rng.choice(parts, size=a.shape[0], p=p).astype(np.int32)
    check_guarantees(a, part, parts, eps, mti, seed)


def max_messages(a, part, parts):
    nz = volume_matrix(a, part, parts) > 0
    return nz.sum(1).max(), nz.sum(0).max()


@settings(max_examples=25, deadline=None)
@given(n=st.integers(8, 150), deg=st.floats(1.0, 8.0), parts=st.integers(2, 12), seed=st.integers(0, 10**6),
       directed=st.booleans(), mti=st.sampled_from([0.0, 0.05, 0.3]), weight=st.sampled_from([1.0, 20.0]))
def test_message_passes_lower_no_maximum_of_the_volume_passes(n, deg, parts, seed, directed, mti, weight):
    # with messages priced, the volume passes run first exactly as without, then the message passes never
    # raise the maximum messages, send or receive, and keep the total within the same bound
    a = random_a_hat(n, deg, seed, directed)
    part = np.random.default_rng(seed).integers(0, parts, a.shape[0]).astype(np.int32)
    off, _ = volume_balance(a, part, parts, eps=0.1, max_total_increase=mti, seed=seed)
    on, info = check_guarantees(a, part, parts, 0.1, mti, seed, Search(messages=weight))
    s0, r0 = send_recv(a, off, parts)
    s, r = send_recv(a, on, parts)
    assert s.max() <= s0.max() and r.max() <= r0.max()
    assert all(x <= y for x, y in zip(max_messages(a, on, parts), max_messages(a, off, parts)))


def test_messages_fall_on_a_graph_of_many_parts():
    a = random_a_hat(600, 4, 11)
    part = np.random.default_rng(11).integers(0, 40, a.shape[0]).astype(np.int32)
    off, _ = volume_balance(a, part, 40, eps=0.1, max_total_increase=0.3, seed=0)
    on, info = check_guarantees(a, part, 40, 0.1, 0.3, 0, Search(messages=20.0))
    assert max(max_messages(a, on, 40)) < max(max_messages(a, off, 40))
    again, _ = volume_balance(a, part, 40, eps=0.1, max_total_increase=0.3, seed=0, search=Search(messages=20.0))
    np.testing.assert_array_equal(on, again)


def test_lowers_the_maximum_and_is_deterministic():
    a = random_a_hat(400, 6, 7)
    part = np.random.default_rng(7).integers(0, 8, a.shape[0]).astype(np.int32)
    new, info = check_guarantees(a, part, 8, 0.1, 0.02, seed=3)
    assert info["end"]["max_send"] < info["start"]["max_send"]
    assert info["end"]["max_recv"] < info["start"]["max_recv"]
    again, _ = volume_balance(a, part, 8, eps=0.1, max_total_increase=0.02, seed=3)
    np.testing.assert_array_equal(new, again)


def test_bad_input():
    a = a_hat(6, FIG2_EDGES)
    with pytest.raises(UserError, match="0..2"):
        volume_balance(a, np.array([0, 0, 1, 1, 2, 3]), 3)
    with pytest.raises(UserError, match="shape"):
        volume_balance(a, FIG2_PART[:5], 3)
    no_diag = sp.csr_matrix(np.ones((3, 3)) - np.eye(3))
    with pytest.raises(UserError, match="diagonal"):
        volume_balance(no_diag, np.array([0, 1, 1]), 2)
    with pytest.raises(UserError, match="eps"):
        volume_balance(a, FIG2_PART, 3, eps=0)


def test_a_vb_model_holds_its_base_and_needs_no_registry():
    from shgcn.pipeline.models import REGISTRY, PartitionConfig
    from shgcn.pipeline.models.vb import VolumeBalanced, refined

    for name in ("hp", "gp", "shp"):
        vb = REGISTRY[f"{name}-vb"]
        assert vb.base is REGISTRY[name] and vb == refined(REGISTRY[name]) and vb.starts_from == (name,)
    with pytest.raises(ValueError, match="no base model"):
        VolumeBalanced("x-vb", "no base").check(PartitionConfig(parts=2))
