"""Matrix Market files (pipeline/sources/mtx.py): banner and size line optional, 1-based entries, the symmetry
from the banner or from the entries, and the declared sizes checked."""

import pytest
from helpers.reader_conformance import ReaderTests, pairs

from shgcn.pipeline.errors import UserError
from shgcn.pipeline.sources import readers
from shgcn.pipeline.sources.mtx import mtx_header
from shgcn.pipeline.sources.probe import Probe


def write(tmp_path, name, text: bytes):
    p = tmp_path / name
    p.write_bytes(text)
    return p


class TestMatrixMarketReader(ReaderTests):
    fmt = "mtx"
    edges = [(0, 1), (2, 0), (1, 2)]
    n, directed = 3, True  # a general matrix: directed

    def write(self, tmp_path):
        return write(tmp_path, "m.mtx", b"%%MatrixMarket matrix coordinate pattern general\n% c\n3 3 3\n1 2\n3 1\n2 3\n")

    def write_malformed(self, tmp_path):
        p = write(tmp_path, "bad.mtx", b"%%MatrixMarket matrix coordinate pattern general\n3 3 2\n1 2\n4 1\n")
        return p, ":4: id 4 beyond the declared size 3"


def test_mtx_with_banner_and_size_line(tmp_path, client):
    p = write(tmp_path, "m.mtx", b"%%MatrixMarket matrix coordinate pattern symmetric\n% c\n5 5 3\n2 1\n3 1\n5 4\n")
    raw = readers.read(p, None, client)
    assert raw.n == 5 and raw.directed is False
    assert pairs(raw) == [(1, 0), (2, 0), (4, 3)]


def test_mtx_without_banner_or_size_line_is_one_based_lower_triangle(tmp_path, client):
    p = write(tmp_path, "m.mtx", b"2 1\n3 2\n4 1\n")
    raw = readers.read(p, None, client)
    assert raw.n == 4 and raw.directed is False
    assert pairs(raw) == [(1, 0), (2, 1), (3, 0)]


def test_mtx_size_line_without_banner_is_recognized_by_entry_count(tmp_path, client):
    p = write(tmp_path, "m.mtx", b"6 6 2\n2 1\n6 2\n")
    raw = readers.read(p, None, client)
    assert raw.n == 6 and raw.lines == 2


@pytest.mark.parametrize("text,msg", [
    (b"%%MatrixMarket matrix coordinate pattern general\n3 3 2\n1 2\n4 1\n", ":4: id 4 beyond the declared size 3"),
    (b"%%MatrixMarket matrix coordinate pattern general\n3 3 1\n0 1\n", ":3: id 0 below 1"),
    (b"%%MatrixMarket matrix coordinate pattern general\n3 3 3\n1 2\n", "declares 3 entries but the file has 1"),
    (b"%%MatrixMarket matrix array real general\n2 2\n1\n", ":1: only 'matrix coordinate' Matrix Market files"),
    (b"%%MatrixMarket matrix coordinate pattern general\n3 2 1\n1 2\n", ":2: matrix is 3 x 2"),
])
def test_bad_input_names_file_line_and_problem(tmp_path, client, text, msg):
    p = write(tmp_path, "m.mtx", text)
    with pytest.raises(UserError) as e:
        readers.read(p, None, client)
    assert msg in str(e.value) and str(p) in str(e.value)


def test_the_header_probe(tmp_path):
    text = b"%%MatrixMarket matrix coordinate real symmetric\n% c\n4 4 2\n2 1 0.5\n4 3 1\n"
    p = write(tmp_path, "m.mtx", text)
    pb = mtx_header(Probe(str(p), "mtx", len(text)), text.splitlines(keepends=True))
    body = len(b"2 1 0.5\n4 3 1\n")  # the entries: everything before them is header
    assert (pb.header_lines, pb.header_bytes, pb.n, pb.entries, pb.base, pb.directed) == (3, len(text) - body, 4, 2,
                                                                                          1, False)
    assert pb.kwargs == {"max_id": 4, "base": 1, "mtx_field": "real"}
    # no banner, three numbers but not the entry count that follows: the first entry, not a size line
    text = b"1 2 7\n3 4 5\n"
    pb = mtx_header(Probe(str(write(tmp_path, "n.mtx", text)), "mtx", len(text)), text.splitlines(keepends=True))
    assert (pb.header_lines, pb.n, pb.entries, pb.directed) == (0, None, None, None)


@pytest.mark.parametrize("tail", [b"7 8\r", b"7 8 ", b"7\t8\t", b"7 8\r\n"])
def test_matrix_market_chunk_ending_in_whitespace(tmp_path, client, tail):
    """scipy's Matrix Market reader segfaulted on whitespace at the very end
    of its input (found by the fuzz test); the fast path now hands it none."""
    p = tmp_path / "g.mtx"
    p.write_bytes(b"%%MatrixMarket matrix coordinate pattern general\n1000000 1000000 2\n1 2\n" + tail)
    raw = readers.read(p, None, client)
    assert pairs(raw) == [(0, 1), (6, 7)]
