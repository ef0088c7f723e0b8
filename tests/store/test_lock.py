"""The lock of an output (store/_lock.py): one build at a time, its holder named, a dead holder's file taken
over."""

import json
import logging
import os
import socket
import subprocess
import sys

import pytest

from shgcn.store import StoreError
from shgcn.store._lock import OutputLock, read_lock


def test_read_lock(tmp_path):
    f = tmp_path / ".s.lock"
    assert read_lock(f) is None
    f.write_text("not json")
    assert read_lock(f) is None
    f.write_text("[1, 2]")
    assert read_lock(f) is None
    f.write_text('{"pid": 12, "host": "h"}')
    assert read_lock(f) == {"pid": 12, "host": "h"}


def test_the_holder_is_named_in_the_file_and_in_a_second_builds_message(tmp_path):
    path, target = tmp_path / ".s.zarr.lock", tmp_path / "s.zarr"
    first = OutputLock(path, target, ".s.zarr.partial-1")
    first.acquire()
    try:
        me = {"pid": os.getpid(), "host": socket.gethostname(), "partial": ".s.zarr.partial-1"}
        assert json.loads(path.read_text()) == me
        with pytest.raises(StoreError) as e:
            OutputLock(path, target, ".s.zarr.partial-2").acquire()
        assert str(e.value) == (f"{target}: another build (pid {os.getpid()} on {socket.gethostname()}) is writing "
                                f"this store; its lock is {path}")
        assert json.loads(path.read_text()) == me  # the refused build did not overwrite it
    finally:
        first.release()


def test_release_removes_the_file_and_is_idempotent(tmp_path):
    path = tmp_path / ".s.lock"
    lock = OutputLock(path, tmp_path / "s.zarr", "p")
    lock.release()  # never taken: nothing to do
    lock.acquire()
    lock.release()
    assert not path.exists()
    lock.release()
    again = OutputLock(path, tmp_path / "s.zarr", "q")
    again.acquire()
    assert read_lock(path)["partial"] == "q"
    again.release()


def test_a_lock_held_by_another_process_is_refused_until_it_ends(tmp_path):
    path = tmp_path / ".s.lock"
    code = ("import sys\nfrom pathlib import Path\nfrom shgcn.store._lock import OutputLock\n"
            f"lock = OutputLock(Path({str(path)!r}), Path('s.zarr'), 'other')\nlock.acquire()\n"
            "print('held', flush=True)\nsys.stdin.readline()\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        with pytest.raises(StoreError, match=rf"another build \(pid {proc.pid} on "):
            OutputLock(path, tmp_path / "s.zarr", "mine").acquire()
    finally:
        proc.kill()  # killed while holding it: the kernel lets go, the file stays
        proc.communicate(timeout=60)
    assert read_lock(path)["pid"] == proc.pid
    lock = OutputLock(path, tmp_path / "s.zarr", "mine")
    lock.acquire()  # a file left by a dead build is taken over
    assert read_lock(path)["partial"] == "mine"
    lock.release()


def test_taking_over_a_dead_builds_file_is_logged(tmp_path, caplog):
    path = tmp_path / ".s.lock"
    path.write_text('{"pid": 999999, "host": "gone", "partial": "old"}')
    lock = OutputLock(path, tmp_path / "s.zarr", "new")
    with caplog.at_level(logging.WARNING, logger="shgcn.store._lock"):
        lock.acquire()
    try:
        assert [r.getMessage() for r in caplog.records] == \
            [f"{path}: taking over the lock of a build that is no longer running (pid 999999 on gone)"]
        assert read_lock(path) == lock.me  # rewritten in full: nothing of the old holder's text is left
    finally:
        lock.release()


def test_a_lock_that_cannot_be_created_is_one_line(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(StoreError, match=r"s.zarr: cannot write the store \("):
        OutputLock(tmp_path / "file" / ".s.lock", tmp_path / "s.zarr", "p").acquire()
