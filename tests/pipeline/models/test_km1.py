"""Connectivity-1 refinement (pipeline/models/km1.py): it never raises the
total volume, keeps the load bound, reports the exact total, and is seeded."""

import numpy as np
from helpers.graphs import FIG2_EDGES, a_hat, random_a_hat
from hypothesis import given, settings
from hypothesis import strategies as st

from shgcn.pipeline.metrics.volume import volume_matrix
from shgcn.pipeline.models.km1 import refine_km1


def test_figure2_a_vertex_with_all_its_nets_elsewhere_moves():
    # vertex 0's nets {0, 1, 3}: parts {0, 1} and part 1 holds 1 and 3 -> moving 0 to part 1 saves volume
    a = a_hat(6, FIG2_EDGES)
    part = np.array([0, 1, 1, 1, 2, 2])
    before = volume_matrix(a, part, 3).sum()
    new, info = refine_km1(a, part, 3, weights=np.ones(6, np.int64), eps=1.0)
    assert info["end"] == volume_matrix(a, new, 3).sum() < before == info["start"]


@settings(max_examples=25, deadline=None)
@given(n=st.integers(8, 150), deg=st.floats(1.0, 8.0), parts=st.integers(2, 9), seed=st.integers(0, 10**6),
       directed=st.booleans(), eps=st.sampled_from([0.03, 0.1, 0.5]))
def test_never_worse_and_within_the_bound(n, deg, parts, seed, directed, eps):
    a = random_a_hat(n, deg, seed, directed)
    rng = np.random.default_rng(seed)
    part = rng.integers(0, parts, a.shape[0]).astype(np.int32)
    w = rng.integers(1, 20, a.shape[0])
    new, info = refine_km1(a, part, parts, w, eps=eps, seed=seed)
    total = volume_matrix(a, new, parts).sum()
    assert total <= volume_matrix(a, part, parts).sum() and total == info["end"]
    load0, load = (np.bincount(p, weights=w, minlength=parts) for p in (part, new))
    assert load.max() <= max(np.floor((1 + eps) * w.sum() / parts), load0.max())
    again, _ = refine_km1(a, part, parts, w, eps=eps, seed=seed)
    np.testing.assert_array_equal(new, again)
