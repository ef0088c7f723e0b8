"""Mini-batch training out of core (``--out-of-core``, :mod:`shgcn.trainer.outofcore`): the same batches,
plans and losses as the in-memory path, bit for bit; a rank's memory held to the batch, not the block."""

import numpy as np
import pytest
import scipy.sparse as sp
from helpers.mpi import GRAPHS, build_stores, read_log, train

from shgcn import store
from shgcn.core.sample import SamplerConfig
from shgcn.trainer import mapped, outofcore
from shgcn.trainer.config import TrainConfig
from shgcn.trainer.context import _minibatches
from shgcn.trainer.plan import comm_plan

pytestmark = pytest.mark.mpi
TIMEOUT = 300  # seconds, each trainer run


@pytest.fixture(scope="module")
def stores(tmp_path_factory, client):
    """GRAPHS (an undirected SBM, a directed R-MAT) at 2 and 3 parts, rp."""
    return build_stores(tmp_path_factory.mktemp("ooc-stores"), client, parts=(2, 3), models=("rp",))


def _path_graph() -> outofcore.OutOfCoreBatches:
    """The path 0-1-2-3 with self loops on 2 ranks ({0, 1}, {2, 3}); rank 0's block, values 1..5 in row order."""
    blk = outofcore.MappedBlock(
        lo=0, n_own=2, indptr=np.array([0, 2, 5]), indices=np.array([0, 1, 0, 1, 2], np.int32),
        data=np.arange(1, 6, dtype=np.float32), recv_ids=np.array([2]), recv_ptr=np.array([0, 0, 1]),
        t_indptr=np.array([0, 2, 5]), t_indices=np.array([0, 1, 0, 1, 2], np.int32), t_recv_ids=np.array([2]),
        offsets=np.array([0, 2, 4]), rank=0)
    from shgcn.core.sample import Sampler

    sampler = Sampler(sp.csr_matrix((4, 4), dtype=np.float32), SamplerConfig(size=3))
    return outofcore.OutOfCoreBatches(blk, sampler, np.arange(4), mapped.Scratch(), steps=2, saint=False,
                                      norm_batches=1)


def test_a_hand_built_batch():
    ob = _path_graph()
    v = ob.view_of(np.array([0, 1, 2]))
    np.testing.assert_array_equal(v.rows, [0, 1])
    assert v.vertices == 3 and v.cp.offsets.tolist() == [0, 2, 3]
    assert [(q, r.tolist()) for q, r in v.cp.send_to] == [(1, [1])]  # row 1's column has vertex 2 (rank 1's)
    assert v.cp.recv_from == [(1, 1)] and v.cp.recv_start.tolist() == [0, 0, 1]
    assert v.cp.recv_ids.tolist() == [2] and v.halo_new.tolist() == [2]
    np.testing.assert_array_equal(v.lm.own.toarray(), [[1, 2], [3, 4]])
    np.testing.assert_array_equal(v.lm.halo[1].toarray(), [[0], [5]])
    v = ob.view_of(np.array([0, 2, 3]))  # vertex 1 out: row 0 alone, nothing to send or receive
    np.testing.assert_array_equal(v.rows, [0])
    assert v.cp.send_to == [] and v.cp.recv_from == [] and v.lm.halo == {}
    np.testing.assert_array_equal(v.lm.own.toarray(), [[1]])
    assert [b.tolist() for b in ob.eval_batches()] == [[0, 2], [1, 3]]


def _same_view(a, b) -> None:
    np.testing.assert_array_equal(a.rows, b.rows)
    assert a.vertices == b.vertices and a.cp.recv_from == b.cp.recv_from
    for f in ("offsets", "recv_start", "recv_ids"):
        np.testing.assert_array_equal(getattr(a.cp, f), getattr(b.cp, f))
    np.testing.assert_array_equal(a.halo_new, b.halo_new)
    assert [(q, r.tolist()) for q, r in a.cp.send_to] == [(q, r.tolist()) for q, r in b.cp.send_to]
    assert set(a.lm.halo) == set(b.lm.halo)
    for x, y in [(a.lm.own, b.lm.own)] + [(a.lm.halo[q], b.lm.halo[q]) for q in a.lm.halo]:
        assert x.shape == y.shape
        for f in ("indptr", "indices", "data"):
            assert np.array_equal(getattr(x, f), getattr(y, f))  # the values bit for bit
    assert (a.left is None) == (b.left is None)
    if a.left is not None:
        assert np.array_equal(a.left, b.left)


