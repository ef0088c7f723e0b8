"""A build's clock and memory (pipeline/runtime/monitor.py): stage times and peaks, partitioner children, the
heartbeat while a stage runs, the tasks it counts."""

import logging
import threading

from shgcn.pipeline.runtime import monitor
from shgcn.pipeline.runtime.monitor import Monitor


def test_peak_memory_of_this_process():
    assert monitor.reset_peak() is True  # Linux: the kernel's high-water mark can be reset
    before = monitor.peak_rss_mib()
    block = bytearray(64 << 20)  # touch 64 MiB
    block[::4096] = b"x" * len(block[::4096])
    assert monitor.peak_rss_mib() >= before + 60
    del block


def test_a_stage_records_its_time_memory_and_children(client):
    mon = Monitor(client, heartbeat=3600)
    assert mon.embedded  # the test cluster runs in this process
    with mon.stage("partition"):
        mon.record_child("hp", 120.0)
        mon.record_child("hp", 80.0)  # the larger peak stays
        mon.record_child("gp", 0.0)  # a model that ran in the worker: no child
        mon.snapshot()
        assert "partition" in mon.times
    assert list(mon.times) == ["partition"] and mon.times["partition"] >= 0
    peaks = mon.peaks["partition"]
    assert list(peaks) == ["client+scheduler+worker (one process)", "child hp"] and peaks["child hp"] == 120.0
    assert mon.peak_overall() == max(peaks.values())
    with mon.stage("write"):
        pass
    assert "child hp" not in mon.peaks["write"]  # children are the stage's own


def test_the_peaks_while_partitioning_are_recorded_apart(client):
    mon = Monitor(client, heartbeat=3600)
    build = "client+scheduler+worker (one process)"
    with mon.stage("partition"):
        block = bytearray(256 << 20)  # the build's process holds 256 MiB before the partitioners start
        block[::4096] = b"x" * len(block[::4096])
        del block
        mon.partitioning_starts()
        mon.partitioning_starts()  # a second mark in the stage changes nothing
        mon.record_child("gp", 120.0)
    during = mon.while_partitioning["partition"]
    assert list(during) == [build]  # the build's processes only: the children are the stage's
    assert mon.peaks["partition"][build] >= during[build] + 200  # the stage's peak is the one before the mark
    assert mon.peaks["partition"]["child gp"] == 120.0
    with mon.stage("write"):
        mon.partitioning_starts()
    assert set(mon.while_partitioning) == {"partition", "write"}
    with mon.stage("place"):
        pass
    assert "place" not in mon.while_partitioning  # a stage without a mark records no split


def test_the_heartbeat_counts_the_stages_tasks(client, caplog, tmp_path):
    mon = Monitor(client, heartbeat=0.01)
    gate = tmp_path / "go"

    def wait_for_the_gate(path):  # a task that runs until the test lets it end
        import os
        import time

        for _ in range(60000):
            if os.path.exists(path):
                return True
            time.sleep(0.01)
        return False

    with caplog.at_level(logging.INFO, logger=monitor.log.name), mon.stage("quality"):
        futures = [client.submit(wait_for_the_gate, str(gate), pure=False), client.submit(int, 1)]
        mon.bar(futures, "mini-batch volumes")
        futures[1].result()
        for _ in range(6000):  # until a heartbeat line has seen the two tasks (a log, not a clock, is checked)
            if any("(1 of 2 tasks done)" in r.getMessage() for r in caplog.records):
                break
            threading.Event().wait(0.01)
        gate.write_text("")
        assert futures[0].result()
    beats = [r.getMessage() for r in caplog.records if "running for" in r.getMessage()]
    assert any(m.startswith("stage quality: mini-batch volumes: running for") and m.endswith("(1 of 2 tasks done)")
               for m in beats), beats


def test_a_client_that_cannot_say_is_not_embedded():
    class Broken:
        def scheduler_info(self):
            raise OSError("gone")

    assert monitor._embedded(Broken()) is False
    assert Monitor(Broken()).embedded is False  # then every process is asked for its peak


def test_a_childs_progress_reaches_the_heartbeat(client, caplog, tmp_path):
    """A partitioner child's progress line (``child.report``, forwarded by the worker that waits for it) shows
    in the stage's heartbeat, and leaves with the stage."""
    from shgcn.pipeline.runtime import child

    mon = Monitor(client, heartbeat=0.01)
    line = tmp_path / child.PROGRESS
    line.write_text("round 2 of at most 8; validation volume best 1,234 (start hp); 40 s")

    def worker_forwards(path):  # what the worker's wait loop does with a changed progress file
        return child.forward(path, "shp: the partitioner", "")

    with caplog.at_level(logging.INFO, logger=monitor.log.name), mon.stage("partition"):
        assert client.submit(worker_forwards, line, pure=False).result() == line.read_text()
        for _ in range(6000):  # until the event arrived and a heartbeat showed it (a log, not a clock, is checked)
            if any("best 1,234" in r.getMessage() for r in caplog.records):
                break
            threading.Event().wait(0.01)
    assert mon.news == {"shp: the partitioner": line.read_text()}
    beats = [r.getMessage() for r in caplog.records if "best 1,234" in r.getMessage()]
    assert beats and beats[0].endswith("tasks done); shp: the partitioner: round 2 of at most 8; validation volume "
                                       "best 1,234 (start hp); 40 s"), beats
    with mon.stage("place"):
        assert mon.news == {}  # the next stage starts without the last one's news


def test_the_monitor_counts_a_stages_futures_and_holds_none(client):
    # a future the stage lets go of leaves the workers once done: the monitor kept every one to the stage's end
    from shgcn.pipeline.runtime.client import _held_keys

    mon = Monitor(client, heartbeat=3600)
    with mon.stage("ingest"):
        futures = [client.submit(bytes, 1 << 20, pure=False) for _ in range(3)]
        mon.bar(futures, "ingest: vertex ids")
        client.gather(futures)
        keys = [f.key for f in futures]
        del futures
        for _ in range(3000):  # until the scheduler has forgotten them (the client's release is asynchronous)
            if not client.run_on_scheduler(_held_keys, keys=keys):
                break
            threading.Event().wait(0.01)
        assert client.run_on_scheduler(_held_keys, keys=keys) == 0
        for _ in range(300):  # the done-callbacks run on Dask's callback thread
            if mon._counts() == (3, 3):
                break
            threading.Event().wait(0.01)
        assert mon._counts() == (3, 3)
    with mon.stage("normalize"):
        assert mon._counts() == (0, 0)  # each stage counts its own
