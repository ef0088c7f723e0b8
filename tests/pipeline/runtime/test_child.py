"""Partitioners that hold the GIL run in a child process: the scheduler and
the client keep answering while one runs, and the child goes with its parent."""

import threading
from pathlib import Path

import pytest
from helpers.stores import make

CHILD = b"shgcn.pipeline.models.run"


def _children(under: Path) -> set[str]:
    """This test's partitioner children (their work directory is under ``under``: other builds on a shared
    machine run children too)."""
    found = set()
    for p in Path("/proc").glob("[0-9]*"):
        try:
            cmdline = (p / "cmdline").read_bytes()
            if CHILD in cmdline and str(under).encode() in cmdline:
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
