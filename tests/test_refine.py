"""Volume balancing (pipeline/refine.py): exact per-move effects on hand-built
graphs, incremental pin counts against a recomputation from scratch, and the
refinement's guarantees (max send and receive never rise, balance and total
within their bounds) on random graphs and partitions."""

import numpy as np
import pytest
import scipy.sparse as sp
from helpers.graphs import FIG2_EDGES, FIG2_PART, a_hat
from hypothesis import given, settings
from hypothesis import strategies as st

from shgcn.pipeline import refine
from shgcn.pipeline.errors import UserError
from shgcn.pipeline.quality import volume_matrix


def random_a_hat(n, avg_degree, seed, directed=False):
    rng = np.random.default_rng(seed)
    m = max(1, int(n * avg_degree / 2))
    edges = rng.integers(0, n, size=(m, 2))
    edges = [tuple(e) for e in edges if e[0] != e[1]] or [(0, 1)]
    return a_hat(n, edges, directed=directed)


def send_recv(a, part, parts):
    v = volume_matrix(a, np.asarray(part), parts)
    return v.sum(1), v.sum(0)


def load_imbalance(a, part, parts):
    load = np.bincount(part, weights=np.diff(a.indptr), minlength=parts)
    return load.max() / load.mean() - 1


def test_figure2_start_counts():
    a = a_hat(6, FIG2_EDGES)
    pc = refine.PinCounts(a, FIG2_PART, 3)
    assert pc.send.tolist() == [3, 3, 3] and pc.recv.tolist() == [3, 4, 2] and pc.total == 9
    # net 3 (column 3): pins 0, 2, 3, 4, 5 in parts 0, 1, 1, 2, 2
    assert pc.counts(3) == {0: 1, 1: 2, 2: 2}
    assert pc.lam.tolist() == [2, 3, 2, 3, 3, 2]
    assert pc.load.tolist() == [7, 8, 5]


def test_figure2_one_move_exact_effect():
    # Moving vertex 3 from part 1 to part 2 (worked out by hand, net by net):
    # net 0 {0,1,3}: 0 now sends row 0 to part 2 instead of 1; net 2 {1,2,3}: 1 sends row 2 to parts 0 and 2;
    # net 3: owner becomes 2, sends to 0 and 1; net 4 {1,3,4}: 2 sends row 4 to 0 only; net 5 {3,5}: uncut.
    a = a_hat(6, FIG2_EDGES)
    pc = refine.PinCounts(a, FIG2_PART, 3)
    ds, dr = pc.deltas(3, 2)
    assert ds.tolist() == [0, -1, 0]
    assert dr.tolist() == [0, -2, 1]
    assert pc.move(3, 2) == -1
    assert pc.send.tolist() == [3, 2, 3] and pc.recv.tolist() == [3, 2, 3] and pc.total == 8
    assert pc.counts(3) == {0: 1, 1: 1, 2: 3} and pc.lam[5] == 1
    assert pc.load.tolist() == [7, 3, 10]  # vertex 3's row has 5 nonzeros


def test_directed_one_move_exact_effect():
    # 0 -> 1 -> 2; part [0, 1, 1]: part 1 sends row 1 to part 0. Moving vertex 2 to part 0:
    # net 1 {0, 1} still needs row 1 in part 0; net 2 {1, 2} is now owned by part 0 and needed by part 1.
    a = a_hat(3, [(0, 1), (1, 2)], directed=True)
    pc = refine.PinCounts(a, np.array([0, 1, 1]), 2)
    assert pc.send.tolist() == [0, 1] and pc.recv.tolist() == [1, 0]
    ds, dr = pc.deltas(2, 0)
    assert ds.tolist() == [1, 0] and dr.tolist() == [0, 1]
    pc.move(2, 0)
    s, r = send_recv(a, pc.part, 2)
    assert pc.send.tolist() == s.tolist() == [1, 1] and pc.recv.tolist() == r.tolist() == [1, 1]


@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("seed", range(3))
def test_incremental_counts_match_recomputation(seed, directed):
    a = random_a_hat(60, 5, seed, directed)
    n, parts = a.shape[0], 5
    rng = np.random.default_rng(seed)
    pc = refine.PinCounts(a, rng.integers(0, parts, n), parts)
    csc = sp.csc_matrix(a)
    for _ in range(200):
        v, b = int(rng.integers(n)), int(rng.integers(parts))
        ds, dr = pc.deltas(v, b)
        before = (pc.send.copy(), pc.recv.copy())
        d = pc.move(v, b)
        # the predicted deltas are the applied ones
        np.testing.assert_array_equal(pc.send - before[0], ds)
        np.testing.assert_array_equal(pc.recv - before[1], dr)
        assert d == ds.sum()
    s, r = send_recv(a, pc.part, parts)
    np.testing.assert_array_equal(pc.send, s)
    np.testing.assert_array_equal(pc.recv, r)
    assert pc.total == s.sum()
    np.testing.assert_array_equal(pc.load, np.bincount(pc.part, weights=np.diff(a.indptr), minlength=parts))
    for j in range(n):
        pins = pc.part[csc.indices[csc.indptr[j]:csc.indptr[j + 1]]]
        u, c = np.unique(pins, return_counts=True)
        assert pc.counts(j) == dict(zip(u.tolist(), c.tolist()))
        assert pc.lam[j] == u.size


def check_guarantees(a, part, parts, eps, mti, seed):
    s0, r0 = send_recv(a, part, parts)
    imb0 = load_imbalance(a, part, parts)
    new, info = refine.volume_balance(a, part, parts, eps=eps, max_total_increase=mti, seed=seed)
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


def test_lowers_the_maximum_and_is_deterministic():
    a = random_a_hat(400, 6, 7)
    part = np.random.default_rng(7).integers(0, 8, a.shape[0]).astype(np.int32)
    new, info = check_guarantees(a, part, 8, 0.1, 0.02, seed=3)
    assert info["end"]["max_send"] < info["start"]["max_send"]
    assert info["end"]["max_recv"] < info["start"]["max_recv"]
    again, _ = refine.volume_balance(a, part, 8, eps=0.1, max_total_increase=0.02, seed=3)
    np.testing.assert_array_equal(new, again)


def test_bad_input():
    a = a_hat(6, FIG2_EDGES)
    with pytest.raises(UserError, match="0..2"):
        refine.volume_balance(a, np.array([0, 0, 1, 1, 2, 3]), 3)
    with pytest.raises(UserError, match="shape"):
        refine.volume_balance(a, FIG2_PART[:5], 3)
    no_diag = sp.csr_matrix(np.ones((3, 3)) - np.eye(3))
    with pytest.raises(UserError, match="diagonal"):
        refine.volume_balance(no_diag, np.array([0, 1, 1]), 2)
    with pytest.raises(UserError, match="eps"):
        refine.volume_balance(a, FIG2_PART, 3, eps=0)
