import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from helpers.graphs import a_hat

from shgcn.pipeline.errors import UserError
from shgcn.pipeline.metrics.bounds import receive_lower_bound
from shgcn.pipeline.metrics.volume import volume_matrix


def best_max_recv(a, w, parts, lmax):
    """The smallest max receive volume over every partition within lmax (brute force)."""
    n, best = a.shape[0], None
    for assign in itertools.product(range(parts), repeat=n):
        part = np.array(assign)
        if np.bincount(part, weights=w, minlength=parts).max() > lmax:
            continue
        recv = int(volume_matrix(a, part, parts).sum(0).max())
        best = recv if best is None else min(best, recv)
    return best


def test_star_bound_is_exact():
    # hub 0 (weight 3) and 8 leaves (weight 1): lmax = floor(1.5 * 11 / 3) = 5, so the hub's part
    # holds at most 2 leaves and receives the other 6
    a = a_hat(9, [(0, v) for v in range(1, 9)])
    w = np.array([3] + [1] * 8)
    b = receive_lower_bound(a, w, 3, 0.5)
    assert (b.rows, b.vertex, b.lmax) == (6, 0, 5)
    assert best_max_recv(a, w, 3, 5) == 6


@pytest.mark.parametrize("seed", range(4))
def test_no_partition_goes_below_the_bound(seed):
    rng = np.random.default_rng(seed)
    n = 7
    edges = [(int(u), int(v)) for u, v in rng.integers(0, n, (12, 2)) if u != v]
    a = a_hat(n, edges, directed=bool(seed % 2))
    w = rng.integers(1, 4, n)
    b = receive_lower_bound(a, w, 3, 0.3)
    assert b.rows <= best_max_recv(a, w, 3, b.lmax)


def test_bound_takes_the_heaviest_room_into_account():
    # a hub heavier than the bound holds nothing beside it: it receives every column
    a = a_hat(5, [(0, v) for v in range(1, 5)])
    b = receive_lower_bound(a, np.array([10, 1, 1, 1, 1]), 2, 0.0)
    assert b.rows == 4 and b.lmax == 7


def test_empty_and_bad_arguments():
    assert receive_lower_bound(sp.csr_matrix((0, 0)), np.zeros(0, int), 4, 0.1).rows == 0
    with pytest.raises(UserError, match="weights of shape"):
        receive_lower_bound(a_hat(3, [(0, 1)]), np.ones(2, int), 2, 0.1)
