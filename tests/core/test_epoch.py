"""The epoch model (core/epoch.py with the cost modules of core/algorithms and
core/exchanges): hand-checked α-β cases, and the model's bytes per rank
against the trainer's counters on real MPI runs."""

import numpy as np
import pytest
from helpers.costs import path_cost
from helpers.mpi import GRAPHS, read_log, train

from shgcn import store
from shgcn.core import costs, epoch
from shgcn.core.archs import ARCHS
from shgcn.core.costs import Job
from shgcn.core.epoch import predict_algorithm, recommend
from shgcn.core.errors import UserError
from shgcn.core.machine import Channel, Machine
from shgcn.core.tables import format_epochs

SPMM_ONLY = epoch.ComputeModel(spmm=0.1, dense=0.0, elem=0.0, const=0.0)
DIMS = [8, 4, 2]  # both layers multiply by W first: forward widths [4, 2], backward [4, 2]


def hand_machine(compute=SPMM_ONLY) -> Machine:
    """A rank per node, every message alpha 1 s + 0.01 s a byte, no shared link."""
    ch = Channel(1.0, 0.01)
    return Machine("hand", 1, ch, ch, None, 1, compute)


NET = hand_machine()


def job(exchange="p2p", arch="gcn", heads=None, itemsize=4, dims=DIMS):
    return Job(tuple(dims), arch=arch, heads=heads, exchange=exchange, itemsize=itemsize)


def hand_cost(directed=False):
    return epoch.PartitionCost(model="hp", volume=np.array([[0, 3], [5, 0]]), load=np.array([10, 20]),
                                  rows=np.array([4, 6]), own=np.array([6, 12]), directed=directed)


def test_hand_bytes():
    t = epoch.rank_traffic(hand_cost(), job())
    # 4 bytes x (3 rows x (4 + 2) forward + 3 rows x (4 + 2) backward) for rank 0
    assert t["bytes_sent"].tolist() == [144, 240] and t["msgs_sent"].tolist() == [4, 4]
    assert t["bytes_recv"].tolist() == [240, 144]
    # directed: the backward folds back the rows received forward
    assert epoch.rank_traffic(hand_cost(True), job())["bytes_sent"].tolist() == [192, 192]
    b = epoch.rank_traffic(hand_cost(), job("bcast"))
    assert b["bytes_sent"].tolist() == [4 * 4 * 12, 4 * 6 * 12] and b["msgs_sent"].tolist() == [4, 4]
    assert epoch.rank_traffic(hand_cost(), job("alltoallv"))["bytes_sent"].tolist() == [144, 240]


def test_hand_bytes_by_architecture_and_wire_width():
    # sage and gin move what a gcn moves; a gat (heads [2, 1]) sends Z = H W forward (2*4, then 1*2 wide) and
    # folds the received rows' gradients back, every layer: rank 0 sends 3 rows forward and 5 back
    for arch in ("sage", "gin"):
        assert epoch.rank_traffic(hand_cost(), job(arch=arch))["bytes_sent"].tolist() == [144, 240]
    gat = epoch.rank_traffic(hand_cost(), job(arch="gat", heads=[2, 1]))
    assert gat["bytes_sent"].tolist() == [4 * (3 * 10 + 5 * 10), 4 * (5 * 10 + 3 * 10)]
    assert gat["msgs_sent"].tolist() == [4, 4] and gat["bytes_recv"].tolist() == gat["bytes_sent"].tolist()
    half = epoch.rank_traffic(hand_cost(), job(arch="gat", heads=[2, 1], itemsize=2))
    assert (2 * half["bytes_sent"]).tolist() == gat["bytes_sent"].tolist()
    calls = costs.call_bytes([3, 5], [5, 3], job(arch="gat", heads=[2, 1]), False)  # forward by layer, backward last first
    assert calls.tolist() == [[96, 160], [24, 40], [40, 24], [160, 96]]
    assert ARCHS["gat"].in_widths([8, 4, 2], [2, 1]) == [8, 8]
    assert ARCHS["gat"].layer_heads(3, {"heads": 8, "out_heads": 1}) == [8, 8, 1] and \
        ARCHS["gin"].layer_heads(2, {"heads": 8}) == [1, 1]


