"""Writing a store's arrays (store/_arrays.py): one uncompressed little-endian chunk a reader can memory-map,
checksums, a rank's block, a graph block, node rows, and the errors of a failed or interrupted write."""

import errno
import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
import zarr

from shgcn.store import StoreError, _arrays, _layout
from shgcn.store._arrays import (
    array_checksum,
    block_checksum,
    os_error,
    release_pages,
    write_array,
    write_graph_block,
    write_node_rows,
    write_rank,
)
from shgcn.store._reader import memmap_array
from shgcn.store._schema import Plan, RankBlock, block_arrays


def meta(root: Path, name: str) -> dict:
    return json.loads(_layout.array_meta(root, name).read_text())


def test_one_uncompressed_little_endian_chunk(tmp_path):
    a = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
    assert write_array(tmp_path, "x/y", a) == array_checksum(a)
    m = meta(tmp_path, "x/y")
    assert m["shape"] == [2, 3] and m["chunk_grid"]["configuration"]["chunk_shape"] == [2, 3]
    assert m["codecs"] == [{"name": "bytes", "configuration": {"endian": "little"}}] and m["data_type"] == "int32"
    assert _layout.chunk_file(tmp_path, "x/y", 2).read_bytes() == a.astype("<i4").tobytes()
    back = memmap_array(tmp_path, "x/y", "<i4")
    assert isinstance(back, np.memmap) and back.tolist() == a.tolist()


def test_a_big_endian_array_is_written_little_endian(tmp_path):
    big = np.array([1, 256, -2], ">i4")
    assert write_array(tmp_path, "b", big) == array_checksum(big.astype("<i4"))
    assert _layout.chunk_file(tmp_path, "b", 1).read_bytes() == np.array([1, 256, -2], "<i4").tobytes()
    assert memmap_array(tmp_path, "b", "<i4").tolist() == [1, 256, -2]


def test_an_empty_array(tmp_path):
    write_array(tmp_path, "e", np.zeros(0, np.int64))
    assert meta(tmp_path, "e")["shape"] == [0] and meta(tmp_path, "e")["chunk_grid"]["configuration"]["chunk_shape"] == [1]
    assert memmap_array(tmp_path, "e", "<i8").shape == (0,)


@pytest.mark.parametrize("name, shape, dims", [("ranks/0/indptr", (3,), ["row_ptr"]), ("features", (2, 4), ["row", "feature"]),
                                               ("labels", (5,), ["row"]), ("labels", (5, 3), ["row", "class"]),
                                               ("send_rows", (2,), ["send"]), ("other", (2, 2), ["dim_0", "dim_1"])])
def test_dimension_names_by_array_name(tmp_path, name, shape, dims):
    write_array(tmp_path, name, np.zeros(shape, np.int32))
    assert meta(tmp_path, name)["dimension_names"] == dims
    write_array(tmp_path, "given", np.zeros(shape, np.int32), dims=tuple(f"d{i}" for i in range(len(shape))))
    assert meta(tmp_path, "given")["dimension_names"] == [f"d{i}" for i in range(len(shape))]


def test_array_checksum_covers_type_shape_and_bytes():
    a = np.arange(6, dtype=np.int64)
    assert array_checksum(a) == hashlib.sha256(b"<i8:(6,);" + a.tobytes()).hexdigest()
    assert array_checksum(np.zeros(0, np.int32)) == hashlib.sha256(b"<i4:(0,);").hexdigest()
    others = {array_checksum(a.reshape(2, 3)), array_checksum(a.astype(np.uint64)), array_checksum(a[::-1])}
    assert array_checksum(a) not in others and len(others) == 3
    assert array_checksum(np.arange(12)[::2]) == array_checksum(np.arange(0, 12, 2))  # a view: its values


def test_block_checksum_covers_names_and_order():
    a, b = np.arange(3, dtype=np.int32), np.ones(2, np.float32)
    want = hashlib.sha256(b"x:<i4:(3,);" + a.tobytes() + b"y:<f4:(2,);" + b.tobytes()).hexdigest()
    assert block_checksum({"x": a, "y": b}) == want
    assert block_checksum({"y": b, "x": a}) != want and block_checksum({"z": a, "y": b}) != want


def test_checksums_hash_in_slices_like_in_one_piece(monkeypatch, tmp_path):
    a = np.arange(1000, dtype=np.int64).reshape(100, 10)
    write_array(tmp_path, "a", a)
    want_block, want_array = block_checksum({"a": a}), array_checksum(a)
    monkeypatch.setattr(_arrays, "HASH_SLICE", 24)  # slices that do not divide the rows' bytes
    mapped = memmap_array(tmp_path, "a")
    assert block_checksum({"a": mapped}) == want_block and array_checksum(mapped) == want_array
    assert block_checksum({"a": a.T}) == block_checksum({"a": np.ascontiguousarray(a.T)})


