"""Mini-batches of a store for torch users (trainer/torchdist/loader.py): the batches are the numpy trainer's
(its sampler's vertices, its views' rows, plans and GraphSAINT-scaled Â rows), the ranks' batch blocks together
are the one-rank store's batch, a model runs on a batch's graph, the batches made ahead are the ones made
inline, and bad arguments are refused in one line."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from helpers.mpi import mpirun  # noqa: E402

from shgcn import store  # noqa: E402
from shgcn.core.errors import UserError  # noqa: E402
from shgcn.core.sample import TRAIN, Sampler, SamplerConfig  # noqa: E402
from shgcn.trainer import torchdist as td  # noqa: E402
from shgcn.trainer.config import TrainConfig  # noqa: E402
from shgcn.trainer.context import _minibatches  # noqa: E402
from shgcn.trainer.plan import comm_plan  # noqa: E402

SIZE, SEED = 120, 3


@pytest.fixture(scope="module")
def one_part(tmp_path_factory, client):
    """The graph of ``built`` (the small SBM) in a one-rank store."""
    from helpers.stores import make_in

    return make_in(tmp_path_factory.mktemp("one-part"), client, parts=1, models=("rp",)).path


def loaders(path, sampler, **kw):
    s = store.open_store(path)
    return [td.MiniBatches(s, batch_size=SIZE, sampler=sampler, seed=SEED, rank=r, size=s.parts, **kw)
            for r in range(s.parts)]


def entries(batch):
    """The batch's Â entries as {(row vertex, column vertex): value}, original ids."""
    b = batch.block
    ids = b.node_ids.numpy()
    return dict(zip(zip(ids[b.rows.numpy()].tolist(), ids[b.cols.numpy()].tolist()), b.values.numpy().tolist()))


@pytest.mark.parametrize("sampler", ["node", "edge", "rw"])
def test_the_batches_are_the_numpy_trainers(built, sampler):
    """Every rank's share of batch (epoch, step): the numpy trainer's view of it (rows, plan, Â rows scaled by
    GraphSAINT's normalisation for edge and rw), and the ranks' rows together are the core sampler's batch."""
    s = store.open_store(built.path)
    cfg = TrainConfig(store=str(built.path), mode="minibatch", sampler=sampler, batch_size=SIZE, seed=SEED)
    ls = loaders(built.path, sampler)
    numpy_mbs = []
    for r in range(s.parts):
        block = s.rank(r)
        numpy_mbs.append(_minibatches(cfg, s, block, comm_plan(block.plan, r, s.offsets)))
    assert ls[0].steps == numpy_mbs[0].steps == -(-600 // SIZE)
    sampler_ = Sampler(s.graph(), SamplerConfig(kind=sampler, size=SIZE, seed=SEED))
    for epoch, step in [(0, 0), (1, 2), (2, 4)]:
        union = []
        for loader, mb in zip(ls, numpy_mbs):
            got, want = loader.batch(epoch, step), mb.view(epoch, step)
            b = got.block
            assert got.key == mb.batch_number(epoch, step) == epoch * loader.steps + step
            assert np.array_equal(got.rows.numpy(), want.rows) and b.n_own == want.rows.size
            assert [(q, rows.tolist()) for q, rows in b.plan.send] == [(q, x.tolist()) for q, x in want.cp.send_to]
            assert b.plan.recv == [(q, int(want.cp.recv_start[q]), c) for q, c in want.cp.recv_from]
            dense = np.hstack([want.lm.own.toarray()] + [want.lm.halo[q].toarray() for q, _ in want.cp.recv_from])
            if sampler != "node":
                assert want.left is not None and got.loss_weight is not None
                dense = dense * want.left[:, None]
                np.testing.assert_array_equal(got.loss_weight.numpy(), mb.loss_weight[want.rows])
            else:
                assert want.left is None and got.loss_weight is None
            np.testing.assert_allclose(b.adjacency().to_dense().numpy(), dense, rtol=1e-6)
            assert torch.equal(b.x, loader.block.x[got.rows]) and torch.equal(b.y, loader.block.y[got.rows])
            assert torch.equal(b.train_mask, loader.block.train_mask[got.rows])
            union += b.node_ids[:b.n_own].tolist()
            assert got.vertices == want.vertices
        batch = sampler_.batch(epoch * ls[0].steps + step, TRAIN)
        assert sorted(union) == batch.tolist() and batch.size > 0
    for loader in ls:
        loader.close()


def test_a_batch_is_the_whole_matrix_restricted(built):
    """Without normalisation the ranks' batch entries are Â's entries between the batch's vertices."""
    whole = td.whole_block(built.path)
    a = torch.sparse_coo_tensor(torch.stack([whole.rows, whole.cols]), whole.values, (600, 600),
                                check_invariants=True).to_dense()
    got = {}
    batch = []
    for loader in loaders(built.path, "node"):
        with loader:
            bt = loader.batch(1, 3)
            got.update(entries(bt))
            batch += bt.block.node_ids[:bt.block.n_own].tolist()
    idx = torch.tensor(sorted(batch))
    sub = a[idx][:, idx]
    r, c = torch.nonzero(sub, as_tuple=True)
    want = dict(zip(zip(idx[r].tolist(), idx[c].tolist()), sub[r, c].tolist()))
    assert got == want and len(want) > len(batch)


@pytest.mark.parametrize("sampler", ["node", "rw"])
def test_the_batches_do_not_depend_on_the_ranks(built, one_part, sampler):
    """Three ranks' shares of a batch together are the one-rank store's batch: vertices, Â (normalised), the
    loss weights of every vertex."""
    (one,) = loaders(one_part, sampler)
    three = loaders(built.path, sampler)
    for epoch, step in [(0, 1), (3, 0)]:
        b1 = one.batch(epoch, step)
        assert b1.block.plan.n_halo == 0 and b1.block.plan.send == []
        got, weights = {}, {}
        for loader in three:
            bt = loader.batch(epoch, step)
            got.update(entries(bt))
            if bt.loss_weight is not None:
                weights.update(zip(bt.block.node_ids[:bt.block.n_own].tolist(), bt.loss_weight.tolist()))
        want = entries(b1)
        assert got.keys() == want.keys()
        np.testing.assert_allclose([got[k] for k in want], list(want.values()), rtol=1e-6)
        if sampler == "rw":
            assert weights == dict(zip(b1.block.node_ids.tolist(), b1.loss_weight.tolist()))


def test_a_model_runs_on_a_batch(one_part):
    """GCNConv on ``batch.graph`` is Â_batch X W + b; the loss (node sampler) is the batch's training rows' mean,
    with GraphSAINT's weights (rw) their weighted sum over every training row."""
    torch.manual_seed(0)
    conv = td.GCNConv(8, 4)
    (loader,) = loaders(one_part, "node")
    bt = loader.batch(2, 1)
    b = bt.block
    out = conv(b.x, bt.graph)
    lin = conv.conv.lin
    want = b.adjacency().to_dense() @ (b.x @ lin.weight.T) + conv.conv.bias
    torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-5)
    m = b.train_mask
    torch.testing.assert_close(bt.loss(out), torch.nn.functional.cross_entropy(out[m], b.y[m]))
    (rw,) = loaders(one_part, "rw")
    bt = rw.batch(2, 1)
    out = conv(bt.block.x, bt.graph)
    m = bt.block.train_mask
    per_row = torch.nn.functional.cross_entropy(out[m], bt.block.y[m], reduction="none")
    total = int(rw.block.train_mask.sum())
    assert total > int(m.sum()) > 0
    torch.testing.assert_close(bt.loss(out), (per_row * bt.loss_weight[m]).sum() / total)
    loader.close()
    rw.close()


