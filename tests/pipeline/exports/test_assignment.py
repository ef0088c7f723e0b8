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


def _full_disk(monkeypatch, written):
    """Path.write_bytes that writes half its data, as a disk that fills up does, then fails with ENOSPC and no
    file name (as write(2) does)."""
    import errno
    import pathlib

    def write_bytes(self, data):
        with open(self, "wb") as f:
            f.write(data[:len(data) // 2])
        written.append(self)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pathlib.Path, "write_bytes", write_bytes)


def test_a_full_disk_leaves_nothing_and_names_the_file(tmp_path, built, monkeypatch):
    from helpers import run_main

    written: list = []
    _full_disk(monkeypatch, written)
    out = tmp_path / "gp.txt"
    res = run_main("export", str(built.path), str(out), "--format", "assignment", "--model", "gp")
    assert (res.returncode, res.stderr) == (2, f"pipeline: error: {out}: No space left on device (the disk is full: "
                                               "free space or choose another --out)\n")
    assert [p.name for p in written] == [f".gp.txt.partial-{__import__('os').getpid()}"]
    assert list(tmp_path.iterdir()) == []  # no partial file, no gp.txt


def test_an_interrupt_while_writing_leaves_nothing(tmp_path, monkeypatch):
    import pathlib

    def write_bytes(self, data):
        with open(self, "wb") as f:
            f.write(data[:1])
        raise KeyboardInterrupt

    monkeypatch.setattr(pathlib.Path, "write_bytes", write_bytes)
    with pytest.raises(KeyboardInterrupt):
        assignment.write_whole(tmp_path / "a.txt", b"0\n1\n")
    assert list(tmp_path.iterdir()) == []