@pytest.mark.parametrize("kind", GRAPHS)
@pytest.mark.parametrize("sampler", ["node", "edge", "rw"])
def test_views_equal_the_in_memory_views(stores, monkeypatch, kind, sampler):
    """Every rank's batch views, with and without GraphSAINT's scales, equal the in-memory ones; the one-time
    passes in slices of 7 (:data:`mapped.CHUNK`) give the same as one pass (the edge sampler's sums)."""
    monkeypatch.setattr(mapped, "CHUNK", 7)
    path = stores[kind, 3]
    s = store.open_store(path)
    for saint in (False, True):
        cfg = TrainConfig(store=str(path), mode="minibatch", sampler=sampler, batch_size=60, seed=3,
                          saint="on" if saint else "off", norm_batches=4)
        for r in range(s.parts):
            block = s.rank(r)
            mb = _minibatches(cfg, s, block, comm_plan(block.plan, r, s.offsets))
            ob = outofcore.batches(s, block, r, SamplerConfig(kind=sampler, size=60, seed=3), steps=mb.steps,
                                   saint=saint, norm_batches=4)
            if saint:
                for f in ("loss_weight", "row_scale", "edge_scale"):
                    assert np.array_equal(getattr(mb, f), getattr(ob, f))
            for epoch, step in ((0, 0), (0, 3), (2, 1)):
                _same_view(mb.view(epoch, step), ob.view(epoch, step))
            ob.scratch.close()


@pytest.mark.parametrize("kind,sampler", [("undirected", "node"), ("directed", "edge"), ("undirected", "rw")])
def test_losses_are_the_in_memory_losses_bit_for_bit(stores, tmp_path, kind, sampler):
    logs = {}
    for ooc in (False, True):
        logs[ooc] = tmp_path / f"run-{ooc}.jsonl"
        res = train(2, stores[kind, 2], "--mode", "minibatch", "--sampler", sampler, "--batch-size", 80,
                    "--epochs", 2, "--seed", 5, "--dropout", 0.3, *(["--out-of-core"] if ooc else []),
                    log=logs[ooc], timeout=TIMEOUT)
        assert res.returncode == 0, res.stderr
    (_, mem), (_, ooc) = read_log(logs[False], "step"), read_log(logs[True], "step")
    assert len(mem) > 5 and [s.loss for s in ooc] == [s.loss for s in mem]
    assert [s.bytes_sent for s in ooc] == [s.bytes_sent for s in mem]
    header, epochs = read_log(logs[True])
    assert header.config["out_of_core"] and all(len(e.anon_memory) == 2 and min(e.anon_memory) > 0 for e in epochs)
    assert all(0 <= e.val_acc <= 1 for e in epochs)  # evaluated on batches (its own estimate, not the whole graph's)


def test_torchdist_batches_equal_the_in_memory_ones(stores):
    torch = pytest.importorskip("torch")
    from shgcn.trainer import torchdist as td

    path = stores["directed", 3]
    for sampler in ("node", "rw"):
        for r in range(3):
            kw = {"batch_size": 60, "sampler": sampler, "seed": 1, "rank": r, "size": 3, "ahead": False}
            with td.MiniBatches(path, **kw) as a, td.MiniBatches(path, out_of_core=True, **kw) as b:
                assert a.train_total == b.train_total
                for x, y in zip(a.epoch(1), b.epoch(1)):
                    for f in ("rows", "cols", "values", "x", "y", "train_mask", "val_mask", "test_mask", "node_ids"):
                        assert torch.equal(getattr(x.block, f), getattr(y.block, f)), f
                    assert x.block.plan.recv == y.block.plan.recv
                    assert [(q, t.tolist()) for q, t in x.block.plan.send] == \
                        [(q, t.tolist()) for q, t in y.block.plan.send]
                    assert (x.loss_weight is None) == (y.loss_weight is None)
                    if x.loss_weight is not None:
                        assert torch.equal(x.loss_weight, y.loss_weight)


