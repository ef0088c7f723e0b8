import numpy as np
from helpers.graphs import a_hat


def test_undirected_symmetric_normalization():
    # path 0 - 1 - 2: degrees with self loops 2, 3, 2
    a = a_hat(3, [(0, 1), (1, 2)]).toarray()
    d = np.array([2, 3, 2]) ** -0.5
    expect = (np.eye(3) + np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]])) * np.outer(d, d)
    np.testing.assert_allclose(a, expect, rtol=1e-6)
    assert a.dtype == np.float32


def test_directed_keeps_direction():
    # 0 -> 1 with loops: out-degrees (2, 1), in-degrees (1, 2); Â_ij = out_i^-1/2 in_j^-1/2
    a = a_hat(2, [(0, 1)], directed=True).toarray()
    r = 2 ** -0.5
    np.testing.assert_allclose(a, [[r, 0.5], [0, r]], rtol=1e-6)
    assert np.linalg.norm(a, 2) <= 1 + 1e-6
