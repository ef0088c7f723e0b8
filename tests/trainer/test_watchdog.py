"""The collective watchdog (trainer/watchdog.py): its verdict, and a one-rank job that runs none (the faults
suite, tests/faults/test_trainer_faults.py, stops a rank for real)."""

from shgcn.trainer import watchdog


def test_the_watchdog_names_the_silent_rank_or_the_slowest():
    """The verdict alone (no MPI): a rank not heard from is named; when all
    answer, the one whose progress is oldest."""
    from shgcn.trainer.watchdog import Watchdog

    dog = Watchdog.__new__(Watchdog)
    dog.rank, dog.size, dog.timeout, dog.last_progress = 0, 4, 10.0, 95.0
    dog.heard = {1: 99.0, 2: 80.0, 3: 99.5}
    dog.their_age = {1: 4.0, 2: 0.0, 3: 30.0}
    silent, line = dog.verdict(100.0)
    assert silent == [2] and line.startswith("rank 2 stopped answering: no message for 20 s")
    dog.heard[2] = 99.0
    silent, line = dog.verdict(100.0)
    assert silent == [] and "rank 3 made its last progress 30 s ago" in line and "--timeout 10" in line


def test_tick_is_a_no_op_without_a_watchdog():
    assert watchdog._CURRENT is None
    watchdog.tick()


def test_say_writes_one_whole_line_in_one_write(monkeypatch):
    """Issue 33: two ranks failing at once ran together ("...empty sequenceshgcn-train: rank 0: ..."): print
    writes a line's text and its newline apart. say() writes the whole line, newline included, at once."""
    calls = []
    monkeypatch.setattr(watchdog.os, "write", lambda fd, data: calls.append((fd, data)) or len(data))
    watchdog.say("shgcn-train: rank 1: ValueError: two\nlines")
    assert calls == [(2, b"shgcn-train: rank 1: ValueError: two lines\n")]
