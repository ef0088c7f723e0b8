"""Assignment files (pipeline/exports/assignment.py): a part per line, and what --overwrite may replace."""

import json

import numpy as np
import pytest

from shgcn.pipeline.errors import UserError
from shgcn.pipeline.exports import assignment


def test_assignment_bytes_one_part_per_line():
    assert assignment.assignment_bytes(np.array([2, 0, 10, 0]), chunk=3) == b"2\n0\n10\n0\n"
    assert assignment.assignment_bytes(np.zeros(0, np.int64)) == b""


def test_what_is_ours(tmp_path):
    (tmp_path / "a.txt").write_bytes(b"0\n3\n")
    (tmp_path / "b.txt").write_bytes(b"0\nx\n")
    assert assignment.is_assignment(tmp_path / "a.txt") and not assignment.is_assignment(tmp_path / "b.txt")
    assert not assignment.is_assignment(tmp_path / "none.txt")
    d = tmp_path / "d"
    d.mkdir()
    (d / "g.json").write_text(json.dumps({"graph_name": "g", "shgcn": {}}))
    assert assignment.is_export(d) and not assignment.is_export(tmp_path)


def test_check_out_replaces_only_what_this_command_wrote(tmp_path):
    assignment.check_out(tmp_path / "new.txt", overwrite=False, directory=False)
    with pytest.raises(UserError, match="directory does not exist"):
        assignment.check_out(tmp_path / "no" / "x.txt", False, False)
    ours, other = tmp_path / "ours.txt", tmp_path / "other.txt"
    ours.write_bytes(b"1\n")
    other.write_bytes(b"hello\n")
    with pytest.raises(UserError, match="already exists"):
        assignment.check_out(ours, False, False)
    assignment.check_out(ours, True, False)
    with pytest.raises(UserError, match="not a file this command writes"):
        assignment.check_out(other, True, False)
    with pytest.raises(UserError, match="exists and is not a directory"):
        assignment.check_out(ours, True, True)
    full = tmp_path / "full"
    full.mkdir()
    (full / "x").write_text("")
    with pytest.raises(UserError, match="not an export of ours and is not empty"):
        assignment.check_out(full, True, True)


def test_export_assignment_writes_the_models_partition(tmp_path, built):
    from shgcn import store

    s = store.open_store(built.path)
    out = assignment.export_assignment(s, tmp_path / "gp.txt", "gp")
    assert out.read_bytes() == assignment.assignment_bytes(s.partition("gp"))
    assert assignment.export_assignment(s, tmp_path / "layout.txt").read_bytes() == assignment.assignment_bytes(
        s.partition(s.attrs["model"]))
