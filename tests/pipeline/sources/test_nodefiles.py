"""Node data of dataset directories (pipeline/sources/nodefiles.py): labels checked and converted block by block,
masks from vertex ids, edges of (2, E) and CSR arrays in chunks, the scratch directory."""

import warnings

import numpy as np
import pytest

from shgcn.pipeline.errors import UserError
from shgcn.pipeline.sources import nodefiles
from shgcn.pipeline.sources.rowfiles import RawWriter


def rowfile(path, a):
    with RawWriter(path, a.dtype, a.shape[1:]) as w:
        w.write(a)
        return w.close()


def test_single_labels_become_int32_classes(tmp_path):
    blocks = [np.array([[0.0], [2.0]]), np.array([[np.nan], [-1.0], [1.0]])]
    rf, classes, kind = nodefiles.write_labels(blocks, tmp_path / "y", "labels.csv")
    assert rf.read().tolist() == [0, 2, -1, -1, 1] and rf.dtype == np.dtype(np.int32).str
    assert (classes, kind) == (3, "single")


def test_multi_labels_become_bool_rows(tmp_path):
    rf, classes, kind = nodefiles.write_labels([np.array([[1, 0, np.nan], [0, 1, 1]])], tmp_path / "y", "l")
    assert rf.read().tolist() == [[True, False, False], [False, True, True]] and (classes, kind) == (3, "multi")


@pytest.mark.parametrize("blocks, message", [
    ([np.array([[0.0], [1.5]])], "l: row 1: label 1.5 is not a class number"),
    ([np.array([[0.0, 1.0]]), np.array([[2.0, 0.0]])], "l: row 1, class 0: multi-label targets must be 0 or 1"),
    ([], "l: no labels (empty)"),
])
def test_bad_labels_name_their_row(tmp_path, blocks, message):
    with pytest.raises(UserError) as e:
        nodefiles.write_labels(blocks, tmp_path / "y", "l")
    assert str(e.value).startswith(message)


def test_mask_of_vertex_ids():
    assert nodefiles.mask_of(np.array([3.0, 0.0]), 4, "s").tolist() == [True, False, False, True]
    with pytest.raises(UserError, match=r"^s: vertex id 9 outside 0..3$"):
        nodefiles.mask_of(np.array([1, 9]), 4, "s")
    with pytest.raises(UserError, match="whole numbers"):
        nodefiles.mask_of(np.array([0.5]), 4, "s")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "invalid value encountered in cast": checked before the cast
        with pytest.raises(UserError, match=r"vertex id 1e\+30 outside 0..3"):
            nodefiles.mask_of(np.array([1.0, 1e30]), 4, "s")


def test_edges_of_pairs_and_of_csr_rows(tmp_path):
    src, dst = rowfile(tmp_path / "s", np.array([0, 1, 2, 3])), rowfile(tmp_path / "d", np.array([1, 2, 3, 9]))
    c = nodefiles.pair_chunk(src, dst, 1, 3, 4, "e")
    assert c.a.tolist() == [1, 2] and c.b.tolist() == [2, 3]
    bad = nodefiles.pair_chunk(src, dst, 0, 4, 4, "e")
    assert bad.error.message == "e: edge 3 (3, 9) has an id outside 0..3" and bad.error.line == -1
    ptr, idx = rowfile(tmp_path / "p", np.array([0, 2, 2, 3])), rowfile(tmp_path / "i", np.array([1, 2, 0]))
    c = nodefiles.csr_chunk(ptr, idx, 0, 3, 3, "adj")
    assert c.a.tolist() == [0, 0, 2] and c.b.tolist() == [1, 2, 0]
    broken = nodefiles.csr_chunk(rowfile(tmp_path / "q", np.array([0, 3, 2])), idx, 0, 2, 3, "adj")
    assert broken.error.message == "adj: indptr is not a CSR row pointer (rows 0..1)"


def test_cuts_and_row_cuts(tmp_path):
    assert nodefiles.cuts(7, 3) == [(0, 3), (3, 6), (6, 7)] and nodefiles.cuts(0, 3) == [(0, 0)]
    ptr = rowfile(tmp_path / "p", np.array([0, 5, 6, 6, 12, 13]))  # rows of 5, 1, 0, 6, 1 entries
    assert nodefiles.row_cuts(ptr, 6) == [(0, 3), (3, 4), (4, 5)]
    assert nodefiles.row_cuts(rowfile(tmp_path / "z", np.array([0])), 6) == [(0, 0)]


def test_scratch_is_inside_the_work_dir(tmp_path):
    assert nodefiles.scratch(str(tmp_path / "w"), "x.raw") == tmp_path / "w" / "x.raw" and (tmp_path / "w").is_dir()
    assert nodefiles.scratch(None, "x.raw").parent.name.startswith("shgcn-")


def test_an_id_that_a_cast_would_wrap_is_named_as_given(tmp_path):
    """Issue 33: an edge id of 1e30 was reported as -9223372036854775808 (the int64 cast's value)."""
    from shgcn.pipeline.sources.nodefiles import pair_chunk

    s, d = np.array([0.0, 1e30]), np.array([1.0, 2.0])
    assert pair_chunk(s, d, 0, 2, 4, "e").error.message == "e: edge 1 (1e+30, 2) has an id outside 0..3"
    s, d = np.array([0, 2**64 - 1], np.uint64), np.array([1, 2], np.uint64)
    assert pair_chunk(s, d, 0, 2, 4, "e").error.message == f"e: edge 1 ({2**64 - 1}, 2) has an id outside 0..3"
    ok = pair_chunk(np.array([0.0, 3.0]), np.array([1.0, 2.0]), 0, 2, 4, "e")
    assert ok.error is None and ok.a.dtype == np.int64 and ok.a.tolist() == [0, 3] and ok.b.tolist() == [1, 2]
