"""Parsing text on the workers (pipeline/sources/parsing.py): byte ranges that own whole lines, the parsers
(pairs, adjacency, CSV pairs) with their fast paths, and the gzip and BGZF tasks."""

import gzip

import pytest

from shgcn.pipeline.sources import budget, parsing
from shgcn.pipeline.sources.parsing import ByteRange, Members


def lists(c):
    return c.a.tolist(), c.b.tolist()


def test_byte_ranges_cover_the_text_after_the_header(tmp_path):
    assert parsing.byte_ranges("f", 3, 10, 4) == [ByteRange("f", 3, 7), ByteRange("f", 7, 10)]
    assert parsing.byte_ranges("f", 5, 5, 4) == [ByteRange("f", 5, 5)]  # nothing after the header: one empty range


def test_a_range_owns_the_lines_that_begin_in_it(tmp_path):
    p = tmp_path / "t.txt"
    p.write_bytes(b"ab\ncd\nef\n")
    assert parsing.read_range(ByteRange(str(p), 0, 4)) == (b"ab\ncd\n", None)  # "cd" begins at 3
    assert parsing.read_range(ByteRange(str(p), 4, 9)) == (b"ef\n", None)  # the rest of "cd" is the previous range's
    p.write_bytes(b"abcdefgh\n")
    data, err = parsing.read_range(ByteRange(str(p), 0, 1), max_line=2)  # stops reading the line past 2 bytes
    assert data == b"abcd" and err.message == "line longer than 2 bytes (a binary or corrupt file?)"


def test_the_parsers():
    assert lists(parsing.parse_pairs(b"1 2\n3 4\n")) == ([1, 3], [2, 4])
    assert lists(parsing.parse_pairs(b"1 2\n3 4\n", max_id=4, base=1)) == ([0, 2], [1, 3])
    mid = parsing.parse_pairs(b"1 2\n# c\n3 4\n")  # a comment in the middle: the tokenizer
    assert lists(mid) == ([1, 3], [2, 4]) and (mid.n_lines, mid.n_comments) == (3, 1)
    bad = parsing.parse_pairs(b"1 2\n3 9\n", max_id=5)
    assert (bad.error.line, bad.error.message) == (1, "id 9 beyond the declared size 5")
    adj = parsing.parse_adjacency(b"2 3\n1\n", max_id=3, base=1, stride=1, skip=0)
    assert lists(adj) == ([0, 0, 1], [1, 2, 0])
    assert lists(parsing.parse_csv_pairs(b"0,1\n2,3\n")) == ([0, 2], [1, 3])


def test_parse_range_reads_and_parses(tmp_path):
    p = tmp_path / "t.txt"
    p.write_bytes(b"0 1\n1 2\n2 3\n")
    c = parsing.parse_range(ByteRange(str(p), 4, 12), "pairs", parsing.MAX_LINE_BYTES, {})
    assert lists(c) == ([1, 2], [2, 3]) and c.error is None


def test_parse_gzip_streams_blocks_and_counts_lines_against_the_budget(tmp_path):
    p = tmp_path / "t.txt.gz"
    p.write_bytes(gzip.compress(b"".join(f"{i} {i + 1}\n".encode() for i in range(10))))
    out = parsing.parse_gzip(str(p), 0, 16, 100, "pairs", {})
    assert sum((c.a.tolist() for c in out), []) == list(range(10)) and len(out) > 1
    tight = parsing.parse_gzip(str(p), 0, 16, 100, "pairs", {}, limit=5 * budget.BYTES_PER_EDGE)  # room for 5 edges
    assert tight[-1].error is not None and "holds more than 5 edges" in tight[-1].error.message


def test_parse_bgzf_owns_the_lines_that_begin_in_its_members(tmp_path):
    one, two = gzip.compress(b"0 1\n1 "), gzip.compress(b"2\n3 4\n")  # a line cut across the two members
    p = tmp_path / "t.txt.gz"
    p.write_bytes(one + two)
    end = len(one) + len(two)
    first = parsing.parse_bgzf(str(p), Members(0, 0, len(one), end), 100, "pairs", {})
    second = parsing.parse_bgzf(str(p), Members(0, len(one), end, end), 100, "pairs", {})
    assert lists(first) == ([0, 1], [1, 2]) and lists(second) == ([3], [4])


@pytest.mark.parametrize("data", [
    b"1 2\n3 4\n",                               # space
    b"# c\n# d\n1\t2\n3\t4\n",                   # SNAP header, tabs
    b"1 2 {}\r\n3 4 {}\r\n",                     # Network Repository, CRLF
    b"%%MatrixMarket x\n% c\n1 2 0.5\n3 4 1e-3\n",  # comments and values
])
def test_fast_path_equals_the_tokenizer(data):
    from shgcn.pipeline.sources.tokens import tokenize

    fast = parsing._fast_pairs(data, None, 0)
    if data.startswith(b"%%"):
        fast = parsing._fast_pairs(data.split(b"\n", 2)[2], None, 0)
        data = data.split(b"\n", 2)[2]
    assert fast is not None
    t = tokenize(data, max_cols=2)
    assert fast.a.tolist() == t.values[t.col == 0].tolist() and fast.b.tolist() == t.values[t.col == 1].tolist()
    assert fast.n_lines == t.n_lines
