"""Mini-batch training: exact bytes per batch, P-invariance, Cora accuracy."""

import numpy as np
import pytest
import scipy.sparse as sp
from helpers.mpi import GRAPHS, read_log, train

from shgcn import store
from shgcn.core.costs import spmm_widths
from shgcn.core.sample import TRAIN, Sampler, SamplerConfig
from shgcn.pipeline.builder import build
from shgcn.pipeline.config import BuildConfig
from shgcn.pipeline.metrics import batches as batch_quality
from shgcn.pipeline.sources.synthetic import parse_spec
from shgcn.pipeline.stages.ingest import to_graph
from shgcn.pipeline.stages.normalize import normalized_adjacency

pytestmark = pytest.mark.mpi

@pytest.fixture
def stores(mpi_stores):
    return mpi_stores


def steps(log):
    return read_log(log, "step")[1]


@pytest.mark.parametrize("kind", GRAPHS)
@pytest.mark.parametrize("ranks", [2, 4])
def test_bytes_per_batch_equal_predicted_batch_volume(stores, tmp_path, kind, ranks):
    spec, directed = GRAPHS[kind]
    path = stores[kind, ranks]
    log = tmp_path / "run.jsonl"
    res = train(ranks, path, "--mode", "minibatch", "--batch-size", 120, "--epochs", 2, "--hidden", "32,8",
                "--seed", 3, log=log)
    assert res.returncode == 0, res.stderr
    header, _ = read_log(log)
    s = store.open_store(path)
    g = to_graph(parse_spec(spec), directed=directed)
    a = sp.csc_matrix(normalized_adjacency(g.adj, directed))
    sampler = Sampler(g.adj, SamplerConfig(kind="node", size=120, seed=3))
    fwd, bwd = spmm_widths(header.dims, header.w_first)
    recs = steps(log)
    assert len(recs) == 2 * -(-s.attrs["n"] // 120)
    for rec in recs:
        batch = sampler.batch(rec.batch, TRAIN)  # the pipeline re-draws the trainer's batch from its number
        send, recv, _, _ = batch_quality.batch_traffic(a, batch, s.partition("hp"), ranks)
        back = recv if directed else send
        assert rec.bytes_sent == (4 * (send * sum(fwd) + back * sum(bwd))).tolist()
        assert rec.vertices == batch.size


QUICK_SAMPLERS = {("undirected", "node"), ("directed", "edge")}  # the rest run with the slow tests


@pytest.mark.parametrize("kind,sampler", [pytest.param(k, s, marks=() if (k, s) in QUICK_SAMPLERS else pytest.mark.slow)
                                          for s in ("node", "edge", "rw") for k in GRAPHS])
def test_losses_do_not_depend_on_ranks(stores, tmp_path, kind, sampler):
    losses = {}
    for ranks in (1, 2, 4):
        log = tmp_path / f"run{ranks}.jsonl"
        res = train(ranks, stores[kind, ranks], "--mode", "minibatch", "--sampler", sampler, "--batch-size", 100,
                    "--epochs", 3, log=log, use_mpirun=ranks > 1)
        assert res.returncode == 0, res.stderr
        losses[ranks] = [r.loss for r in steps(log)]
    assert len(losses[1]) > 10
    np.testing.assert_allclose(losses[2], losses[1], rtol=1e-4)
    np.testing.assert_allclose(losses[4], losses[1], rtol=1e-4)


@pytest.mark.parametrize("directed", [False, True])
def test_batch_plans_follow_the_definition(directed):
    """Every rank's batch plan, by its definition on the whole matrix: row j
    goes from its owner to q iff j and a row of q with a nonzero in column j
    are in the batch; the local matrix is the batch rows' block of Â."""
    from shgcn.pipeline.stages.layout import in_memory
    from shgcn.trainer.minibatch import BatchSource, MiniBatches
    from shgcn.trainer.plan import comm_plan, full_local

    rng = np.random.default_rng(5)
    n, parts = 70, 3
    m = sp.random(n, n, density=0.06, random_state=rng, format="csr", dtype=np.float32)
    if not directed:
        m = m + m.T
    a = (m + sp.identity(n, dtype=np.float32, format="csr")).tocsr()
    lay, blocks = in_memory(a, rng.integers(0, parts, n).astype(np.int32), parts, directed=directed)
    ap = sp.csr_matrix(a)[lay.perm][:, lay.perm].toarray() != 0  # in new ids
    off = lay.offsets
    scfg = SamplerConfig(kind="node", size=25, seed=2)
    for b in blocks:
        cp = comm_plan(b.plan, b.rank, off)
        tplan = b.transpose if b.transpose is not None else b.plan
        ids = np.concatenate([np.arange(b.offset, b.offset + b.plan.n_own), np.asarray(tplan.recv_ids)])
        columns = sp.csr_matrix((np.ones(len(tplan.indices), np.int8), ids[np.asarray(tplan.indices)],
                                 np.asarray(tplan.indptr)), shape=(b.plan.n_own, n))
        mb = MiniBatches(BatchSource(full_local(b.plan, cp), cp, lay.inverse, n, scfg, None, columns), 5, False, 1)
        for step in range(5):
            v = mb.view(1, step)
            batch = np.sort(lay.inverse[Sampler(sp.csr_matrix((n, n)), scfg).batch(mb.batch_number(1, step), TRAIN)])
            mine = batch[(batch >= off[b.rank]) & (batch < off[b.rank + 1])]
            assert np.array_equal(v.rows + off[b.rank], mine) and v.vertices == batch.size
            got_send = {q: mine[rows].tolist() for q, rows in v.cp.send_to}
            got_recv = {q: batch[v.cp.recv_ids[v.cp.recv_start[q]:v.cp.recv_start[q + 1]]].tolist()
                        for q, _ in v.cp.recv_from}
            for q in range(parts):
                theirs = batch[(batch >= off[q]) & (batch < off[q + 1])]
                if q == b.rank:
                    continue
                send = [j for j in mine if ap[theirs, j].any()]
                recv = [j for j in theirs if ap[mine, j].any()]
                assert got_send.get(q, []) == send and got_recv.get(q, []) == recv
                if recv:
                    np.testing.assert_array_equal(v.lm.halo[q].toarray() != 0, ap[np.ix_(mine, recv)])
            np.testing.assert_array_equal(v.lm.own.toarray() != 0, ap[np.ix_(mine, mine)])
            np.testing.assert_array_equal(v.lm.own_t.toarray(), v.lm.own.toarray().T)


def test_bad_minibatch_options(stores):
    for size in (-1, 0):  # 0 trained until issue 33 (it meant auto, 10% of the vertices)
        res = train(1, stores["undirected", 1], "--mode", "minibatch", "--batch-size", size, use_mpirun=False)
        lines = [x for x in res.stderr.splitlines() if x.strip()]
        assert res.returncode == 2 and len(lines) == 1 and f"--batch-size {size}: " in lines[0], res.stderr
    res = train(1, stores["undirected", 1], "--mode", "minibatch", "--batch-size", 10**6, use_mpirun=False)
    assert res.returncode == 2 and "more than the" in res.stderr


@pytest.mark.dataset
@pytest.mark.slow
def test_cora_minibatch_accuracy(shared_data, client, tmp_path):
    path = tmp_path / "cora-p2.zarr"
    build(BuildConfig(source="cora", out=str(path), parts=2, models=("hp",), data_dir=str(shared_data)), client,
          echo=lambda *a: None)
    accs = []
    for seed in range(5):
        log = tmp_path / f"run{seed}.jsonl"
        res = train(2, path, "--mode", "minibatch", "--sampler", "node", "--batch-size", 512, "--epochs", 200,
                    "--seed", seed, "--eval-every", 200, log=log)
        assert res.returncode == 0, res.stderr
        accs.append(read_log(log)[1][-1].test_acc)
    assert np.mean(accs) >= 0.78, accs


def test_plans_built_ahead_in_a_thread_equal_plans_built_inline(stores, tmp_path):
    logs = {}
    for mode in ("thread", "inline"):
        logs[mode] = tmp_path / f"{mode}.jsonl"
        res = train(2, stores["directed", 2], "--mode", "minibatch", "--batch-size", 100, "--epochs", 2,
                    "--plan-ahead", mode, log=logs[mode])
        assert res.returncode == 0, res.stderr
    a, b = steps(logs["thread"]), steps(logs["inline"])
    assert len(a) > 5 and [s.loss for s in a] == [s.loss for s in b]
    assert [s.bytes_sent for s in a] == [s.bytes_sent for s in b]


def test_batch_entries_equal_segments_filtered_by_the_batch():
    """The plan's fused pass (issue 59) keeps exactly the entries, in the same order, that ``segments`` of the
    batch's rows filtered by the batch mask of their columns keeps: rows with no entries, none kept, all kept."""
    from shgcn.core.csr import segments
    from shgcn.trainer.minibatch import batch_entries

    rng = np.random.default_rng(5)
    m = sp.random(300, 420, density=0.05, format="csr", random_state=3)
    indptr, indices = m.indptr.astype(np.int64), m.indices.astype(np.int64)
    gcol = rng.permutation(1000)[:420].astype(np.int64)
    for frac in (0.0, 0.1, 0.5, 1.0):
        in_batch = rng.random(1000) < frac
        for rows in (np.sort(rng.choice(300, 40, replace=False)), np.arange(300), np.zeros(0, np.int64)):
            rows = rows.astype(np.int64)
            pos, seg = segments(indptr, rows)
            keep = in_batch[gcol[indices[pos]]]
            got = batch_entries(indptr, indices, rows, gcol, in_batch)
            assert np.array_equal(got[0], pos[keep]) and np.array_equal(got[1], seg[keep])
            assert got[0].dtype == np.int64 and got[1].dtype == np.int64
    # the stored column ids as they are (int32), not an int64 copy: the same entries
    in_batch = rng.random(1000) < 0.5
    got32 = batch_entries(indptr, m.indices.astype(np.int32), np.arange(300), gcol, in_batch)
    pos, seg = segments(indptr, np.arange(300))
    keep = in_batch[gcol[indices[pos]]]
    assert np.array_equal(got32[0], pos[keep]) and np.array_equal(got32[1], seg[keep])


def test_live_entries_are_the_send_entries_with_a_pin_in_the_batch():
    """An entry is live when its row is one of the batch's and one of its pins is in the batch; by hand: rows
    0..3 with entries [0, 1], [], [2], [3, 4]; pins of entries 0..4: {5}, {6, 7}, {}, {8}, {5, 9}."""
    from shgcn.trainer.minibatch import live_entries

    row_ptr = np.array([0, 2, 2, 3, 5], np.int64)
    row_ent = np.array([0, 1, 2, 3, 4], np.int64)
    pin_ptr = np.array([0, 1, 3, 3, 4, 6], np.int64)
    pins = np.array([5, 6, 7, 8, 5, 9], np.int64)
    in_batch = np.zeros(10, bool)
    in_batch[[7, 9]] = True
    assert np.flatnonzero(live_entries(row_ptr, row_ent, pin_ptr, pins, np.array([0, 1, 2, 3]), in_batch, 5)).tolist() \
        == [1, 4]
    assert np.flatnonzero(live_entries(row_ptr, row_ent, pin_ptr, pins, np.array([3]), in_batch, 5)).tolist() == [4]
    in_batch[5] = True  # entry 0 too; row 2's entry has no pin
    assert np.flatnonzero(live_entries(row_ptr, row_ent, pin_ptr, pins, np.array([0, 2]), in_batch, 5)).tolist() \
        == [0, 1]