def test_hand_p2p_times():
    t = epoch.rank_times(hand_cost(), job(), NET)
    # allreduce of 4 (8*4 + 4*2) = 160 bytes on 2 ranks: 2 alpha + 2 beta 160 / 2 = 3.6
    # rank 0, d=4: comm 1 + 0.01*5*16 = 1.8 hidden behind own 0.1*6*4 = 2.4, + halo 1.6 -> 4.0
    #         d=2: comm 1 + 0.01*5*8 = 1.4 > own 1.2, + halo 0.8 -> 2.2; forward + backward: 12.4
    # rank 1, d=4: max(1.8, 4.8) + 3.2 = 8.0; d=2: max(1.4, 2.4) + 1.6 = 4.0; forward + backward: 24
    np.testing.assert_allclose(t["total"], [12.4 + 3.6, 24 + 3.6])
    np.testing.assert_allclose(t["comm"], [2 * 0.2 + 3.6, 3.6])
    assert t["epoch"] == pytest.approx(27.6)


def test_hand_alltoallv_and_bcast_times():
    a2a = epoch.rank_times(hand_cost(), job("alltoallv"), NET)
    # rank 1: d=4: alpha (P-1) + 0.01*5*16 + 0.1*20*4 = 1.8 + 8; d=2: 1.4 + 4; twice; + 3.6
    np.testing.assert_allclose(a2a["total"], [2 * (5.8 + 3.4) + 3.6, 2 * (9.8 + 5.4) + 3.6])
    bc = epoch.rank_times(hand_cost(), job("bcast"), NET)
    # per SpMM: two broadcasts of n_q d 4 bytes: alpha (1 + 1) + 2 beta m / 2 each = 4 + 0.01*10*d*4
    # rank 0: d=4: 0.1*10*4 + 5.6, d=2: 0.1*10*2 + 4.8 (no overlap in bcast)
    np.testing.assert_allclose(bc["total"], [2 * (4 + 5.6 + 2 + 4.8) + 3.6, 2 * (8 + 5.6 + 4 + 4.8) + 3.6])


def test_hand_dense_compute_and_one_rank():
    dense = epoch.ComputeModel(spmm=0.0, dense=1e-3, elem=1e-2, const=0.5)
    one = epoch.PartitionCost("rp", np.zeros((1, 1), np.int64), np.array([30]), np.array([10]), np.array([30]),
                                 False)
    t = epoch.rank_times(one, job(), hand_machine(dense))
    # 10 rows x (8*4*2 + 4*2*3 = 88 multiply-adds) x 1e-3 + 10 x (12 + 2*6 = 24 columns) x 1e-2 + 0.5,
    # Adam's 14 x (8*4 + 4*2) elementwise operations x 1e-2, no comm
    assert t["epoch"] == pytest.approx(0.88 + 2.4 + 0.5 + 5.6)
    assert t["comm"].tolist() == [0.0]


def test_predict_speedups_and_table():
    rp = epoch.PartitionCost("rp", np.array([[0, 9], [9, 0]]), np.array([15, 15]), np.array([5, 5]),
                                np.array([5, 5]), False)
    rows = epoch.predict([rp, hand_cost()], job(), NET, exchanges=["p2p", "bcast"])
    by = {(r["model"], r["exchange"]): r for r in rows}
    assert by["hp", "p2p"]["epoch"] == pytest.approx(27.6)
    assert by["rp", "p2p"]["vs_rp"] == 1.0
    assert by["hp", "p2p"]["vs_rp"] == pytest.approx(by["rp", "p2p"]["epoch"] / 27.6)
    assert by["hp", "p2p"]["vs_bcast"] == pytest.approx(by["hp", "bcast"]["epoch"] / 27.6)
    text = format_epochs(rows)
    assert "vs bcast" in text and len(text.splitlines()) == 5


def test_bad_exchange_and_network():
    with pytest.raises(UserError, match="exchange"):
        epoch.rank_traffic(hand_cost(), job("smoke"))
    with pytest.raises(UserError, match="machine"):
        epoch.predict([hand_cost()], job(), "carrier-pigeon")


def test_fit_compute_recovers_coefficients():
    true = epoch.ComputeModel(spmm=2e-9, dense=3e-10, elem=4e-9, const=1e-3)
    feats, secs = [], []
    for rows, load, dims in [(1000, 9000, [8, 16, 4]), (5000, 20000, [32, 8, 4]), (300, 9000, [64, 64, 2]),
                             (20000, 50000, [16, 16, 16]), (7000, 7000, [128, 4, 4])]:
        c = epoch.PartitionCost("x", np.zeros((1, 1), np.int64), np.array([load]), np.array([rows]), None, False)
        f = epoch.compute_features(c, dims)
        feats.append(f[0])
        secs.append(epoch.rank_times(c, job(dims=dims), hand_machine(true))["epoch"])
    fit = epoch.fit_compute(np.array(feats), np.array(secs))
    np.testing.assert_allclose([fit.spmm, fit.dense, fit.elem, fit.const], [2e-9, 3e-10, 4e-9, 1e-3], rtol=1e-6)



