"""Every architecture (gcn, sage, gin, gat) under mpirun: P = 1, 2, 4 give
the same losses, and every exchange of a step sends exactly the bytes the
store's volume predicts (full batch and mini-batch, float32 and 16-bit)."""

import numpy as np
import pytest
import scipy.sparse as sp
from helpers import one_line
from helpers.mpi import GRAPHS, read_log, train

from shgcn import store
from shgcn.core import costs, epoch
from shgcn.core.sample import TRAIN, Sampler, SamplerConfig
from shgcn.pipeline.metrics import batches as batch_quality
from shgcn.pipeline.sources.synthetic import parse_spec
from shgcn.pipeline.stages.ingest import to_graph
from shgcn.pipeline.stages.normalize import normalized_adjacency

pytestmark = pytest.mark.mpi

ARCH_ARGS = {"gcn": [], "sage": [], "gin": [], "gat": ["--heads", "3"]}


def quick(cases, *params):
    """Parametrize over ``params``; combinations outside ``cases`` are slow."""
    return [pytest.param(*p, marks=() if p in cases else pytest.mark.slow) for p in params]


@pytest.fixture
def stores(mpi_stores):
    return mpi_stores


def run(ranks, path, arch, log, *args):
    res = train(ranks, path, "--arch", arch, *ARCH_ARGS[arch], *args, log=log, use_mpirun=ranks > 1, timeout=300)
    assert res.returncode == 0, res.stderr
    return read_log(log)


@pytest.mark.parametrize("arch,kind", quick({("sage", "undirected"), ("gin", "directed"), ("gat", "directed")},
                                             *[(a, k) for a in costs.ARCHS for k in GRAPHS]))
def test_losses_do_not_depend_on_ranks(stores, tmp_path, arch, kind):
    """20 epochs, dropout (and attention dropout) on: the masks follow the vertices, P only changes summation order."""
    losses = {}
    for ranks in (1, 2, 4):
        _, epochs = run(ranks, stores[kind, ranks], arch, tmp_path / f"r{ranks}.jsonl", "--epochs", 20,
                        "--hidden", "16", "--eval-every", 20)
        losses[ranks] = [e.loss for e in epochs]
    assert len(losses[1]) == 20 and losses[1][-1] < losses[1][0]
    np.testing.assert_allclose(losses[2], losses[1], rtol=1e-4)
    np.testing.assert_allclose(losses[4], losses[1], rtol=1e-4)


@pytest.mark.parametrize("arch", quick({("gat",)}, *[(a,) for a in costs.ARCHS]))
def test_minibatch_losses_do_not_depend_on_ranks(stores, tmp_path, arch):
    """Mini-batch (rw sampler, GraphSAINT on): every rank re-draws the batch; SAGE's mean and GAT's softmax run
    over the induced subgraph, the same whoever holds the rows."""
    losses = {}
    for ranks in (1, 2, 4):
        run(ranks, stores["directed", ranks], arch, tmp_path / f"r{ranks}.jsonl", "--mode", "minibatch",
            "--sampler", "rw", "--batch-size", 100, "--epochs", 2)
        losses[ranks] = [s.loss for s in read_log(tmp_path / f"r{ranks}.jsonl", "step")[1]]
    assert len(losses[1]) > 5
    np.testing.assert_allclose(losses[2], losses[1], rtol=1e-4)
    np.testing.assert_allclose(losses[4], losses[1], rtol=1e-4)


def predicted_calls(s, header, send, recv, itemsize=4):
    return costs.call_bytes(send, recv, header.arch, header.dims, s.attrs["directed"], header.heads, itemsize)


@pytest.mark.parametrize("arch,kind,ranks", quick({(a, "directed", 4) for a in costs.ARCHS} | {("sage", "undirected", 4)},
                                                   *[(a, k, r) for a in costs.ARCHS for k in GRAPHS for r in (2, 4)]))
def test_bytes_of_every_exchange_equal_the_prediction(stores, tmp_path, arch, kind, ranks):
    path = stores[kind, ranks]
    header, epochs = run(ranks, path, arch, tmp_path / "run.jsonl", "--epochs", 2, "--hidden", "32,8")
    s = store.open_store(path)
    assert header.arch == arch and header.heads == ([3, 3, 1] if arch == "gat" else [1, 1, 1])
    vol = s.quality()["volume"].sel(model="hp").values
    calls = predicted_calls(s, header, vol.sum(1), vol.sum(0))
    cost = next(c for c in s.partition_costs() if c.model == "hp")
    traffic = epoch.rank_traffic(cost, header.dims, "p2p", arch, header.heads)
    n_fwd = len(header.dims) - 1
    for e in epochs:
        assert np.array(e.exchange_bytes).T.tolist() == calls.tolist()  # per rank, per layer and direction
        assert e.bytes_sent == traffic["bytes_sent"].tolist() == calls.sum(0).tolist()
        assert e.msgs_sent == traffic["msgs_sent"].tolist()
        assert e.eval_bytes_sent == calls[:n_fwd].sum(0).tolist()  # evaluation: the forward exchanges
    assert calls.sum() > 0


