"""A rank's block as torch tensors (trainer/torchdist/block.py): the ranks' rows of Â together are the
whole Â, the edge kinds, the plan against the store's quality table, a store for other ranks refused, and the
block on a device (every tensor moved, the plan's too; a GPU that is not there: one line)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from shgcn import store  # noqa: E402
from shgcn.core.errors import UserError  # noqa: E402
from shgcn.trainer.torchdist import open_block, predicted_rows  # noqa: E402
from shgcn.trainer.torchdist.block import TENSORS, as_device  # noqa: E402


def test_the_ranks_rows_are_the_whole_matrix(built):
    s = store.open_store(built.path)
    whole = store.graph_arrays(s, normalized=True)
    got = []
    for r in range(s.parts):
        b = open_block(s, rank=r, size=s.parts)
        ids = b.node_ids.numpy()
        got += zip(ids[b.rows.numpy()].tolist(), ids[b.cols.numpy()].tolist(), b.values.numpy().tolist())
        assert b.x.shape == (b.n_own, int(s.attrs["feature_dim"])) and b.x.dtype == torch.float32
        assert b.adjacency().shape == (b.n_own, b.n_local) and b.classes == int(s.attrs["classes"])
    want = zip(whole.dst.tolist(), whole.src.tolist(), whole.weight.tolist())
    assert sorted(got) == sorted(want)


def test_edge_kinds(built):
    b = open_block(built.path, rank=1, size=3)
    norm, w = b.edges("norm")
    pattern, none = b.edges("pattern")
    attention, _ = b.edges("attention")
    loops = int((b.rows == b.cols).sum())
    assert loops == b.n_own  # Â has every self loop
    assert w is not None and none is None and norm.shape[1] == attention.shape[1] == pattern.shape[1] + loops
    assert bool((pattern[0] != pattern[1]).all()) and int(norm[1].max()) < b.n_own <= int(norm[0].max())
    with pytest.raises(UserError, match="not one of norm, pattern, attention"):
        b.edges("laplacian")


def test_plans_equal_the_quality_tables_prediction(built):
    sent, recv, msgs = predicted_rows(built.path)
    for r in range(3):
        p = open_block(built.path, rank=r, size=3).plan
        assert p.send_rows == sent[r] and p.n_halo == recv[r] and len(p.send) == msgs[r]
        assert sum(c for _, _, c in p.recv) == p.n_halo


def test_masks_and_labels(built):
    s = store.open_store(built.path)
    b = open_block(s, rank=0, size=3)
    raw = s.rank(0)
    np.testing.assert_array_equal(b.train_mask.numpy(), np.asarray(raw.train_mask) & (np.asarray(raw.labels) >= 0))
    assert b.y.dtype == torch.int64 and not b.multilabel


def test_a_store_for_other_ranks_is_refused(built):
    with pytest.raises(UserError, match="the store has 3 parts but the job has 2 ranks; run with mpirun -n 3 "):
        open_block(built.path, rank=0, size=2)
    with pytest.raises(UserError, match="the store has 3 parts but the job has 1 rank; run with mpirun -n 3 "):
        open_block(built.path)  # no process group: one process


def tensors(b):
    """Every tensor of a block by name, the plan's send rows included."""
    out = {name: getattr(b, name) for name in TENSORS}
    out.update({f"send{q}": rows for q, rows in b.plan.send})
    return out


def test_to_the_cpu_is_the_same_block(built):
    b = open_block(built.path, rank=1, size=3)
    c = b.to("cpu")
    assert c is not b and c.device == torch.device("cpu") and b.to(torch.device("cpu")).device.type == "cpu"
    assert tensors(c).keys() == tensors(b).keys() and len(b.plan.send) > 0
    for name, t in tensors(b).items():
        assert torch.equal(tensors(c)[name], t) and tensors(c)[name].dtype == t.dtype, name
    assert (c.plan.rank, c.plan.size, c.plan.n_own, c.plan.n_halo, c.plan.recv, c.n, c.classes, c.directed,
            c.multilabel) == (b.plan.rank, b.plan.size, b.plan.n_own, b.plan.n_halo, b.plan.recv, b.n, b.classes,
                              b.directed, b.multilabel)


def test_every_tensor_goes_to_the_asked_device(built):
    """``meta`` stands for a GPU here: open_block's device and block.to reach every tensor, the plan's too,
    and leave the block they were called on where it was."""
    b = open_block(built.path, rank=0, size=3)
    for moved in (b.to("meta"), b.to(torch.device("meta")), open_block(built.path, rank=0, size=3, device="meta")):
        assert moved.device == torch.device("meta")
        assert {name: t.device.type for name, t in tensors(moved).items()} == dict.fromkeys(tensors(b), "meta")
        assert [t.shape for t in tensors(moved).values()] == [t.shape for t in tensors(b).values()]
    assert {t.device.type for t in tensors(b).values()} == {"cpu"}


def test_a_gpu_without_one_is_refused_in_one_line(built, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    for call in (lambda: open_block(built.path, rank=0, size=3, device="cuda"),
                 lambda: open_block(built.path, rank=0, size=3).to(torch.device("cuda", 0))):
        with pytest.raises(UserError, match=r"device cuda(:0)?: torch sees no CUDA GPU here") as e:
            call()
        assert "\n" not in str(e.value) and e.value.exit_code == 2
    with pytest.raises(UserError, match="device 'gpu': not a torch device"):
        open_block(built.path, rank=0, size=3, device="gpu")


def test_a_gpu_that_is_not_there_is_named(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert as_device("cuda:1") == torch.device("cuda", 1) and as_device("cuda") == torch.device("cuda")
    with pytest.raises(UserError, match=r"device cuda:2: torch sees 2 CUDA GPUs \(cuda:0..cuda:1\)"):
        as_device("cuda:2")
