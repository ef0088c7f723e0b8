"""The training loop: P ranks give the losses of a serial scipy reference
(float32; the partition changes the summation order only), the weights stay
identical on every rank."""

import numpy as np
import pytest
from helpers.mpi import GRAPHS, read_log, train
from helpers.reference_gcn import reference_losses

from shgcn import store
from shgcn.pipeline.builder import build
from shgcn.pipeline.config import BuildConfig
from shgcn.pipeline.sources.synthetic import parse_spec
from shgcn.pipeline.stages.ingest import to_graph
from shgcn.pipeline.stages.normalize import normalized_adjacency

EPOCHS = 15


@pytest.fixture
def stores(mpi_stores):
    return mpi_stores


def reference(path, spec, directed):
    s = store.open_store(path)
    g = to_graph(parse_spec(spec), directed=directed)
    a = normalized_adjacency(g.adj, directed)
    nodes = s.nodes().load()
    x, y = nodes["features"].values, nodes["labels"].values
    dims = [x.shape[1], 16, int(s.attrs["classes"])]
    return reference_losses(a, x, y, nodes["train_mask"].values, dims, epochs=EPOCHS)


QUICK = {("undirected", "p2p", 4), ("directed", "alltoallv", 4), ("directed", "p2p", 1)}


@pytest.mark.parametrize("kind,exchange,ranks", [
    pytest.param(k, x, r, marks=() if (k, x, r) in QUICK else pytest.mark.slow)
    for k in GRAPHS for x in ("p2p", "alltoallv", "bcast") for r in (1, 2, 4)])
def test_losses_match_serial_reference(stores, tmp_path, kind, exchange, ranks):
    spec, directed = GRAPHS[kind]
    ref = reference(stores[kind, 1], spec, directed)
    log = tmp_path / "run.jsonl"
    res = train(ranks, stores[kind, ranks], "--epochs", EPOCHS, "--exchange", exchange, log=log,
                use_mpirun=ranks > 1)
    assert res.returncode == 0, res.stderr
    header, epochs = read_log(log)
    assert header.parts == ranks and header.exchange == exchange and header.mode == "full"
    losses = [e.loss for e in epochs]
    # float32 on both sides; P changes the summation order only: relative 1e-4
    np.testing.assert_allclose(losses, ref, rtol=1e-4)


def test_weights_agree_across_ranks_in_debug_mode(stores):
    assert train(4, stores["directed", 4], "--epochs", 4, "--debug-every", 2).returncode == 0


# Cora with the Planetoid split: Kipf & Welling report 81.5% test accuracy
@pytest.mark.dataset
@pytest.mark.slow
@pytest.mark.parametrize("ranks", [1, 4])
def test_cora_mean_test_accuracy_over_five_seeds(shared_data, client, tmp_path, ranks):
    path = tmp_path / f"cora-p{ranks}.zarr"
    build(BuildConfig(source="cora", out=str(path), parts=ranks, models=("hp",), data_dir=str(shared_data)), client,
          echo=lambda *a: None)
    accs = []
    for seed in range(5):
        log = tmp_path / f"run{seed}.jsonl"
        res = train(ranks, path, "--epochs", 200, "--hidden", 16, "--dropout", 0.5, "--lr", 0.01,
                    "--weight-decay", 5e-4, "--seed", seed, "--eval-every", 200, log=log, use_mpirun=ranks > 1)
        assert res.returncode == 0, res.stderr
        accs.append(read_log(log)[1][-1].test_acc)
    assert np.mean(accs) >= 0.80, accs