def resident_file_mib() -> float:
    """This process's resident file-backed memory (``RssFile``), MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssFile:"):
            return int(line.split()[1]) / 1024
    pytest.skip("no RssFile in /proc/self/status (not Linux)")


def test_release_pages_drops_a_memory_map_from_resident_memory(tmp_path):
    write_array(tmp_path, "big", np.arange(8 << 20, dtype=np.int64))  # 64 MiB
    mapped = memmap_array(tmp_path, "big")
    before = resident_file_mib()
    assert int(mapped[::512].sum()) == int(np.arange(0, 8 << 20, 512).sum())  # touches every page
    read = resident_file_mib()
    release_pages(mapped[:10], np.zeros(3))  # a slice of the map releases all of it; a plain array is left alone
    after = resident_file_mib()
    assert read - before > 60 and read - after > 60
    assert int(mapped[-1]) == (8 << 20) - 1  # still readable


def tiny_block(transpose: bool) -> RankBlock:
    p = Plan(indptr=np.array([0, 1, 2], np.int64), indices=np.array([1, 0], np.int32), data=np.ones(2, np.float32),
             send_ptr=np.zeros(2, np.int64), send_rows=np.zeros(0, np.int32), recv_ptr=np.zeros(2, np.int64),
             recv_ids=np.zeros(0, np.int64))
    return RankBlock(rank=0, offset=0, plan=p, features=np.eye(2, dtype=np.float32), labels=np.array([0, 1], np.int32),
                     train_mask=np.array([True, True]), val_mask=np.zeros(2, bool), test_mask=np.zeros(2, bool),
                     node_index=np.array([1, 0], np.int64), transpose=p if transpose else None)


@pytest.mark.parametrize("transpose", [False, True])
def test_write_rank(tmp_path, transpose):
    b = tiny_block(transpose)
    assert write_rank(tmp_path, b) == block_checksum(block_arrays(b))
    for name, a in block_arrays(b).items():
        back = memmap_array(tmp_path, _layout.rank_array(0, name))
        assert back.dtype == a.dtype and back.tolist() == a.tolist(), name
    assert _layout.array_meta(tmp_path, "ranks/0/transpose/indptr").exists() == transpose


def test_write_graph_block(tmp_path):
    s = write_graph_block(tmp_path, 1, [0, 2, 3], [4, 5, 4])
    ip, ix = np.array([0, 2, 3], np.int64), np.array([4, 5, 4], np.int32)
    assert s == hashlib.sha256((array_checksum(ip) + array_checksum(ix)).encode()).hexdigest()
    assert memmap_array(tmp_path, "graph/blocks/1/indptr", "<i8").tolist() == [0, 2, 3]
    assert memmap_array(tmp_path, "graph/blocks/1/indices", "<i4").tolist() == [4, 5, 4]


def test_write_node_rows_fills_its_chunk_of_rows(tmp_path):
    write_array(tmp_path, "nodes/features", np.zeros((4, 2), np.float32))
    write_array(tmp_path, "nodes/labels", np.full(4, -1, np.int32))
    write_node_rows(tmp_path, 2, {"features": np.ones((2, 2), np.float32), "labels": np.array([7, 8], np.int32)})
    g = zarr.open_group(str(tmp_path), path="nodes", mode="r")
    assert g["features"][:].tolist() == [[0, 0], [0, 0], [1, 1], [1, 1]]
    assert g["labels"][:].tolist() == [-1, -1, 7, 8]


def test_an_interrupted_build_stops_before_its_next_write(tmp_path):
    _arrays.ABORT.set()
    try:
        with pytest.raises(StoreError, match="^the build was interrupted$"):
            write_array(tmp_path, "a", np.zeros(2))
        with pytest.raises(StoreError, match="^the build was interrupted$"):
            write_node_rows(tmp_path, 0, {})
    finally:
        _arrays.ABORT.clear()
    assert not (tmp_path / "a").exists()


def test_os_errors_are_one_line(tmp_path):
    root = tmp_path / "s.zarr"
    assert str(os_error(root, OSError(errno.ENOSPC, "full"))) == \
        f"{tmp_path}: no space left on the device while writing the store"
    assert str(os_error(root, OSError(errno.EROFS, "ro"))) == f"{tmp_path}: cannot write the store (Read-only file system)"
    assert str(os_error(root, OSError(errno.EACCES, "no"))) == f"{tmp_path}: cannot write the store (Permission denied)"
    assert str(os_error(root, OSError(errno.EIO, "io"))) == f"{root}: cannot write the store ([Errno 5] io)"
    (tmp_path / "file").write_text("not a directory")
    with pytest.raises(StoreError, match=r"cannot write the store \(\[Errno 20\] Not a directory"):
        write_array(tmp_path / "file" / "s.zarr", "a", np.zeros(2))
