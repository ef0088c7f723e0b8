"""A rank's arrays made at their final shapes and filled at any offset
(store/_stream.py): the same files as write_array's, a checksum over them,
and pieces that do not fit refused."""

import numpy as np
import pytest

from shgcn import store
from shgcn.store import _layout
from shgcn.store._arrays import block_checksum, write_array
from shgcn.store._schema import NODE_DTYPES, Plan


@pytest.mark.parametrize("arr", [np.arange(10, dtype=np.int64), np.arange(12, dtype=np.float32).reshape(6, 2),
                                 np.array([True, False, True]), np.zeros(0, np.int32),
                                 np.arange(4, dtype=">i4")])
def test_pieces_in_any_order_give_write_arrays_files(tmp_path, arr):
    write_array(tmp_path / "whole", "ranks/0/x", arr)
    w = store.RankFiles(tmp_path / "parts", 0)
    w.create("x", arr.shape, arr.dtype)
    bounds = np.linspace(0, arr.shape[0], 4).astype(int)
    for lo, hi in reversed(list(zip(bounds[:-1], bounds[1:]))):  # the last piece first
        w.write_at("x", int(lo), arr[lo:hi])
    for f in ("ranks/0/x/zarr.json", "ranks/0/x/c/0" + "/0" * (arr.ndim - 1)):
        whole, parts = tmp_path / "whole" / f, tmp_path / "parts" / f
        assert whole.exists() == parts.exists() == (f.endswith("json") or arr.size > 0)
        if whole.exists():
            assert whole.read_bytes() == parts.read_bytes(), f
    back = store.memmap_array(tmp_path / "parts", "ranks/0/x")
    assert back.shape == arr.shape and np.array_equal(back, arr)


def test_a_created_array_has_its_final_size_before_any_write(tmp_path):
    w = store.RankFiles(tmp_path, 3)
    w.create("features", (5, 4), np.float16)
    f = _layout.chunk_file(tmp_path, "ranks/3/features", 2)
    assert f.stat().st_size == 5 * 4 * 2 and store.memmap_array(tmp_path, "ranks/3/features").shape == (5, 4)
    w.write_at("features", 4, np.ones((1, 4), np.float16))
    assert store.memmap_array(tmp_path, "ranks/3/features")[3:5].tolist() == [[0] * 4, [1] * 4]


def test_checksum_is_the_blocks_checksum(tmp_path):
    arrays = {f.name: np.arange(3, dtype=np.int64) for f in Plan.__dataclass_fields__.values()}
    arrays.update({k: np.zeros((2, 3) if k == "features" else 2, np.dtype(v)) for k, v in NODE_DTYPES.items()})
    w = store.RankFiles(tmp_path, 1)
    for name, a in arrays.items():
        w.put(name, a)
    assert w.checksum(False) == block_checksum(arrays)
    w2 = store.RankFiles(tmp_path, 2)
    w2.put("indptr", np.zeros(1, np.int64))
    with pytest.raises(store.StoreError, match="array missing"):
        w2.checksum(False)


def test_a_piece_that_does_not_fit_is_refused(tmp_path):
    w = store.RankFiles(tmp_path, 0)
    w.create("indices", (3,), np.int32)
    w.write_at("indices", 1, np.arange(2))
    with pytest.raises(ValueError, match="at row 2 does not fit"):
        w.write_at("indices", 2, np.arange(2))
    w.create("features", (3, 2), np.float32)
    with pytest.raises(ValueError, match="does not fit"):
        w.write_at("features", 0, np.zeros((1, 3), np.float32))
    assert store.memmap_array(tmp_path, "ranks/0/indices").tolist() == [0, 0, 1]
