"""Weighted connectivity-1 refinement of any hypergraph (pipeline/models/wkm1.py): exact objective on a hand
hypergraph, the move a weight decides, never worse, the load bound kept, seeded."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shgcn.pipeline.metrics.hypergraph import Hypergraph, connectivity_minus_one
from shgcn.pipeline.models.wkm1 import pin_slots, refine_weighted


def hypergraph(nets: list[list[int]], weights: list[int], n: int, vertex_weights=None) -> Hypergraph:
    ptr = np.cumsum([0] + [len(e) for e in nets]).astype(np.int64)
    pins = np.array([v for e in nets for v in e], np.int64)
    vw = np.ones(n, np.int64) if vertex_weights is None else np.asarray(vertex_weights, np.int64)
    return Hypergraph(n, ptr, pins, vw, np.asarray(weights, np.int64), np.arange(len(nets), dtype=np.int64))


def test_the_slots_and_objective_by_hand():
    # nets {0,1,2} w5, {2,3} w1, {3,4} w2; parts [0,0,1,1,0]: λ = 2, 1, 2 -> 5 x 1 + 0 + 2 x 1 = 7
    hg = hypergraph([[0, 1, 2], [2, 3], [3, 4]], [5, 1, 2], 5)
    (spart, scnt, sptr, lam), obj = pin_slots(hg, np.array([0, 0, 1, 1, 0]), 2)
    assert obj == 7 and lam.tolist() == [2, 1, 2] and sptr.tolist() == [0, 2, 4, 6]
    assert spart[[0, 1, 2, 4, 5]].tolist() == [0, 1, 1, 0, 1] and scnt[[0, 1, 2, 4, 5]].tolist() == [2, 1, 2, 1, 1]


def test_the_heavy_net_decides_the_move():
    # vertex 2 sits in part 1 with net {2,3} (w 1) but net {0,1,2} (w 5) is in part 0: moving it there
    # saves 5 and costs 1; then 3 follows ({2,3} w1 and {3,4} w2 are both in part 0): objective 0
    hg = hypergraph([[0, 1, 2], [2, 3], [3, 4]], [5, 1, 2], 5)
    part, info = refine_weighted(hg, np.array([0, 0, 1, 1, 0]), 2, eps=10.0)
    assert info["start"] == 7 and info["end"] == connectivity_minus_one(hg, part, 2) == 0
    assert part.tolist() == [0] * 5


def test_the_load_bound_holds_the_move_back():
    # as above, but 2 vertices a part at most (eps 0 on 4 of weight 1, 2 parts): part 0 may take no more
    hg = hypergraph([[0, 1, 2], [2, 3]], [5, 1], 4)
    part, info = refine_weighted(hg, np.array([0, 0, 1, 1]), 2, eps=0.0)
    assert part.tolist() == [0, 0, 1, 1] and info["end"] == info["start"] == 5


def test_net_weights_below_one_are_refused():
    with pytest.raises(ValueError, match="at least 1"):
        refine_weighted(hypergraph([[0, 1]], [0], 2), np.array([0, 1]), 2)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(4, 120), m=st.integers(1, 300), parts=st.integers(2, 8), seed=st.integers(0, 10**6),
       eps=st.sampled_from([0.0, 0.05, 0.5]))
def test_never_worse_exact_within_the_bound_and_seeded(n, m, parts, seed, eps):
    rng = np.random.default_rng(seed)
    nets = [sorted(rng.choice(n, size=int(rng.integers(2, min(n, 6) + 1)), replace=False).tolist())
            for _ in range(m)]
    hg = hypergraph(nets, rng.integers(1, 1000, m).tolist(), n, rng.integers(1, 20, n))
    start = rng.integers(0, parts, n)
    part, info = refine_weighted(hg, start, parts, eps=eps, seed=seed)
    assert info["start"] == connectivity_minus_one(hg, start, parts)
    assert info["end"] == connectivity_minus_one(hg, part, parts) <= info["start"]
    w = hg.vertex_weights
    load0, load = (np.bincount(p, weights=w, minlength=parts) for p in (start, part))
    assert load.max() <= max(np.floor((1 + eps) * w.sum() / parts), load0.max())
    np.testing.assert_array_equal(part, refine_weighted(hg, start, parts, eps=eps, seed=seed)[0])