def test_batches_made_ahead_are_the_batches_made_inline(built):
    ahead = td.MiniBatches(built.path, batch_size=SIZE, sampler="edge", seed=SEED, rank=2, size=3)
    inline = td.MiniBatches(built.path, batch_size=SIZE, sampler="edge", seed=SEED, rank=2, size=3, ahead=False)
    ahead.set_epoch(1)
    got = list(ahead)
    assert len(got) == len(ahead) == ahead.steps and ahead._plans.pool is not None
    assert [(b.epoch, b.step) for b in got] == [(1, s) for s in range(ahead.steps)]
    for b, w in zip(got, inline.epoch(1)):
        for name in ("rows", "cols", "values", "x", "node_ids"):
            assert torch.equal(getattr(b.block, name), getattr(w.block, name))
        assert torch.equal(b.loss_weight, w.loss_weight)
    assert not torch.equal(got[0].rows, got[1].rows)
    ahead.close()
    inline.close()


def test_bad_arguments_are_one_line(built):
    for kw, match in [({"sampler": "walk"}, "choose from node, edge, rw"), ({"steps": 0}, "must be >= 1"),
                      ({"norm_batches": 10**9}, "norm_batches at most 10,000"),
                      ({"batch_size": 0}, "--batch-size 0: must be between 1"),
                      ({"batch_size": 601}, "--batch-size 601")]:
        args = {"batch_size": SIZE, **kw}
        with pytest.raises(UserError, match=match) as e:
            td.MiniBatches(built.path, rank=0, size=3, **args)
        assert "\n" not in str(e.value)
    with pytest.raises(UserError, match=r"\b3\b.*\b2\b") as e:  # open_block's refusal of a store for 3 ranks
        td.MiniBatches(built.path, batch_size=SIZE, rank=0, size=2)
    assert "\n" not in str(e.value)
    with td.MiniBatches(built.path, batch_size=SIZE, rank=0, size=3) as loader:
        with pytest.raises(UserError, match=r"step 5 is not in 0\.\.4"):
            loader.batch(0, 5)
        for e in (-1, 1.5, "0"):  # a generator: the refusal comes with the first batch asked for
            with pytest.raises(UserError, match=r"the epoch must be an integer >= 0"):
                next(iter(loader.epoch(e)))
        for state in (None, {}, [1]):
            with pytest.raises(UserError, match="is not a loader's state_dict"):
                loader.load_state_dict(state)


