"""The layers (gcn, sage, gin, gat) on one rank: gradients against finite
differences on tiny hand-built graphs, and the dropout masks' definition."""

import numpy as np
import pytest
import scipy.sparse as sp

from shgcn.trainer import archs
from shgcn.trainer.backend import BACKEND, Noise
from shgcn.trainer.exchange import P2P
from shgcn.trainer.graph import Graph
from shgcn.trainer.model import dropout_mask
from shgcn.trainer.plan import CommPlan, LocalMatrix

# 6 vertices: a path 0-1-2-3 with a chord 0-2, and 4 -> 5 one way (a directed edge),
# so rows have 0 to 3 neighbours and the directed case is not symmetric
EDGES = [(0, 1), (1, 2), (2, 3), (0, 2), (4, 5), (5, 1)]


def hand_matrix(directed: bool) -> np.ndarray:
    """Â-like weights on the pattern of A + I (row i, column j: edge j -> i)."""
    n = 6
    m = np.eye(n, dtype=np.float32)
    for s, t in EDGES:
        m[t, s] = 1
        if not directed:
            m[s, t] = 1
    deg = m.sum(1)
    a = m / np.sqrt(deg[:, None] * deg[None, :]) if not directed else m / deg[:, None]
    return a.astype(np.float32)


def one_rank_graph(a: np.ndarray, symmetric: bool) -> Graph:
    from mpi4py import MPI

    n = a.shape[0]
    cp = CommPlan(0, 1, np.array([0, n]), [], [], np.zeros(2, np.int64), np.zeros(0, np.int64))
    lm = LocalMatrix(own=sp.csr_matrix(a), halo={})
    return Graph(lm, P2P(MPI.COMM_SELF, cp), symmetric, np.arange(n, dtype=np.int64) * 7 + 3)


def fd_errors(model, graph, x, noise, r, rng) -> list[float]:
    """Per parameter array: the relative error of the backward's directional
    derivative along a random direction against central differences (the
    best of three steps: float32 wants large steps for rounding, small ones
    to stay clear of ReLU kinks)."""
    def loss() -> float:  # a random projection of the logits: dL/dlogits = r
        logits, _ = model.forward(x, graph, noise)
        return float((logits.astype(np.float64) * r).sum())

    _, cache = model.forward(x, graph, noise)
    grads = model.backward(cache, r, graph)
    assert len(grads) == len(model.params)
    out = []
    for p, g in zip(model.params, grads):
        assert g.shape == p.shape and g.dtype == np.float32
        v = rng.standard_normal(p.shape).astype(np.float32)
        want = float((g.astype(np.float64) * v).sum())
        errs = []
        for eps in (1e-2, 1e-3, 1e-4):
            p += eps * v
            up = loss()
            p -= 2 * eps * v
            down = loss()
            p += eps * v
            errs.append(abs((up - down) / (2 * eps) - want) / max(abs(want), 1e-2))
        out.append(min(errs))
    return out


def setup_case(arch, dims, directed, seed=1):
    rng = np.random.default_rng([len(arch), dims[0], directed])
    a = hand_matrix(directed)
    graph = one_rank_graph(a, symmetric=not directed)
    model = archs.build(arch, dims, seed=seed, heads=2, out_heads=2)
    for p in model.params:  # a generic point: zero biases put GIN's dead rows exactly on ReLU's kink
        p += 0.1 * rng.standard_normal(p.shape).astype(np.float32)
    x = rng.standard_normal((a.shape[0], dims[0])).astype(np.float32)
    r = rng.standard_normal((a.shape[0], dims[-1])).astype(np.float32)
    return model, graph, x, r, rng


@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("arch", archs.ARCHS)
@pytest.mark.parametrize("dims", [[5, 4, 3], [3, 6, 2]])  # the first multiplies by W first, the second aggregates first
def test_gradients_match_finite_differences(arch, directed, dims):
    model, graph, x, r, rng = setup_case(arch, dims, directed)
    noise = Noise(0.3, seed=4, epoch=2, attn_rate=0.3)  # fixed masks: a deterministic function of the parameters
    errs = fd_errors(model, graph, x, noise, r, rng)
    assert max(errs) < 1e-2, errs


def test_a_wrong_gradient_is_caught():
    """The check above can fail: a backward that uses other dropout masks than the forward."""
    model, graph, x, r, rng = setup_case("gcn", [5, 4, 3], False)
    real_backward = model.backward

    def backward(cache, g, graph):
        _, other = type(model).forward(model, x, graph, Noise(0.3, seed=5, epoch=2))
        return real_backward(other, g, graph)

    model.backward = backward
    assert max(fd_errors(model, graph, x, Noise(0.3, seed=4, epoch=2), r, rng)) > 0.05


def test_dropout_mask_depends_on_the_vertex_only():
    """The same vertex gets the same mask in any row order and any split of
    the rows into ranks or blocks, sparse or dense; other layers, epochs and
    seeds get other masks; the kept fraction is 1 - rate and the scale exact."""
    rng = np.random.default_rng(3)
    gids = rng.permutation(5000).astype(np.int64) * 13 + 5
    whole = dropout_mask(7, 3, 1, gids, 37, 0.5)
    for parts in (2, 4, 7):
        order = rng.permutation(gids.size)
        for chunk in np.array_split(order, parts):  # any layout: a rank's rows in any order
            np.testing.assert_array_equal(dropout_mask(7, 3, 1, gids[chunk], 37, 0.5), whole[chunk])
    x = (rng.random((gids.size, 37)) < 0.2).astype(np.float32)
    xs, _ = BACKEND.act_dropout(sp.csr_matrix(x), "none", Noise(0.5, 7, 3), 1, gids)
    np.testing.assert_array_equal(xs.toarray(), x * whole)
    assert set(np.unique(whole)) == {0.0, 2.0}
    assert abs((whole > 0).mean() - 0.5) < 0.01
    for other in (dropout_mask(7, 3, 2, gids, 37, 0.5), dropout_mask(7, 4, 1, gids, 37, 0.5),
                  dropout_mask(8, 3, 1, gids, 37, 0.5)):
        assert 0.4 < (other != whole).mean() < 0.6
    m = dropout_mask(1, 0, 0, gids, 16, 0.1)
    assert abs((m > 0).mean() - 0.9) < 0.01 and np.isclose(m.max(), 65536 / (65536 - 6554))


def test_fused_activation_and_dropout():
    z = np.array([[-1.0, 0.5, 2.0, -0.25]], np.float32)
    out, _ = BACKEND.act_dropout(z, "relu", None, 0, np.zeros(1, np.int64))
    np.testing.assert_array_equal(out, np.maximum(z, 0))
    out, _ = BACKEND.act_dropout(z, "elu", None, 0, np.zeros(1, np.int64))
    np.testing.assert_allclose(out, np.where(z > 0, z, np.expm1(z)), rtol=1e-6)


@pytest.mark.parametrize("directed", [False, True])
def test_gradients_with_a_row_scaled_operator(directed):
    """GraphSAINT's aggregator diag(C_v) P: its transpose is P^T (C_v G), not the forward product again."""
    model, graph, x, r, rng = setup_case("gcn", [5, 4, 3], directed)
    left = rng.uniform(0.5, 3.0, graph.n_own).astype(np.float32)
    scaled = Graph(graph.lm, graph.ex, graph.symmetric, graph.col_gids, left=left)
    assert max(fd_errors(model, scaled, x, Noise(0.3, seed=4, epoch=2), r, rng)) < 1e-2
