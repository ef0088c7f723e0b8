"""scipy .npz matrices (pipeline/sources/npz.py): read whole, the entry count from the archive's headers."""

import numpy as np
import pytest
import scipy.sparse as sp
from helpers.reader_conformance import ReaderTests

from shgcn.pipeline.errors import UserError
from shgcn.pipeline.sources import readers
from shgcn.pipeline.sources.npz import _npz_entries, read_npz


def save(path, m):
    sp.save_npz(path, m)
    return path


class TestNpzReader(ReaderTests):
    fmt = "npz"
    edges = [(0, 1), (2, 0), (2, 1)]
    n, directed = 3, None

    def write(self, tmp_path):
        return save(tmp_path / "g.npz", sp.csr_matrix((np.ones(3), ([0, 2, 2], [1, 0, 1])), shape=(3, 3)))

    def write_malformed(self, tmp_path):
        return save(tmp_path / "wide.npz", sp.csr_matrix(np.ones((2, 3)))), "matrix is 2 x 3"


def test_any_sparse_layout_reads_as_its_entries(tmp_path):
    coo = sp.coo_matrix((np.ones(2), ([0, 3], [3, 1])), shape=(4, 4))
    for m in (coo, coo.tocsr(), coo.tocsc()):
        w = read_npz(str(save(tmp_path / "m.npz", m)))
        assert w.n == 4 and w.directed is None and w.chunk.n_lines == 2
        assert sorted(zip(w.chunk.a.tolist(), w.chunk.b.tolist())) == [(0, 3), (3, 1)]


def test_the_entry_count_comes_from_an_array_header(tmp_path):
    p = save(tmp_path / "m.npz", sp.csr_matrix((np.ones(5), ([0, 1, 2, 3, 4], [1, 2, 3, 4, 0])), shape=(5, 5)))
    with np.load(p) as z:
        assert _npz_entries(z) == 5


@pytest.mark.parametrize("what, fragment", [
    ("not a zip", "not a scipy.sparse .npz file"),
    ("no shape", "no 2-d 'shape'"),
])
def test_other_files_are_one_line(tmp_path, client, what, fragment):
    p = tmp_path / "x.npz"
    if what == "not a zip":
        p.write_bytes(b"hello")
    else:
        np.savez(p, data=np.ones(3))
    with pytest.raises(UserError) as e:
        readers.read(p, None, client)
    assert str(p) in str(e.value) and fragment in str(e.value) and "\n" not in str(e.value)


def test_a_directory_named_npz_is_refused(tmp_path, client):
    (tmp_path / "d.npz").mkdir()
    with pytest.raises(UserError, match="is a directory, expected a npz file"):
        readers.read(tmp_path / "d.npz", None, client)
