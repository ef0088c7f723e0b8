"""What out-of-core training reads the store through (:mod:`shgcn.trainer.mapped`), on hand-built arrays."""

import os

import numpy as np
import scipy.sparse as sp

from shgcn.core.sample import Sampler, SamplerConfig
from shgcn.trainer import mapped
from shgcn.trainer.backends import backend


def test_member_and_the_rows_of_entries():
    batch = np.array([2, 5, 9])
    np.testing.assert_array_equal(mapped.member(batch, np.array([9, 0, 5, 10, 2, 3])),
                                  [True, False, True, False, True, False])
    assert not mapped.member(np.zeros(0, np.int64), np.array([1])).any()
    rows = mapped.EdgeRows(np.array([0, 2, 2, 5]))  # rows of 2, 0 and 3 entries
    np.testing.assert_array_equal(rows[np.array([0, 1, 2, 4])], [0, 0, 2, 2])
    idx = mapped.BlockIndices([np.array([7, 8], np.int32), np.zeros(0, np.int32), np.array([1, 2, 3], np.int32)])
    assert idx.size == 5
    np.testing.assert_array_equal(idx[np.array([4, 0, 2, 1])], [3, 7, 1, 8])


def test_scratch_arrays_are_files_removed_on_close(tmp_path):
    sc = mapped.Scratch(str(tmp_path))
    a = sc.array("a", (5,), np.int64)
    a[:] = 3
    assert isinstance(a, np.memmap) and os.path.getsize(os.path.join(sc.dir, "a")) == 40
    assert sc.array("empty", (0,), np.float32).shape == (0,)
    sc.close()
    assert not os.path.exists(sc.dir)


def test_masks_and_features_per_rows_and_in_slices(monkeypatch):
    monkeypatch.setattr(mapped, "CHUNK", 2)
    labels = np.array([0, -1, 2, 1, -1])
    mask = mapped.MappedMask(np.array([True, True, False, True, True]), labels, lambda y: y >= 0)
    np.testing.assert_array_equal(mask[np.array([4, 0, 1])], [False, True, False])
    assert mask.sum() == 2  # rows 0 and 3: in the mask and labelled
    be = backend("numpy", "cpu", 1)
    dense = np.arange(10, dtype=np.float16).reshape(5, 2)
    x = mapped.MappedFeatures(dense, be)
    assert not x.sparse and x.nnz == 9 and x[np.array([2])].dtype == np.float32
    sparse = np.zeros((5, 20), np.float32)
    sparse[3, 7] = 2.0
    x = mapped.MappedFeatures(sparse, be)
    assert x.sparse and x.nnz == 1
    got = x[np.array([3, 0])]
    assert sp.issparse(got) and got.toarray()[0, 7] == 2.0
    assert np.shares_memory(np.asarray(mapped.MappedRows(labels)), labels)  # a view, not a copy


def test_a_mapped_sampler_draws_as_the_sampler(tmp_path, monkeypatch):
    """The edge and rw samplers over a graph split in two row blocks (its sums in slices of about 3 entries):
    the in-memory sampler's batches."""
    monkeypatch.setattr(mapped, "CHUNK", 3)
    rng = np.random.default_rng(0)
    a = sp.random(40, 40, density=0.1, random_state=rng, format="csr")
    a = ((a + a.T) > 0).astype(np.float32).tocsr()
    a.setdiag(0)
    a.eliminate_zeros()
    cut = 17
    blocks = [(0, a[:cut].indptr.astype(np.int64), a[:cut].indices.astype(np.int32)),
              (cut, a[cut:].indptr.astype(np.int64), a[cut:].indices.astype(np.int32))]

    class FakeStore:
        attrs = {"n": 40}

        def graph_blocks(self, verify=True):
            return blocks

    for kind in ("edge", "rw"):
        cfg = SamplerConfig(kind=kind, size=12, seed=4)
        want = Sampler(a, cfg)
        got = mapped.MappedSampler(FakeStore(), cfg, mapped.Scratch(str(tmp_path)))  # type: ignore[arg-type]
        for k in range(5):
            np.testing.assert_array_equal(got.batch(k, 2), want.batch(k, 2))
