"""The build's thread and worker counts (pipeline/threads.py): the environment's thread variables and
``--workers`` bounded by the cores (4 per core), one line each (the command's own exit is in test_cli.py)."""

from types import SimpleNamespace

import pytest

from shgcn.pipeline import threads
from shgcn.pipeline.errors import UserError


@pytest.fixture
def two_cores(monkeypatch):
    for var in threads.THREAD_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(threads.os, "cpu_count", lambda: 2)


@pytest.mark.parametrize("env,workers,message", [
    ({"NUMBA_NUM_THREADS": "0"}, 0, "NUMBA_NUM_THREADS='0' in the environment: threads, a whole number from 1 to 8 "
                                    "(4 per core of this machine's 2); unset it or fix it"),
    ({"OPENBLAS_NUM_THREADS": "many"}, 0, "OPENBLAS_NUM_THREADS='many' in the environment: threads, a whole number "
                                          "from 1 to 8 (4 per core of this machine's 2); unset it or fix it"),
    ({}, -2, "--workers -2: from 0 (one per core) to 8 (4 per core of this machine's 2)"),
    ({}, 9, "--workers 9: from 0 (one per core) to 8 (4 per core of this machine's 2)")])
def test_bad_counts_are_one_line(two_cores, monkeypatch, env, workers, message):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    with pytest.raises(UserError) as e:
        threads.check_counts(SimpleNamespace(workers=workers))
    assert str(e.value) == message


def test_counts_in_range_pass(two_cores, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "2,1")
    monkeypatch.setenv("NUMBA_NUM_THREADS", "8")
    monkeypatch.setenv("MKL_NUM_THREADS", "")
    for workers in (0, 1, 8):
        threads.check_counts(SimpleNamespace(workers=workers))
    threads.check_counts(SimpleNamespace())  # a command without --workers
    assert threads.max_threads() == 8
