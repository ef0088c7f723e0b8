"""The placement lower bound (pipeline/metrics/placement_bound.py): never above the best placement found
by brute force over every placement of a few parts, equal to it where it is tight."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shgcn.pipeline.metrics.internode import inter_rows, part_nets
from shgcn.pipeline.metrics.placement_bound import owner_bound, placement_bound, relaxed_bound


def optimum(nets, parts: int, k: int) -> int:
    """The fewest rows across over every placement (nodes of k, the last the rest): brute force."""
    sizes = np.bincount(np.arange(parts) // k)
    nodes = (np.asarray(n) for n in itertools.product(range(sizes.size), repeat=parts))
    return min(inter_rows(nets, n) for n in nodes if np.array_equal(np.bincount(n, minlength=sizes.size), sizes))


def random_nets(parts: int, rows: int, seed: int):
    """``rows`` rows, each owned by a random part and needed by 1 to ``parts - 1`` others."""
    rng = np.random.default_rng(seed)
    owner = rng.integers(0, parts, rows)
    r, p = [], []
    for j in range(rows):  # a few rows: the test's own instance
        need = rng.choice(parts, rng.integers(1, parts), replace=False)
        r += [j] * (need.size + 1)
        p += [owner[j], *need.tolist()]
    return part_nets(np.asarray(r), np.asarray(p), parts, owner)


@settings(max_examples=20, deadline=None)
@given(st.sampled_from([(6, 2), (6, 3), (7, 3), (5, 2)]), st.integers(1, 12), st.integers(0, 10_000))
def test_the_bound_never_exceeds_the_best_placement(pk, rows, seed):
    parts, k = pk
    nets = random_nets(parts, rows, seed)
    best = optimum(nets, parts, k)
    b = placement_bound(nets, parts, k, steps=4)
    assert 0 <= b.span <= best and b.owner <= best and b.relaxed <= best and b.rows <= best
    assert owner_bound(nets, parts, k) <= best + 1e-9 and relaxed_bound(nets, parts, k, steps=4) <= best + 1e-9
    start = np.random.default_rng(seed).permutation(parts) // k  # from any placement: still a bound
    assert placement_bound(nets, parts, k, start, steps=4).rows <= best


def test_the_span_is_tight_for_rows_every_part_needs():
    nets = part_nets(np.repeat(np.arange(3), 7), np.tile(np.arange(7), 3), 7, np.array([0, 3, 6]))
    b = placement_bound(nets, 7, 3)
    assert b.span == 3 * 2 == optimum(nets, 7, 3) == b.rows


def test_the_relaxation_is_tight_where_pairs_compete():
    """Parts 0-3 in pairs on nodes of 2: three pair rows (0,1), (2,3), (0,2) of weights 5, 5, 1: the best
    placement splits the light one (1 row); the owner and relaxed bounds see it, the span does not."""
    nets = part_nets(np.repeat(np.arange(11), 2), [0, 1] * 5 + [2, 3] * 5 + [0, 2], 4, np.r_[[0] * 5, [2] * 5, 0])
    b = placement_bound(nets, 4, 2)
    assert optimum(nets, 4, 2) == 1 == b.rows == b.relaxed and b.span == 0


def test_one_part_a_node_is_exact_and_one_node_is_free():
    nets = random_nets(6, 8, 1)
    exact = inter_rows(nets, np.arange(6))
    assert placement_bound(nets, 6, 1).rows == exact == optimum(nets, 6, 1)
    assert placement_bound(nets, 6, 6).rows == 0 == placement_bound(nets, 6, 9).rows
    with pytest.raises(ValueError):
        placement_bound(nets, 6, 0)