def test_a_block_of_another_partition_is_refused(built, tmp_path_factory, client):
    """Two stores of one graph, another partition each: MiniBatches(store_a, block=open_block(store_b, ...)) is
    refused in one line (its batches' ids, features and labels would not be the block's); the store's own block
    is accepted."""
    from helpers.stores import make_in

    other = make_in(tmp_path_factory.mktemp("rp-only"), client, models=("rp",)).path
    with pytest.raises(UserError, match="not rank 0's rows of") as e:
        td.MiniBatches(built.path, batch_size=SIZE, rank=0, size=3, block=td.open_block(other, 0, 3))
    assert "\n" not in str(e.value)
    with pytest.raises(UserError, match="the block is rank 0's"):  # another rank's block of the same store
        td.MiniBatches(built.path, batch_size=SIZE, rank=1, size=3, block=td.open_block(built.path, 0, 3))
    with td.MiniBatches(built.path, batch_size=SIZE, rank=0, size=3, block=td.open_block(built.path, 0, 3)) as ok:
        assert ok.block.n_own > 0


# a tiny two-layer GCN trained for 2 epochs of mini-batches; rank 0 prints the step losses (summed over ranks)
SCRIPT = r"""
import json, sys, torch
from shgcn.trainer import torchdist as td
torch.set_num_threads(1)
path, sampler = sys.argv[1], sys.argv[2]
rank, size = td.init_from_env()
torch.manual_seed(0)

class Net(torch.nn.Module):
    def __init__(self, d, c):
        super().__init__()
        self.c1, self.c2 = td.GCNConv(d, 16), td.GCNConv(16, c)

    def forward(self, x, graph):
        return self.c2(torch.relu(self.c1(x, graph)), graph)

loader = td.MiniBatches(path, batch_size=120, sampler=sampler, seed=3)
model = Net(loader.block.x.shape[1], loader.block.classes)
opt = torch.optim.Adam(model.parameters(), lr=0.01)
losses, halo_bytes = [], 0
for epoch in range(2):
    for batch in loader.epoch(epoch):
        opt.zero_grad()
        loss = batch.loss(model(batch.block.x, batch.graph))
        loss.backward()
        td.sync_gradients(model.parameters())
        opt.step()
        losses.append(float(td.global_sum(loss.detach().reshape(1))[0]))
        halo_bytes += batch.graph.halo.traffic.bytes_sent
loader.close()
sent = td.global_sum(torch.tensor([float(halo_bytes)]))
if rank == 0:
    print(json.dumps({"size": size, "losses": losses, "sent": float(sent[0])}), flush=True)
td.finish()
"""


@pytest.fixture(scope="module")
def two_parts(tmp_path_factory, client):
    """The graph of ``built`` in a two-rank store."""
    from helpers.stores import make_in

    return make_in(tmp_path_factory.mktemp("two-parts"), client, parts=2, models=("rp",)).path


