"""A rank's thread counts (trainer/threads.py): the thread variables of the environment bounded by the cores
(4 per core), named in one line before numba or BLAS read them; the launcher's rank before MPI starts."""

import pytest

from shgcn.trainer import threads


@pytest.fixture
def two_cores(monkeypatch):
    for var in (*threads.THREAD_VARS, *threads.LAUNCHER_RANK_VARS):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(threads.os, "cpu_count", lambda: 2)


def test_the_most_threads_are_four_per_core(two_cores):
    assert threads.max_threads() == 8


@pytest.mark.parametrize("value", ["0", "-1", "9", "100000", "x", "1.5"])
def test_a_bad_thread_variable_is_named(two_cores, monkeypatch, value):
    monkeypatch.setenv("NUMBA_NUM_THREADS", value)
    assert threads.thread_env_problem() == (f"NUMBA_NUM_THREADS={value!r} in the environment: threads, a whole "
                                            "number from 1 to 8 (4 per core of this machine's 2); unset it or fix it")
    assert threads.thread_env_problem(skip=threads.THREAD_VARS) is None  # a valid --threads replaces it


def test_good_and_empty_variables_pass_and_openmp_takes_a_list(two_cores, monkeypatch):
    monkeypatch.setenv("NUMBA_NUM_THREADS", "8")
    monkeypatch.setenv("MKL_NUM_THREADS", "")  # empty: unset
    monkeypatch.setenv("OMP_NUM_THREADS", "4,2")  # OpenMP's nested list
    assert threads.thread_env_problem() is None
    monkeypatch.setenv("OMP_NUM_THREADS", "4,0")
    assert threads.thread_env_problem() == ("OMP_NUM_THREADS='4,0' in the environment: threads, a whole number from "
                                            "1 to 8 (4 per core of this machine's 2); unset it or fix it")


@pytest.mark.parametrize("env,rank", [({}, 0), ({"OMPI_COMM_WORLD_RANK": "3"}, 3), ({"PMI_RANK": "1"}, 1),
                                      ({"PMIX_RANK": "x"}, 0)])
def test_the_launchers_rank(two_cores, monkeypatch, env, rank):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert threads.launcher_rank() == rank


def test_threads_beyond_the_affinity_are_named(two_cores, monkeypatch):
    """A rank bound to fewer cores than the machine has (a launcher's binding) and asked for more threads: one
    line naming both counts; more threads than the whole machine's cores (asked for, allowed) or within the
    affinity: nothing."""
    monkeypatch.setattr(threads.os, "cpu_count", lambda: 16)
    monkeypatch.setattr(threads.os, "sched_getaffinity", lambda pid: {3}, raising=False)
    assert threads.affinity_cores() == 1
    msg = threads.affinity_warning(16)
    assert msg is not None and "16 threads but this rank may run on 1 of the machine's 16 cores" in msg
    assert "\n" not in msg and threads.affinity_warning(1) is None
    monkeypatch.setattr(threads.os, "sched_getaffinity", lambda pid: set(range(16)), raising=False)
    assert threads.affinity_warning(16) is None and threads.affinity_warning(32) is None