def test_times_and_recommendation():
    cost = path_cost()
    rows = predict_algorithm([cost], Job((3, 4, 2), algorithm="1.5d", replication=2), "infiniband", ["p2p", "bcast"])
    assert [(r["ranks"], r["parts"], r["exchange"]) for r in rows] == [(4, 2, "p2p"), (4, 2, "bcast")]
    assert all(r["epoch"] > r["comm"] > 0 and r["memory"] > 0 for r in rows)
    fake = [{"ranks": 4, "epoch": 2.0, "n": 1}, {"ranks": 4, "epoch": 1.0, "n": 2}, {"ranks": 8, "epoch": 3.0, "n": 3}]
    assert [r["n"] for r in recommend(fake)] == [2, 3]

@pytest.fixture
def sim_stores(mpi_stores):
    """The MPI tests' stores (tests/helpers/mpi.py: GRAPHS, laid out by hp, with rp beside it), built once in-process
    for the session; they were four ``pipeline build`` subprocesses of the same graphs here."""
    return mpi_stores


@pytest.mark.mpi
@pytest.mark.parametrize("kind", GRAPHS)
@pytest.mark.parametrize("ranks,exchange", [(2, "p2p"), pytest.param(4, "p2p", marks=pytest.mark.slow),
                                            pytest.param(4, "bcast", marks=pytest.mark.slow),
                                            pytest.param(2, "alltoallv", marks=pytest.mark.slow)])
def test_predicted_bytes_equal_measured(sim_stores, tmp_path, kind, ranks, exchange):
    path = sim_stores[kind, ranks]
    res = train(ranks, path, "--epochs", "3", "--exchange", exchange, log=tmp_path / "run.jsonl")
    assert res.returncode == 0, res.stderr
    header, epochs = read_log(tmp_path / "run.jsonl")
    s = store.open_store(path)
    cost = next(c for c in s.partition_costs() if c.model == s.attrs["model"])
    dims = epoch.dims_of(s.attrs["feature_dim"], header.dims[1:-1], s.attrs["classes"])
    assert dims == header.dims
    pred = epoch.rank_traffic(cost, job(exchange, dims=dims))
    assert pred["bytes_sent"].sum() > 0
    for e in epochs:
        assert e.bytes_sent == pred["bytes_sent"].tolist()
        assert e.msgs_sent == pred["msgs_sent"].tolist()
        assert e.bytes_recv == pred["bytes_recv"].tolist()
    rows = epoch.predict(s.partition_costs(), job(dims=dims), "shm", exchanges=["p2p", "bcast"])
    assert {r["model"] for r in rows} == {"hp", "rp"} and all(r["epoch"] > 0 for r in rows)


def test_threads_in_the_compute_terms():
    """One rank of 10 nonzeros: 0.1 s x 10 x (4 + 2 + 4 + 2) SpMM columns = 12 s on one thread. The SpMM runs
    wholly over the threads (6 s on 2); on a node of 2 cores, 4 threads are 2x oversubscribed (12 / 4 x 2 = 6 s);
    elementwise work is half parallel (Amdahl: 0.5 + 0.5 / 2 = 0.75 of its time)."""
    one = epoch.PartitionCost(model="hp", volume=np.array([[0]]), load=np.array([10]), rows=np.array([4]),
                              own=np.array([10]), directed=False)
    two_cores = Machine("hand", 1, Channel(1.0, 0.01), Channel(1.0, 0.01), None, 2, SPMM_ONLY)
    seconds = {t: epoch.rank_times(one, job().with_(threads=t), two_cores)["epoch"] for t in (1, 2, 4)}
    assert seconds == pytest.approx({1: 12.0, 2: 6.0, 4: 6.0})
    elem = epoch.ComputeModel(spmm=0.0, dense=0.0, elem=1.0, const=0.0)
    e1, e2 = (epoch.rank_times(one, job().with_(threads=t), hand_machine(elem).with_ranks_per_node(1))["epoch"]
              for t in (1, 2))
    assert e2 == pytest.approx(0.75 * e1 * 2)  # the hand machine has one core: 2 threads also oversubscribe it 2x
