"""Inclusion probabilities of the samplers (pipeline/models/shp/inclusion.py):
exact for the edge sampler, and matching sampled batches."""

import numpy as np
import pytest
from helpers.graphs import FIG2_EDGES, a_hat, graph

from shgcn.core import sample
from shgcn.pipeline.models.shp.inclusion import inclusion


def test_edge_inclusion_probabilities_are_exact():
    """Against every sequence of the m = 2 edge draws, enumerated."""
    import itertools
    g, a = graph(6, FIG2_EDGES), a_hat(6, FIG2_EDGES)
    s = sample.Sampler(g.adj, sample.SamplerConfig(kind="edge", size=5, seed=0))  # size // 2 = 2 draws
    inc = inclusion(a, s)
    er, ec, p = s.edge_probabilities()
    assert s.edge_draws == 2 and p.sum() == pytest.approx(1)
    vertex, pair = np.zeros(6), np.zeros(inc.rows.size)
    for seq in itertools.product(range(p.size), repeat=2):
        drawn = np.zeros(6, bool)
        drawn[er[list(seq)]] = drawn[ec[list(seq)]] = True
        prob = p[seq[0]] * p[seq[1]]
        vertex += prob * drawn
        pair += prob * (drawn[inc.rows] & drawn[inc.cols])
    np.testing.assert_allclose(inc.vertex, vertex, atol=1e-12)
    np.testing.assert_allclose(inc.pair, pair, atol=1e-12)

@pytest.mark.parametrize("kind", ["node", "rw"])
def test_inclusion_probabilities_match_sampled_batches(kind):
    n = 150
    edges = [(i, (i * 7 + 3) % n) for i in range(n)] + [(i, (i + 1) % n) for i in range(n)]
    g, a = graph(n, edges), a_hat(n, edges)
    s = sample.Sampler(g.adj, sample.SamplerConfig(kind=kind, size=24, seed=1))
    inc = inclusion(a, s)
    k = 4000
    drawn = np.zeros((k, n), bool)
    for i in range(k):
        drawn[i, s.batch(i, sample.HELDOUT)] = True
    v, pr = drawn.mean(0), (drawn[:, inc.rows] & drawn[:, inc.cols]).mean(0)
    # means over all vertices and pairs: within 3 standard errors of the k batches
    assert abs(v.mean() - inc.vertex.mean()) < 3 * np.sqrt(inc.vertex.mean() / k / n) + 1e-3
    assert abs(pr.mean() - inc.pair.mean()) < 3 * np.sqrt(inc.pair.mean() / k / pr.size) + 1e-3
    assert np.abs(v - inc.vertex).max() < 5 * np.sqrt(inc.vertex.max() / k)
