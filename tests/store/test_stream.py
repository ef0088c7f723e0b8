"""A rank's arrays written in pieces (store/_stream.py): the same files as
write_array's, a checksum over them, and pieces that do not fit refused."""

import numpy as np
import pytest

from shgcn import store
from shgcn.store import _layout
from shgcn.store._arrays import block_checksum, write_array
from shgcn.store._schema import NODE_DTYPES, Plan


@pytest.mark.parametrize("arr", [np.arange(10, dtype=np.int64), np.arange(12, dtype=np.float32).reshape(6, 2),
                                 np.array([True, False, True]), np.zeros(0, np.int32),
                                 np.arange(4, dtype=">i4")])
def test_pieces_give_write_arrays_files(tmp_path, arr):
    write_array(tmp_path / "whole", "ranks/0/x", arr)
    with store.RankStreams(tmp_path / "parts", 0) as w:
        s = w.open("x", arr.shape, arr.dtype)
        for piece in np.array_split(arr, 3):
            s.write(piece)
        s.close()
    for f in ("ranks/0/x/zarr.json", "ranks/0/x/c/0" + "/0" * (arr.ndim - 1)):
        whole, parts = tmp_path / "whole" / f, tmp_path / "parts" / f
        assert whole.exists() == parts.exists() == (f.endswith("json") or arr.size > 0)
        if whole.exists():
            assert whole.read_bytes() == parts.read_bytes(), f


def test_finish_checks_the_arrays_and_returns_the_blocks_checksum(tmp_path):
    arrays = {f.name: np.arange(3, dtype=np.int64) for f in Plan.__dataclass_fields__.values()}
    arrays.update({k: np.zeros((2, 3) if k == "features" else 2, np.dtype(v)) for k, v in NODE_DTYPES.items()})
    with store.RankStreams(tmp_path, 1) as w:
        for name, a in arrays.items():
            w.put(name, a)
        assert w.finish() == block_checksum(arrays)
    with store.RankStreams(tmp_path, 2) as w:
        w.put("indptr", np.zeros(1, np.int64))
        with pytest.raises(store.StoreError, match="rank 2: block arrays missing"):
            w.finish()


def test_a_stream_refuses_a_piece_that_does_not_fit(tmp_path):
    with store.RankStreams(tmp_path, 0) as w:
        s = w.open("indices", (3,), np.int32)
        s.write(np.arange(2))
        with pytest.raises(ValueError, match="does not fit"):
            s.write(np.arange(2))
        with pytest.raises(ValueError, match="2 rows written of 3"):
            s.close()
    assert _layout.chunk_file(tmp_path, "ranks/0/indices", 1).stat().st_size == 8