def test_out_of_core_is_mini_batch_only(stores):
    res = train(1, stores["undirected", 2], "--out-of-core", use_mpirun=False, timeout=TIMEOUT)
    lines = [x for x in res.stderr.splitlines() if x.strip()]
    assert res.returncode == 2 and len(lines) == 1 and "--out-of-core: mini-batch" in lines[0], res.stderr


def test_an_exchange_that_reads_the_whole_block_is_refused(stores):
    res = train(2, stores["undirected", 2], "--mode", "minibatch", "--batch-size", 80, "--exchange", "node",
                "--out-of-core", timeout=TIMEOUT)
    assert res.returncode == 2 and "--exchange node: its setup reads the rank's whole block" in res.stderr, res.stderr


SIZES = {"small": 10000, "large": 100000}  # vertices: the large store is 10x the small one


@pytest.fixture(scope="module")
def sized(tmp_path_factory, client):
    from shgcn.pipeline.builder import build
    from shgcn.pipeline.config import BuildConfig

    root = tmp_path_factory.mktemp("ooc-sized")
    out = {}
    for name, n in SIZES.items():
        out[name] = root / f"{name}.zarr"
        build(BuildConfig(source=f"sbm:n={n},classes=4,degree=16,features=32,seed=1", out=str(out[name]), parts=2,
                          models=("rp",)), client, echo=lambda *a: None)
    return out


MB = ("--mode", "minibatch", "--batch-size", 256, "--epochs", 2, "--batches-per-epoch", 8, "--seed", 1)


@pytest.mark.slow
def test_memory_is_held_to_the_batch(sized, tmp_path):
    """A store 10x larger: the same modelled memory per rank and the same measured RssAnon, within 10%; the
    in-memory path's modelled and measured memory grow with the block (its matrix: 16 bytes a nonzero)."""
    modelled, anon, in_memory, in_memory_anon = {}, {}, {}, {}
    for name, path in sized.items():
        log = tmp_path / f"{name}.jsonl"
        res = train(2, path, *MB, "--out-of-core", log=log, timeout=TIMEOUT)
        assert res.returncode == 0, res.stderr
        header, epochs = read_log(log)
        modelled[name] = np.array(header.memory, float)
        anon[name] = np.max([e.anon_memory for e in epochs], axis=0).astype(float)
        res = train(2, path, *MB, log=tmp_path / f"{name}-mem.jsonl", timeout=TIMEOUT)
        assert res.returncode == 0, res.stderr
        header, epochs = read_log(tmp_path / f"{name}-mem.jsonl")
        in_memory[name] = np.array(header.memory, float)
        in_memory_anon[name] = np.max([e.anon_memory for e in epochs], axis=0).astype(float)
    np.testing.assert_allclose(modelled["large"], modelled["small"], rtol=0.1)
    np.testing.assert_allclose(anon["large"], anon["small"], rtol=0.1)
    assert (in_memory["large"] > 5 * in_memory["small"]).all() and (in_memory["large"] > 5 * modelled["large"]).all()
    assert (in_memory_anon["large"] > 1.1 * in_memory_anon["small"]).all()  # in memory, 10% tells them apart


@pytest.mark.slow
def test_the_memory_limit_checks_the_batch(sized, tmp_path):
    """A --memory-limit between the out-of-core and the in-memory model: the in-memory run stops before it
    trains (one line, exit 2), the out-of-core one trains."""
    log = tmp_path / "ooc.jsonl"
    res = train(2, sized["large"], *MB, "--out-of-core", log=log, timeout=TIMEOUT)
    assert res.returncode == 0, res.stderr
    header, _ = read_log(log)
    limit = 3 * sum(header.memory)  # the model aside: it is the same either way
    from shgcn.trainer.config import TrainConfig as Cfg

    job = Cfg(store=str(sized["large"])).job(32, 4)
    from shgcn.core.memory import model_bytes

    limit += 2 * model_bytes(job)
    res = train(2, sized["large"], *MB, "--memory-limit", limit, timeout=TIMEOUT)
    lines = [x for x in res.stderr.splitlines() if x.strip() and "memory limit" in x]
    assert res.returncode == 2 and lines and "--memory-limit" in lines[0], res.stderr
    res = train(2, sized["large"], *MB, "--memory-limit", limit, "--out-of-core", timeout=TIMEOUT)
    assert res.returncode == 0, res.stderr
