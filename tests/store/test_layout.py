"""Names of things inside a store directory (store/_layout.py)."""

from pathlib import Path

import numpy as np

from shgcn.store import _layout
from shgcn.store._arrays import write_array


def test_array_names():
    assert _layout.rank_array(3, "indptr") == "ranks/3/indptr"
    assert _layout.rank_array(0, "transpose/data") == "ranks/0/transpose/data"
    assert _layout.rank_array(2, "") == "ranks/2/"
    assert _layout.partition_array("hp") == "partitions/hp"
    assert _layout.graph_bounds() == "graph/bounds"
    assert _layout.graph_block(2, "indptr") == "graph/blocks/2/indptr"
    assert _layout.graph_block(2, "") == "graph/blocks/2"
    assert (_layout.ROOT_META, _layout.NODES, _layout.QUALITY, _layout.MINIBATCH, _layout.GRAPH,
            _layout.PERMUTATION, _layout.OFFSETS) == ("zarr.json", "nodes", "quality", "minibatch", "graph",
                                                      "permutation", "offsets")


def test_a_builds_working_directory_is_never_a_store():
    assert _layout.is_partial(Path("/out/.s.zarr.partial-1234-abcd"))
    assert not _layout.is_partial(Path("/out/s.zarr"))
    assert not _layout.is_partial(Path("/out/.s.zarr"))  # hidden, not partial
    assert not _layout.is_partial(Path("/out/s.zarr.partial-1"))  # not hidden: a user's own name
    assert not _layout.is_partial(Path("/out/.partial-1/s.zarr"))  # only the last component counts


def test_metadata_and_chunk_paths_are_where_zarr_writes_them(tmp_path):
    root = tmp_path / "s.zarr"
    assert _layout.array_meta(root, "ranks/0/indptr") == root / "ranks" / "0" / "indptr" / "zarr.json"
    assert _layout.chunk_file(root, "a", 2) == root / "a" / "c" / "0" / "0"
    assert _layout.chunk_file(root, "offsets", 1) == root / "offsets" / "c" / "0"
    write_array(root, _layout.rank_array(0, "features"), np.arange(6, dtype=np.float32).reshape(3, 2))
    write_array(root, _layout.OFFSETS, np.array([0, 3], np.int64))
    name = _layout.rank_array(0, "features")
    assert _layout.array_meta(root, name).is_file()
    assert _layout.chunk_file(root, name, 2).read_bytes() == np.arange(6, dtype="<f4").tobytes()
    assert _layout.chunk_file(root, _layout.OFFSETS, 1).read_bytes() == np.array([0, 3], "<i8").tobytes()
    assert (root / _layout.ROOT_META).is_file()
