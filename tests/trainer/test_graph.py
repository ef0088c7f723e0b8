"""The operators a layer aggregates with (trainer/graph.py): Â, the mean and the sum on one rank against
dense references, with and without a row scale, forward and transpose."""

import numpy as np
import pytest
from helpers.parts import hand_matrix, one_rank_graph


@pytest.mark.parametrize("directed", [False, True])
def test_operators_equal_their_dense_matrices(directed):
    a = hand_matrix(directed)
    g = one_rank_graph(a, symmetric=not directed)
    x = np.random.default_rng(0).standard_normal((6, 3)).astype(np.float32)
    adj = ((a != 0) & ~np.eye(6, dtype=bool)).astype(np.float32)
    deg = adj.sum(1)
    mean = adj / np.where(deg > 0, deg, 1)[:, None]
    for op, m in ((g.norm, a), (g.mean, mean), (g.sum, adj)):
        np.testing.assert_allclose(op.forward(x), m @ x, atol=1e-6)
        np.testing.assert_allclose(op.transpose(x), m.T @ x, atol=1e-6)
    assert g.degree.tolist() == deg.tolist() and g.operator("mean") is g.mean
    left = np.arange(1, 7, dtype=np.float32)
    scaled = one_rank_graph(a, symmetric=not directed, left=left)
    np.testing.assert_allclose(scaled.norm.transpose(x), (left[:, None] * a).T @ x, atol=1e-5)


def test_row_operators_give_gat_its_rows():
    g = one_rank_graph(hand_matrix(False), symmetric=True)
    interior, boundary = g.split_rows
    assert interior.tolist() == list(range(6)) and boundary.size == 0 and g.csr.shape == (6, 6)
    assert g.gids.tolist() == [3, 10, 17, 24, 31, 38]
