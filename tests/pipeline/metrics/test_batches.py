"""Mini-batch volume (pipeline/metrics/batches.py): exact batch volumes, the
closed form of the node sampler, and the held-out dataset."""

import numpy as np
import pytest
import scipy.sparse as sp
from helpers.graphs import FIG2_EDGES, FIG2_PART, a_hat, graph

from shgcn.core import sample
from shgcn.pipeline.metrics import batches as mb
from shgcn.pipeline.metrics.volume import partition_quality


def test_closed_form_matches_sampled_expectation():
    rng = np.random.default_rng(0)
    n = 120
    a = a_hat(n, [tuple(e) for e in rng.integers(0, n, (400, 2))])
    part = rng.integers(0, 4, n).astype(np.int32)
    s = sample.Sampler(graph(n, [tuple(e) for e in rng.integers(0, n, (10, 2))]).adj,
                       sample.SamplerConfig(kind="node", size=30, seed=2))
    vols, _, _ = mb.batch_volumes(sp.csc_matrix(a), s.batches(range(3000), sample.HELDOUT), part, 4)
    exact, send = mb.expected_volume_node(a, part, 4, 30)
    assert abs(vols.mean() - exact) < 3 * vols.std() / np.sqrt(vols.size)
    assert send.sum() == pytest.approx(exact)

def test_batch_set_equals_batch_traffic():
    a = sp.csc_matrix(a_hat(6, FIG2_EDGES))
    batches = [np.array([0, 1, 3]), np.array([1, 2, 4]), np.array([0, 2, 5]), np.arange(6)]
    tot, mx, lam = mb.BatchSet(a, batches).volumes(FIG2_PART, 3)
    for i, b in enumerate(batches):
        send, _, lam_sum, nets = mb.batch_traffic(a, b, FIG2_PART, 3)
        assert (tot[i], mx[i]) == (send.sum(), send.max()) and lam[i] == pytest.approx(lam_sum / nets)
    assert tot[-1] == partition_quality(a_hat(6, FIG2_EDGES), FIG2_PART, 3).total_volume == 9

@pytest.mark.dataset
def test_hoeffding_estimate_within_theta_of_heldout(shared_data, client):
    """Over 20 fixed seeds, the mean connectivity of the first Hoeffding-many
    nets lies within theta of the held-out mean connectivity in at least
    (1 - delta) of the runs (the bound promises it for each run with
    probability >= 1 - delta)."""
    from shgcn.pipeline.models.rp import random_partition
    from shgcn.pipeline.sources import datasets, readers
    from shgcn.pipeline.stages.ingest import to_graph
    from shgcn.pipeline.stages.normalize import normalized_adjacency
    ds = datasets.lookup("facebook")
    g = to_graph(readers.read(datasets.locate(ds, shared_data, download=False), ds.format, client), False)
    a = normalized_adjacency(g.adj, False)
    p, theta, delta = 8, 0.1, 0.2
    part = random_partition(a.shape[0], p, 0)
    inside = 0
    for seed in range(20):
        s = sample.Sampler(g.adj, sample.SamplerConfig(kind="node", size=100, seed=seed))
        ds_ = mb.minibatch_dataset(a, s, {"rp": part}, p, eval_batches=300, theta=theta, delta=delta)
        inside += abs(float(ds_["estimated_connectivity"][0]) - float(ds_["heldout_connectivity"][0])) <= theta
    assert inside >= (1 - delta) * 20
