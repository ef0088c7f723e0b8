"""The MPI trainer against a serial reference, exact communication
accounting, faults, checkpoints. MPI runs go through mpirun in subprocesses."""

import numpy as np
import pytest
from helpers.mpi import GRAPHS, build_stores, read_log, train
from helpers.reference_gcn import reference_losses

from shgcn import store
from shgcn.pipeline.ingest import to_graph
from shgcn.pipeline.normalize import normalized_adjacency
from shgcn.pipeline.synthetic import parse_spec
from shgcn.store.costs import spmm_widths

pytestmark = pytest.mark.mpi

EPOCHS = 15


@pytest.fixture(scope="module")
def stores(tmp_path_factory, client):
    return build_stores(tmp_path_factory.mktemp("train"), client)


def reference(path, spec, directed):
    s = store.open_store(path)
    g = to_graph(parse_spec(spec), directed=directed)
    a = normalized_adjacency(g.adj, directed)
    nodes = s.nodes().load()
    x, y = nodes["features"].values, nodes["labels"].values
    dims = [x.shape[1], 16, int(s.attrs["classes"])]
    return reference_losses(a, x, y, nodes["train_mask"].values, dims, epochs=EPOCHS)


@pytest.mark.parametrize("kind", GRAPHS)
@pytest.mark.parametrize("exchange", ["p2p", "alltoallv", "bcast"])
@pytest.mark.parametrize("ranks", [1, 2, 4])
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


@pytest.mark.parametrize("kind", GRAPHS)
@pytest.mark.parametrize("ranks", [2, 4])
def test_p2p_bytes_equal_predicted_volume(stores, tmp_path, kind, ranks):
    _, directed = GRAPHS[kind]
    path = stores[kind, ranks]
    log = tmp_path / "run.jsonl"
    res = train(ranks, path, "--epochs", 3, "--exchange", "p2p", "--hidden", "32,8", log=log)
    assert res.returncode == 0, res.stderr
    header, epochs = read_log(log)
    vol = store.open_store(path).quality()["volume"].sel(model="hp").values
    send, recv = vol.sum(1), vol.sum(0)
    fwd, bwd = spmm_widths(header.dims, header.w_first)
    # the backward of a directed graph folds partial sums back: it sends what forward received
    back = recv if directed else send
    expect_bytes = 4 * (send * sum(fwd) + back * sum(bwd))
    expect_msgs = (vol > 0).sum(1) * len(fwd) + ((vol > 0).sum(0) if directed else (vol > 0).sum(1)) * len(bwd)
    for e in epochs:
        assert e.bytes_sent == expect_bytes.tolist()
        assert e.msgs_sent == expect_msgs.tolist()
        # evaluation is one forward pass
        assert e.eval_bytes_sent == (4 * send * sum(fwd)).tolist()


@pytest.mark.parametrize("kind", GRAPHS)
def test_bcast_bytes_are_whole_blocks(stores, tmp_path, kind):
    _, directed = GRAPHS[kind]
    path = stores[kind, 4]
    log = tmp_path / "run.jsonl"
    assert train(4, path, "--epochs", 2, "--exchange", "bcast", log=log).returncode == 0
    header, epochs = read_log(log)
    rows = np.diff(store.open_store(path).offsets)
    fwd, bwd = spmm_widths(header.dims, header.w_first)
    fwd_bytes = 4 * rows * 3 * sum(fwd)  # whole block to each of the P-1 others
    bwd_bytes = 4 * (rows.sum() - rows) * sum(bwd) if directed else 4 * rows * 3 * sum(bwd)
    assert epochs[0].bytes_sent == (fwd_bytes + bwd_bytes).tolist()


def test_runs_without_mpirun_and_log_keys(stores, tmp_path):
    import json

    log = tmp_path / "run.jsonl"
    res = train(1, stores["undirected", 1], "--epochs", 3, log=log, use_mpirun=False)
    assert res.returncode == 0, res.stderr
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    header, epochs = lines[0], lines[1:]
    for key in ("store", "parts", "exchange", "mode", "versions"):  # the JSON keys are an interface
        assert key in header
    for key in ("epoch", "loss", "train_acc", "val_acc", "test_acc", "epoch_time", "comm_time", "compute_time",
                "bytes_sent", "msgs_sent"):
        assert key in epochs[0]
    assert epochs[0]["bytes_sent"] == [0] and len(epochs) == 3


def test_wrong_rank_count(stores):
    res = train(2, stores["undirected", 4], "--epochs", 1)
    assert res.returncode != 0
    assert "has 4 parts but the job has 2 ranks" in res.stderr and res.stderr.count("shgcn-train: error") == 1
    res1 = train(1, stores["undirected", 4], "--epochs", 1, use_mpirun=False)
    assert res1.returncode == 2 and "mpirun -n 4" in res1.stderr


def test_missing_store(tmp_path):
    res = train(1, tmp_path / "nope.zarr", use_mpirun=False)
    assert res.returncode == 2 and "store not found" in res.stderr and "Traceback" not in res.stderr


def test_corrupt_block_is_reported_before_training(stores, tmp_path):
    import shutil
    path = tmp_path / "c.zarr"
    shutil.copytree(stores["undirected", 2], path)
    chunk = path / "ranks" / "1" / "data" / "c" / "0"
    raw = bytearray(chunk.read_bytes())
    raw[0] ^= 0x40
    chunk.write_bytes(bytes(raw))
    log = tmp_path / "run.jsonl"
    res = train(2, path, "--epochs", 5, log=log, timeout=120)
    assert res.returncode != 0
    assert "(rank 1)" in res.stderr and "checksum mismatch" in res.stderr
    assert not log.exists()  # no epoch ran


def test_injected_failure_aborts_the_job(stores):
    res = train(4, stores["undirected", 4], "--epochs", 50, "--fail-at", "2:3", timeout=120)
    assert res.returncode != 0
    assert "rank 2: RuntimeError: injected failure at epoch 3" in res.stderr


def test_resume_gives_same_final_weights(stores, tmp_path):
    path = stores["directed", 2]
    full, part = tmp_path / "full", tmp_path / "part"
    assert train(2, path, "--epochs", 12, "--checkpoint", full, "--checkpoint-every", 100).returncode == 0
    assert train(2, path, "--epochs", 7, "--checkpoint", part, "--checkpoint-every", 100).returncode == 0
    res = train(2, path, "--epochs", 12, "--checkpoint", part, "--checkpoint-every", 100, "--resume")
    assert res.returncode == 0, res.stderr
    with np.load(full / "checkpoint.npz") as a, np.load(part / "checkpoint.npz") as b:
        assert int(a["epoch"]) == int(b["epoch"]) == 11
        for k in a.files:
            np.testing.assert_array_equal(a[k], b[k])


def test_weights_agree_across_ranks_in_debug_mode(stores):
    assert train(4, stores["directed", 4], "--epochs", 4, "--debug-every", 2).returncode == 0
