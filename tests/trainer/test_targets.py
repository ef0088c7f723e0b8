"""Loss and score by the store's label kind: softmax and accuracy, or a sigmoid per class and micro-F1
(multi-label stores, as Yelp and Amazon); a multi-label store trains on P ranks as on one."""

import json

import numpy as np
import pytest
import scipy.sparse as sp
from helpers.mpi import read_log, train

from shgcn.pipeline.builder import build
from shgcn.pipeline.config import BuildConfig
from shgcn.trainer.backends import backend
from shgcn.trainer.targets import MultiLabel, SingleLabel, for_store


def masked_cross_entropy(z, y, mask, total):
    """The backend's softmax cross-entropy of the masked rows (weights 1)."""
    idx = np.flatnonzero(mask)
    return backend().softmax_xent(z, y, idx, np.ones(idx.size), total)


def test_single_label_is_the_softmax_cross_entropy():
    rng = np.random.default_rng(0)
    z, y = rng.standard_normal((6, 3)).astype(np.float32), np.array([0, 2, 1, 1, -1, 0])
    mask = np.array([1, 1, 0, 1, 0, 1], bool)
    loss, g, counts = SingleLabel().loss(z, y, mask, 4)
    want = masked_cross_entropy(z, y, mask, 4)
    assert loss == want[0] and np.array_equal(g, want[1])
    assert list(counts) == [4, want[2]] and SingleLabel().score(np.asarray(counts, np.float64)) == want[2] / 4


def test_multi_label_gradient_and_micro_f1():
    rng = np.random.default_rng(1)
    z = rng.standard_normal((5, 4))
    y = rng.integers(0, 2, (5, 4)).astype(bool)
    mask = np.array([1, 0, 1, 1, 1], bool)
    t = MultiLabel()
    loss, g, counts = t.loss(z.astype(np.float32), y, mask, 1)
    # the loss: binary cross-entropy summed over classes and masked rows
    s = 1 / (1 + np.exp(-z[mask]))
    assert np.isclose(loss, -(y[mask] * np.log(s) + (~y[mask]) * np.log(1 - s)).sum(), rtol=1e-5)
    eps = 1e-4  # the gradient, by central differences
    for i, j in [(0, 1), (2, 3), (4, 0)]:
        zp, zm = z.copy(), z.copy()
        zp[i, j] += eps
        zm[i, j] -= eps
        num = (t.loss(zp, y, mask, 1)[0] - t.loss(zm, y, mask, 1)[0]) / (2 * eps)
        assert np.isclose(g[i, j], num, rtol=1e-3, atol=1e-5)
    assert not g[1].any()  # unmasked rows get no gradient
    pred = z[mask] > 0
    tp, fp, fn = (pred & y[mask]).sum(), (pred & ~y[mask]).sum(), (~pred & y[mask]).sum()
    assert counts.tolist() == [4, tp, fp, fn]
    assert np.isclose(t.score(counts), 2 * tp / (2 * tp + fp + fn))
    assert isinstance(for_store({"label_kind": "multi"}), MultiLabel) and isinstance(for_store({}), SingleLabel)


def saint_dir(root, n=120, classes=5, seed=0):
    """A GraphSAINT directory with multi-label targets that the features predict."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, (n, classes))
    x = (y * 2.0 - 1 + 0.5 * rng.standard_normal((n, classes))).astype(np.float32)
    e = rng.integers(0, n, (4 * n, 2))
    e = e[e[:, 0] != e[:, 1]]
    a = sp.csr_matrix((np.ones(2 * len(e)), (np.r_[e[:, 0], e[:, 1]], np.r_[e[:, 1], e[:, 0]])), shape=(n, n))
    a.data[:] = 1
    root.mkdir(parents=True)
    sp.save_npz(root / "adj_full.npz", a)
    np.save(root / "feats.npy", x)
    (root / "class_map.json").write_text(json.dumps({str(i): row.tolist() for i, row in enumerate(y)}))
    order = rng.permutation(n)
    (root / "role.json").write_text(json.dumps({"tr": order[:80].tolist(), "va": order[80:100].tolist(),
                                                "te": order[100:].tolist()}))
    return root


@pytest.mark.mpi
def test_multi_label_store_trains_on_p_ranks_as_on_one(tmp_path, client):
    d = saint_dir(tmp_path / "yelpish")
    logs = {}
    for p in (1, 2):
        out = tmp_path / f"y{p}.zarr"
        build(BuildConfig(source=str(d), out=str(out), parts=p, models=("hp",)), client, echo=lambda *a: None)
        logs[p] = tmp_path / f"y{p}.jsonl"
        res = train(p, out, "--epochs", 30, "--dropout", 0, "--lr", 0.05, log=logs[p])
        assert res.returncode == 0, res.stderr
    (h1, e1), (h2, e2) = read_log(logs[1]), read_log(logs[2])
    assert h1.metric == h2.metric == "micro-F1"
    np.testing.assert_allclose([e.loss for e in e1], [e.loss for e in e2], rtol=1e-4)
    assert e1[-1].loss < 0.7 * e1[0].loss  # it learns: the features predict the labels
    assert e1[-1].test_acc > 0.6 and np.isclose(e1[-1].test_acc, e2[-1].test_acc, atol=1e-6)
