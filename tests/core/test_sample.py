"""The samplers both sides re-draw batches with (shgcn/store/sample.py): a
batch is a function of (seed, stream, number), in any process."""

import multiprocessing as mp

import numpy as np
import pytest
from helpers.graphs import graph

from shgcn.core import sample
from shgcn.testing.samplers import SamplerTests


@pytest.mark.parametrize("kind", sample.SAMPLERS)
def test_batches_are_redrawn_from_their_number(kind):
    g = graph(200, [(i, (i * 7 + 3) % 200) for i in range(200)] + [(i, (i + 1) % 200) for i in range(200)])
    s = sample.Sampler(g.adj, sample.SamplerConfig(kind=kind, size=30, seed=4))
    b = s.batch(17)
    assert np.array_equal(b, np.unique(b)) and b.min() >= 0 and b.max() < 200
    assert np.array_equal(b, sample.Sampler(g.adj, s.cfg).batch(17))
    assert not np.array_equal(b, s.batch(18))
    if kind == "node":
        assert b.size == 30

@pytest.mark.parametrize("n, size", [(200, 30), (100_000, 40)])  # the mask (n <= 32 B), the sort
def test_a_node_batch_is_the_sorted_draw(n, size):
    # the batch each side re-draws is numpy's draw sorted, whichever way it is sorted (stores keep its bytes)
    s = sample.Sampler(graph(n, [(0, 1)]).adj, sample.SamplerConfig(kind="node", size=size, seed=4))
    for k in range(5):
        drawn = np.random.default_rng([4, sample.TRAIN, k]).choice(n, size=size, replace=False)
        b = s.batch(k, sample.TRAIN)
        assert b.dtype == np.int64 and np.array_equal(b, np.sort(drawn))


def test_sorted_distinct_both_ways():
    ids = np.array([7, 0, 5, 9, 2])
    for n in (10, 10**6):  # a mask over n, a sort
        out = sample.sorted_distinct(ids, n)
        assert out.dtype == np.int64 and out.tolist() == [0, 2, 5, 7, 9]
    assert sample.sorted_distinct(np.zeros(0, np.int64), 5).size == 0


def _draw(args):
    from shgcn.core import sample as smp
    adj, cfg, k = args
    return smp.Sampler(adj, cfg).batch(k)

def test_batch_k_is_identical_in_another_process():
    g = graph(300, [(i, (i * 11 + 5) % 300) for i in range(300)])
    cfg = sample.SamplerConfig(kind="rw", size=40, seed=9)
    with mp.get_context("spawn").Pool(1) as pool:
        other = pool.map(_draw, [(g.adj, cfg, 5)])[0]
    assert np.array_equal(other, sample.Sampler(g.adj, cfg).batch(5))

def test_heldout_stream_is_disjoint_from_build_stream():
    g = graph(500, [(i, (i * 13 + 1) % 500) for i in range(500)])
    s = sample.Sampler(g.adj, sample.SamplerConfig(kind="node", size=50, seed=1))
    build = {tuple(s.batch(k, sample.BUILD)) for k in range(50)}
    held = {tuple(s.batch(k, sample.HELDOUT)) for k in range(50)}
    valid = {tuple(s.batch(k, sample.VALIDATION)) for k in range(50)}
    assert not build & held and not valid & held and not valid & build
    # different generators, not just different batches: the seed sequences differ in the stream word
    assert len(set(sample.STREAMS.values())) == len(sample.STREAMS) == 5
    assert (sample.BUILD, sample.HELDOUT, sample.TRAIN, sample.NORM) == (0, 1, 2, 3)  # stable meaning


def test_the_samplers_are_declared_with_their_capabilities():
    from shgcn.core.sample import SAMPLERS

    caps = {n: (s.needs_graph, s.closed_form, s.saint, s.edge_weights, s.walks) for n, s in SAMPLERS.items()}
    assert caps == {"node": (False, True, False, False, False), "edge": (True, False, True, True, False),
                    "rw": (True, False, True, False, True)}


def test_a_sampler_registered_from_outside_draws_through_its_spec():
    import numpy as np
    import scipy.sparse as sp

    from shgcn.core.sample import SAMPLERS, Sampler, SamplerConfig, SamplerSpec

    spec = SamplerSpec("firsts", "the first B vertices", lambda s, rng: np.arange(s.cfg.size, dtype=np.int64),
                       needs_graph=False)
    SAMPLERS.register(spec)
    try:
        adj = sp.random(10, 10, density=0.3, format="csr", random_state=0)
        assert Sampler(adj, SamplerConfig("firsts", size=3)).batch(5).tolist() == [0, 1, 2]
    finally:
        SAMPLERS.unregister("firsts")


class TestNode(SamplerTests):
    sampler = "node"


class TestEdge(SamplerTests):
    sampler = "edge"


class TestRandomWalk(SamplerTests):
    sampler = "rw"
