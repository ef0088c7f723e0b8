"""Partitioners that hold the GIL run in a child process: the scheduler and
the client keep answering while one runs, and the child goes with its parent."""

import os
import threading
from pathlib import Path

import pytest
from helpers.stores import make

CHILD = b"shgcn.pipeline.models.run"


def _children(under: Path, name: bytes = CHILD) -> set[str]:
    """This test's children running ``name`` (the partitioners by default; their work directory is under
    ``under``: other builds on a shared machine run children too)."""
    found = set()
    for p in Path("/proc").glob("[0-9]*"):
        try:
            cmdline = (p / "cmdline").read_bytes()
            if name in cmdline and str(under).encode() in cmdline:
                found.add(p.name)
        except OSError:
            continue
    return found


@pytest.mark.slow  # quick-suite budget: CI runs it (-m '')
@pytest.mark.timeout(600)
def test_partitioner_runs_in_a_child_and_the_client_stays_responsive(tmp_path, client):
    """Round trips through the scheduler's event loop complete while the
    partitioner's child process is alive (no time is asserted: the machine
    may be busy; the point is that they complete at all)."""
    during, stop = [], threading.Event()

    def watch():
        while not stop.is_set():
            before = _children(tmp_path)
            client.run_on_scheduler(lambda: 1)  # a round trip through the event loop
            after = _children(tmp_path)
            if before & after:  # the same child was alive before and after this round trip
                during.append(before & after)

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    try:
        make(tmp_path / "c.zarr", client, source="sbm:n=8000,classes=8,degree=12,features=4,seed=1",
             models=("hp",), parts=8, options={"hp_preset": "mtkahypar-deterministic"})  # seconds in a child
    finally:
        stop.set()
        t.join(timeout=60)
    assert during, "no round trip completed while Mt-KaHyPar ran in a child process"
    assert not _children(tmp_path)  # and the child is gone


def test_a_report_is_written_whole_and_only_in_a_child(tmp_path, monkeypatch, caplog):
    import logging

    from shgcn.pipeline.runtime import child

    monkeypatch.delenv(child.PROGRESS_ENV, raising=False)
    child.report("nobody listens")  # outside a child: nothing written anywhere
    assert list(tmp_path.iterdir()) == []
    path = tmp_path / child.PROGRESS
    monkeypatch.setenv(child.PROGRESS_ENV, str(path))
    child.report("round 0")
    child.report("round 1")
    assert path.read_text() == "round 1" and sorted(p.name for p in tmp_path.iterdir()) == [child.PROGRESS]
    with caplog.at_level(logging.INFO, logger=child.log.name):  # not in a Dask worker: a log line, once per change
        assert child.forward(path, "shp", "") == "round 1"
        assert child.forward(path, "shp", "round 1") == "round 1"
        assert child.forward(tmp_path / "none.txt", "shp", "round 1") == "round 1"
    assert [r.getMessage() for r in caplog.records] == ["shp: round 1"]


HOG = """
import sys, time
import numpy as np
hold = np.ones(64 * 2**20)  # 512 MiB, resident
time.sleep(float(sys.argv[3]) if len(sys.argv) > 3 else 60)
"""


@pytest.mark.timeout(120)
def test_a_child_past_the_memory_limit_is_killed_with_what_to_change(tmp_path, monkeypatch):
    """The child and this process are watched together against the limit: the child is killed at the next
    look, and the message names the task, both figures and the option. Without the watch this would wait out
    the child's minute of sleep and return."""
    from shgcn.pipeline.errors import UserError
    from shgcn.pipeline.runtime import child

    (tmp_path / "hog.py").write_text(HOG)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    limit = child.tree_resident(os.getpid()) + 256 * 2**20
    with pytest.raises(UserError, match=r"^shp: the partitioner: stopped: its child process held 0\.[2-9]\d GiB "
                                        r"beside the build's .* over --memory-limit .* raise --memory-limit"):
        child.run_module("hog", tmp_path, "shp: the partitioner", limit)
    assert not _children(tmp_path, b"hog"), "the child outlived the stop"


def test_a_child_within_the_limit_is_left_alone(tmp_path):
    from shgcn.pipeline.runtime import child

    assert child.over_limit(os.getpid(), "gp", 2**50) is None
    message = child.over_limit(os.getpid(), "gp: the partitioner", 1)
    assert message is not None and message.startswith("gp: the partitioner: stopped") and "--memory-limit" in message
    assert child.tree_resident(2**22 + 12345) == 0  # no such process



SLEEPER = """
import time
time.sleep(60)
"""


@pytest.mark.timeout(120)
def test_a_child_past_its_deadline_is_stopped(tmp_path, monkeypatch):
    """A time budget binds native code through its process: the child is killed at the deadline and the
    caller learns it was the deadline (not a failure). Without the deadline this would wait out the minute."""
    import time

    from shgcn.pipeline.runtime import child

    (tmp_path / "sleeper.py").write_text(SLEEPER)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    with pytest.raises(child.DeadlinePassed, match="^Mt-KaHyPar$"):
        child.run_module("sleeper", tmp_path, "Mt-KaHyPar", deadline=time.monotonic() + 1.0)
    assert not _children(tmp_path, b"sleeper"), "the child outlived its deadline"