@pytest.mark.parametrize("arch,kind", quick({("gat", "directed"), ("sage", "undirected")},
                                             *[(a, k) for a in costs.ARCHS for k in GRAPHS]))
def test_minibatch_bytes_of_every_exchange_equal_the_batch_volume(stores, tmp_path, arch, kind):
    spec, directed = GRAPHS[kind]
    ranks = 4
    header, _ = run(ranks, stores[kind, ranks], arch, tmp_path / "run.jsonl", "--mode", "minibatch",
                    "--batch-size", 90, "--epochs", 1, "--hidden", "32,8", "--seed", 2)
    s = store.open_store(stores[kind, ranks])
    g = to_graph(parse_spec(spec), directed=directed)
    a = sp.csc_matrix(normalized_adjacency(g.adj, directed))
    sampler = Sampler(g.adj, SamplerConfig(kind="node", size=90, seed=2))
    steps = read_log(tmp_path / "run.jsonl", "step")[1]
    assert len(steps) == -(-s.attrs["n"] // 90)
    for rec in steps:
        send, recv, _, _ = batch_quality.batch_traffic(a, sampler.batch(rec.batch, TRAIN), s.partition("hp"), ranks)
        assert np.array(rec.exchange_bytes).T.tolist() == predicted_calls(s, header, send, recv).tolist()
        assert len(rec.wait_time) == ranks and min(rec.wait_time) >= 0


@pytest.mark.parametrize("arch,wire", quick({("gat", "bfloat16")}, ("gat", "bfloat16"), ("gcn", "bfloat16"),
                                             ("gat", "float16"), ("gcn", "float16")))
def test_16_bit_exchange_sends_half_the_bytes(stores, tmp_path, arch, wire):
    path = stores["directed", 4]
    h32, e32 = run(4, path, arch, tmp_path / "a.jsonl", "--epochs", 3, "--exchange-dtype", "float32")
    h16, e16 = run(4, path, arch, tmp_path / "b.jsonl", "--epochs", 3, "--exchange-dtype", wire)
    assert h16.exchange_dtype == wire
    for a, b in zip(e32, e16):
        assert 2 * np.array(b.bytes_sent) == pytest.approx(np.array(a.bytes_sent), abs=0)
        assert [2 * x for x in b.bytes_sent] == a.bytes_sent and sum(a.bytes_sent) > 0
        assert [2 * x for x in b.eval_bytes_sent] == a.eval_bytes_sent
    s = store.open_store(path)
    vol = s.quality()["volume"].sel(model="hp").values
    assert np.array(e16[0].exchange_bytes).T.tolist() == predicted_calls(s, h16, vol.sum(1), vol.sum(0), 2).tolist()
    # rounding to 16 bits changes the losses a little, not the training
    np.testing.assert_allclose([e.loss for e in e16], [e.loss for e in e32], rtol=2e-2)


@pytest.mark.slow
def test_16_bit_exchange_with_alltoallv(stores, tmp_path):
    path = stores["undirected", 2]
    _, e = run(2, path, "sage", tmp_path / "a.jsonl", "--epochs", 2, "--exchange", "alltoallv",
               "--exchange-dtype", "bfloat16")
    _, ref = run(2, path, "sage", tmp_path / "b.jsonl", "--epochs", 2, "--exchange", "alltoallv")
    assert [2 * x for x in e[0].bytes_sent] == ref[0].bytes_sent


@pytest.mark.parametrize("args,fragment", [
    (["--exchange", "bcast", "--exchange-dtype", "bfloat16"], "bcast"), (["--arch", "gat", "--heads", "0"], "--heads"),
    (["--arch", "gat", "--attn-dropout", "1.5"], "--attn-dropout"), (["--attn-dropout", "nan"], "--attn-dropout")])
def test_bad_model_options_are_one_line(stores, args, fragment):
    one_line(train(1, stores["undirected", 1], "--epochs", 1, *args, use_mpirun=False, timeout=60), fragment)


def test_checkpoint_of_another_architecture_is_refused(stores, tmp_path):
    path = stores["undirected", 2]
    ck = tmp_path / "ck"
    assert train(2, path, "--arch", "sage", "--epochs", 2, "--checkpoint", ck).returncode == 0
    one_line(train(2, path, "--arch", "gat", "--epochs", 4, "--checkpoint", ck, "--resume", timeout=60),
             "holds a sage model, not gat")
    res = train(2, path, "--arch", "sage", "--epochs", 4, "--checkpoint", ck, "--resume")
    assert res.returncode == 0, res.stderr
