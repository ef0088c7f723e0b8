"""The distributed SpMM's communication, counted by the trainer, equals the
store's prediction exactly (p2p: the send volume times the row widths;
bcast: whole blocks)."""

import numpy as np
import pytest
from helpers.mpi import GRAPHS, read_log, train

from shgcn import store
from shgcn.core.costs import spmm_widths


@pytest.fixture
def stores(mpi_stores):
    return mpi_stores


@pytest.mark.parametrize("kind", GRAPHS)
@pytest.mark.parametrize("ranks", [pytest.param(2, marks=pytest.mark.slow), 4])
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
