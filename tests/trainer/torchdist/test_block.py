"""A rank's block as torch tensors (trainer/torchdist/block.py): the ranks' rows of Â together are the
whole Â, the edge kinds, the plan against the store's quality table, and a store for other ranks refused."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from shgcn import store  # noqa: E402
from shgcn.core.errors import UserError  # noqa: E402
from shgcn.trainer.torchdist import open_block, predicted_rows  # noqa: E402


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
    with pytest.raises(UserError, match="partitioned for 3 ranks, not 2: run it with 3 processes"):
        open_block(built.path, rank=0, size=2)
    with pytest.raises(UserError, match="partitioned for 3 ranks, not 1"):
        open_block(built.path)  # no process group: one process