@pytest.mark.mpi
@pytest.mark.slow
@pytest.mark.parametrize("sampler", ["node", "rw"])
def test_two_ranks_train_what_one_process_trains(one_part, two_parts, tmp_path, sampler):
    """The same model trained on 2 epochs of mini-batches under mpirun -n 2 and in one process: the same step
    losses (rtol 1e-5), the two ranks exchanging halo rows."""
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "PMI_SIZE")}
    runs = {}
    for ranks, path in ((1, one_part), (2, two_parts)):
        cmd = [sys.executable, str(script), str(path), sampler]
        res = subprocess.run([mpirun(), "-n", "2", *cmd] if ranks == 2 else cmd, capture_output=True, text=True,
                             timeout=300, env=env)
        assert res.returncode == 0, res.stdout + res.stderr
        runs[ranks] = json.loads(res.stdout.strip().splitlines()[-1])
    assert runs[1]["size"] == 1 and runs[2]["size"] == 2
    assert len(runs[1]["losses"]) == 2 * -(-600 // 120) and runs[1]["sent"] == 0 < runs[2]["sent"]
    assert runs[1]["losses"][-1] < runs[1]["losses"][0]
    np.testing.assert_allclose(runs[2]["losses"], runs[1]["losses"], rtol=1e-5)


def test_the_position_resumes_mid_epoch(built):
    """The position is the batch after the last one handed out; a loader given it (state_dict) hands out what
    the first would have handed out next, mid-epoch and across epochs."""
    first = td.MiniBatches(built.path, batch_size=SIZE, sampler="rw", seed=SEED, rank=1, size=3)
    assert first.position == (0, 0)
    seen = []
    for batch in first.epoch(0):
        seen.append(batch.key)
    assert first.position == (1, 0) and seen == list(range(first.steps))
    it = first.epoch(1)
    next(it), next(it)
    assert first.position == (1, 2)
    state = first.state_dict()
    assert state == {"epoch": 1, "step": 2, "config": {"n": 600, "sampler": "rw", "batch_size": SIZE, "seed": SEED,
                                                       "steps": 5, "walk_length": 2, "normalisation": True,
                                                       "norm_batches": 50}}
    rest = [b for b in it] + list(first.epoch(2))
    other = td.MiniBatches(built.path, batch_size=SIZE, sampler="rw", seed=SEED, rank=1, size=3, ahead=False)
    other.load_state_dict(state)
    resumed = [b for e in (1, 2) for b in other.epoch(e)]
    assert [b.key for b in resumed] == [b.key for b in rest] == list(range(7, 15))
    for a, b in zip(rest, resumed):
        assert torch.equal(a.block.values, b.block.values) and torch.equal(a.rows, b.rows)
    other.set_epoch(4)
    assert [b.step for b in other] == list(range(5)) and other.position == (5, 0)
    with pytest.raises(UserError, match=r"position \(0, 5\) is not an epoch >= 0 and a step in 0\.\.4"):
        other.set_position(0, 5)
    first.close()
    other.close()


def test_a_position_of_other_batches_is_refused(built):
    with td.MiniBatches(built.path, batch_size=SIZE, sampler="node", seed=SEED, rank=0, size=3) as a, \
            td.MiniBatches(built.path, batch_size=SIZE + 1, sampler="edge", seed=SEED, rank=0, size=3) as b:
        with pytest.raises(UserError) as e:
            b.load_state_dict(a.state_dict())
    assert str(e.value) == ("MiniBatches: the saved position is of other batches: sampler node (here edge), "
                            f"batch_size {SIZE} (here {SIZE + 1}), normalisation False (here True)")


def test_the_next_epochs_first_batch_is_made_ahead(built):
    loader = td.MiniBatches(built.path, batch_size=SIZE, sampler="edge", seed=SEED, rank=0, size=3)
    inline = td.MiniBatches(built.path, batch_size=SIZE, sampler="edge", seed=SEED, rank=0, size=3, ahead=False)
    *_, last = loader.epoch(0)
    assert last.step == loader.steps - 1 and list(loader._plans.pending) == [(1, 0)]
    first = next(iter(loader))
    assert (first.epoch, first.step, first.key) == (1, 0, loader.steps) and list(loader._plans.pending) == [(1, 1)]
    want = inline.batch(1, 0)
    assert torch.equal(first.block.values, want.block.values) and torch.equal(first.rows, want.rows)
    loader.close()
    inline.close()


@pytest.mark.parametrize("sampler", ["node", "edge"])
def test_the_predicted_rows_are_the_batch_plans_and_the_pipelines(built, sampler):
    """A batch's predicted rows (from the graph and the partition) are what every rank's batch plan sends and
    receives, and the pipeline's batch volume (shgcn.pipeline.metrics.batches.batch_traffic)."""
    import scipy.sparse as sp

    from shgcn.pipeline.metrics.batches import batch_traffic

    s = store.open_store(built.path)
    pattern = sp.csc_matrix(s.graph() + sp.identity(600, dtype=np.float32, format="csr"))
    part = s.partition(s.attrs["model"])
    ls = loaders(built.path, sampler)
    for epoch, step in [(0, 0), (2, 3)]:
        sent, recv, msgs = ls[0].predicted_rows(epoch, step)
        vertices = Sampler(s.graph(), SamplerConfig(kind=sampler, size=SIZE, seed=SEED)).batch(
            epoch * ls[0].steps + step, TRAIN)
        want_send, want_recv, _, _ = batch_traffic(pattern, vertices, part, 3)
        assert sent.tolist() == want_send.tolist() and recv.tolist() == want_recv.tolist() and sent.sum() > 0
        for r, loader in enumerate(ls):
            plan = loader.batch(epoch, step).block.plan
            assert sum(int(rows.numel()) for _, rows in plan.send) == sent[r]
            assert plan.n_halo == sum(c for _, _, c in plan.recv) == recv[r] and len(plan.send) == msgs[r]
    for loader in ls:
        loader.close()
