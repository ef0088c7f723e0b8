"""Thread counts of a rank, bounded by its machine's cores: ``--threads`` and the thread variables of the
environment that numba and BLAS read (numba raises on ``NUMBA_NUM_THREADS=0`` and segfaults on 100000).
Nothing is imported but the standard library: the command line checks them before numpy loads."""

from __future__ import annotations

import os

BLAS_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
THREAD_VARS = (*BLAS_VARS, "NUMBA_NUM_THREADS")
# the most threads a rank may start per core of its machine: a few threads per core are legitimate (checking that
# losses do not depend on the thread count, cores the OS under-reports), thousands are a typo that numba's pool
# answers with a segfault; pipeline/threads.py's THREADS_PER_CORE is the same bound for the build
THREADS_PER_CORE = 4
LAUNCHER_RANK_VARS = ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "MV2_COMM_WORLD_RANK", "SLURM_PROCID")


def max_threads() -> int:
    """The most threads a rank may start: :data:`THREADS_PER_CORE` per core of this machine."""
    return THREADS_PER_CORE * (os.cpu_count() or 1)


def thread_env_problem(skip: tuple[str, ...] = ()) -> str | None:
    """Why a thread variable of the environment (:data:`THREAD_VARS`, but ``skip``) is no thread count (a whole
    number from 1 to :func:`max_threads`; OpenMP's a comma list of them; empty: unset); None when all are."""
    top = max_threads()
    for var in THREAD_VARS:
        value = os.environ.get(var, "").strip()
        if var in skip or not value:
            continue
        counts = value.split(",") if var == "OMP_NUM_THREADS" else [value]
        if not all(c.strip().isdigit() and 1 <= int(c) <= top for c in counts):
            return (f"{var}={value!r} in the environment: threads, a whole number from 1 to {top} "
                    f"({THREADS_PER_CORE} per core of this machine's {os.cpu_count() or 1}); unset it or fix it")
    return None


def launcher_rank() -> int:
    """This process's rank as the launcher's environment says (0 without a launcher), before MPI starts."""
    value = next((os.environ[k] for k in LAUNCHER_RANK_VARS if os.environ.get(k)), "0")
    return int(value) if value.isdigit() else 0


def affinity_cores() -> int:
    """The cores this process may run on (its CPU affinity: a launcher that binds a rank to a core leaves it
    one); the machine's where the OS does not say."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def affinity_warning(threads: int) -> str | None:
    """Why ``threads`` threads will not run at once here: more than the cores of this process's affinity when
    that is narrower than the machine (a binding: the threads would share its cores, and every kernel run slower
    per thread added, issue 52); None when they fit, or when the machine itself has fewer cores (asked for)."""
    cores = affinity_cores()
    if threads <= cores or cores >= (os.cpu_count() or 1):
        return None
    return (f"{threads} threads but this rank may run on {cores} of the machine's {os.cpu_count() or 1} cores (its "
            "CPU affinity: a launcher's binding, e.g. Open MPI's --bind-to core; try --bind-to none or a binding of "
            f"{threads} cores per rank): the threads will share {cores}")
