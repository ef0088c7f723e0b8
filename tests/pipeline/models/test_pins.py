"""Exact pin counts of the column-net hypergraph under a row partition
(pipeline/models/pins.py): per-move effects on hand-built graphs, and the
incremental counts against a recomputation from scratch."""

import numpy as np
import pytest
import scipy.sparse as sp
from helpers.graphs import FIG2_EDGES, FIG2_PART, a_hat, random_a_hat, send_recv

from shgcn.pipeline.models.pins import PinCounts


def load_imbalance(a, part, parts):
    load = np.bincount(part, weights=np.diff(a.indptr), minlength=parts)
    return load.max() / load.mean() - 1


def test_figure2_start_counts():
    a = a_hat(6, FIG2_EDGES)
    pc = PinCounts(a, FIG2_PART, 3)
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
    pc = PinCounts(a, FIG2_PART, 3)
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
    pc = PinCounts(a, np.array([0, 1, 1]), 2)
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
    pc = PinCounts(a, rng.integers(0, parts, n), parts)
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
