"""Comma-separated numbers as row blocks (pipeline/sources/csvblocks.py): whole lines per block, NaN where a
value is empty, a bad line named by file and line."""

import gzip

import numpy as np
import pytest

from shgcn.pipeline.errors import UserError
from shgcn.pipeline.sources import csvblocks


def test_row_blocks_hold_whole_lines_of_a_gzip_file(tmp_path):
    p = tmp_path / "f.csv.gz"
    p.write_bytes(gzip.compress(b"".join(f"{i},{i / 4},\n".encode() for i in range(50))))  # a trailing empty value
    blocks = list(csvblocks.row_blocks(str(p), chunk_bytes=64))
    assert len(blocks) > 5 and all(b.shape[1] == 3 for b in blocks)
    x = np.concatenate(blocks)
    np.testing.assert_array_equal(x[:, 0], np.arange(50))
    np.testing.assert_array_equal(x[:, 1], np.arange(50) / 4)
    assert np.isnan(x[:, 2]).all()


def test_column_count_and_read_column(tmp_path):
    p = tmp_path / "ids.csv"
    p.write_text("\n3\n1\n4\n")
    assert csvblocks.column_count(str(p)) == 1
    assert csvblocks.read_column(str(p), chunk_bytes=2).tolist() == [3.0, 1.0, 4.0]
    (tmp_path / "empty.csv").write_text("")
    assert csvblocks.read_column(str(tmp_path / "empty.csv")).size == 0
    (tmp_path / "two.csv").write_text("1,2\n")
    with pytest.raises(UserError, match=r"two.csv:1: expected one value per line, found 2$"):
        csvblocks.read_column(str(tmp_path / "two.csv"))


@pytest.mark.parametrize("text, message", [
    (b"1,2\n3,4\n5\n", ":3: expected 2 comma-separated values, found 1"),
    (b"1,2\n3,x\n", ":2: not a number: b'x'"),
    (b"", ": empty file"),
])
def test_bad_lines_are_named(tmp_path, text, message):
    p = tmp_path / "f.csv"
    p.write_bytes(text)
    with pytest.raises(UserError) as e:
        list(csvblocks.row_blocks(str(p)))
    assert str(e.value) == f"{p}{message}"


def test_a_line_longer_than_the_limit_and_a_missing_file(tmp_path):
    p = tmp_path / "f.csv"
    p.write_bytes(b"1,2\n" + b"3" * 100 + b"\n")
    with pytest.raises(UserError, match=r"f.csv:2: line longer than 50 bytes"):
        list(csvblocks.row_blocks(str(p), 2, chunk_bytes=16, max_line=50))
    with pytest.raises(UserError, match=r"nope.csv: file not found$"):
        list(csvblocks.row_blocks(str(tmp_path / "nope.csv")))
