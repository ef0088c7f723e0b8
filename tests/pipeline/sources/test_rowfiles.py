"""Arrays on disk read by rows (pipeline/sources/rowfiles.py): .npy files and stored .npz members in place,
deflated members streamed, raw files written block by block."""

import numpy as np
import pytest

from shgcn.pipeline.errors import UserError
from shgcn.pipeline.sources import rowfiles
from shgcn.pipeline.sources.rowfiles import RawWriter, RowFile


def test_a_npy_file_is_read_in_place_by_rows(tmp_path):
    a = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.save(tmp_path / "a.npy", a)
    rf = rowfiles.npy_view(tmp_path / "a.npy")
    assert (rf.shape, rf.ndim, len(rf), rf.dtype) == ((4, 3), 2, 4, "<f4")
    np.testing.assert_array_equal(rf[1:3], a[1:3])
    np.testing.assert_array_equal(rf.read(), a)
    assert rf[3:3].shape == (0, 3) and rf[2:-1].tolist() == a[2:3].tolist()
    np.testing.assert_array_equal(rf.row(2).read(), a[2])
    with pytest.raises(TypeError, match="contiguous row ranges"):
        rf[::2]


def test_bad_npy_files_are_one_line(tmp_path):
    np.save(tmp_path / "o.npy", np.array([{}], dtype=object))
    with pytest.raises(UserError, match="holds Python objects"):
        rowfiles.npy_view(tmp_path / "o.npy")
    np.save(tmp_path / "f.npy", np.asfortranarray(np.ones((3, 2))))
    with pytest.raises(UserError, match="Fortran order"):
        rowfiles.npy_view(tmp_path / "f.npy")
    np.save(tmp_path / "t.npy", np.ones(100))
    (tmp_path / "t.npy").write_bytes((tmp_path / "t.npy").read_bytes()[:-8])
    with pytest.raises(UserError, match=r"t.npy: truncated: the header says \(100,\) of float64"):
        rowfiles.npy_view(tmp_path / "t.npy")
    with pytest.raises(UserError, match="file not found"):
        rowfiles.npy_view(tmp_path / "none.npy")


def test_npz_members_stored_and_deflated(tmp_path):
    x = np.arange(10, dtype=np.int64).reshape(2, 5)
    np.savez(tmp_path / "s.npz", x=x)
    np.savez_compressed(tmp_path / "c.npz", x=x, y=np.ones(3))
    stored, deflated = rowfiles.member(str(tmp_path / "s.npz"), "x"), rowfiles.member(str(tmp_path / "c.npz"), "x")
    assert stored.view is not None and deflated.view is None and deflated.shape == (2, 5)
    np.testing.assert_array_equal(stored.view.read(), x)
    assert [b.tolist() for b in rowfiles.member_blocks(deflated, start=3, items=5, block_items=2)] == [
        [3, 4], [5, 6], [7]]
    assert sorted(rowfiles.npz_keys(str(tmp_path / "c.npz"))) == ["x", "y"]
    with pytest.raises(UserError, match=r"has no array 'z' \(it holds x\)"):
        rowfiles.member(str(tmp_path / "s.npz"), "z")


def test_materialize_streams_a_deflated_member_once(tmp_path):
    x = np.arange(6, dtype=np.int64).reshape(3, 2)
    np.savez_compressed(tmp_path / "c.npz", x=x)
    m = rowfiles.member(str(tmp_path / "c.npz"), "x")
    rf = rowfiles.materialize(m, tmp_path / "x.raw", np.float32)
    assert rf.path == str(tmp_path / "x.raw") and rf.dtype == "<f4"
    np.testing.assert_array_equal(rf.read(), x.astype(np.float32))
    np.savez(tmp_path / "s.npz", x=x)
    stored = rowfiles.member(str(tmp_path / "s.npz"), "x")
    assert rowfiles.materialize(stored, tmp_path / "never.raw") is stored.view  # in place: no copy


def test_raw_writer_checks_rows_and_gives_its_row_file(tmp_path):
    with RawWriter(tmp_path / "d" / "w.raw", np.int32, (2,)) as w:
        w.write(np.array([[1, 2]]))
        w.write(np.array([[3, 4], [5, 6]]))
        with pytest.raises(ValueError, match=r"rows of shape \(3,\), expected \(2,\)"):
            w.write(np.zeros((1, 3)))
        rf = w.close()
    assert rf == RowFile(str(tmp_path / "d" / "w.raw"), 0, "<i4", (3, 2)) and rf.read().tolist() == [[1, 2], [3, 4],
                                                                                                      [5, 6]]


def test_a_value_beyond_float32_is_written_as_infinity_without_numpys_warning(tmp_path):
    """1e39 in an OGB node_feat: the ingest's finite check names it in one line; numpy's RuntimeWarning must not
    come first."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with RawWriter(tmp_path / "f.raw", np.float32, (2,)) as w:
            w.write(np.array([[1.0, 1e39], [-1e39, 2.0]]))
            rf = w.close()
    assert rf.shape == (2, 2)
    assert np.fromfile(tmp_path / "f.raw", np.float32).tolist() == [1.0, np.inf, -np.inf, 2.0]
