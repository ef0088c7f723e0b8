"""Thread and worker counts, bounded by this machine's cores: ``--threads`` (the partitioners'), ``--workers``
(the embedded Dask cluster's) and the thread variables of the environment that numba and BLAS read (numba
raises on ``NUMBA_NUM_THREADS=0``). A few threads per core are legitimate (more than the cores only make them
compete, but a machine may under-report its cores); thousands are a typo that leaves a build silent for minutes.
Nothing heavy is imported: the check runs before any command loads numba."""

from __future__ import annotations

import os

from .errors import UserError

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")
# the most threads (or worker processes) per core (trainer/threads.py's THREADS_PER_CORE: the same for shgcn-train)
THREADS_PER_CORE = 4


def max_threads() -> int:
    """The most threads (or Dask workers) a build may start: :data:`THREADS_PER_CORE` per core of this machine."""
    return THREADS_PER_CORE * (os.cpu_count() or 1)


def check_counts(args) -> None:
    """Raise :class:`UserError` for a thread count of the environment (:data:`THREAD_VARS`: numba raises on 0) or
    a ``--workers`` no machine can run (``--threads`` is the build's own check: :meth:`.BuildConfig.check`)."""
    top, cores = max_threads(), os.cpu_count() or 1
    for var in THREAD_VARS:
        value = os.environ.get(var, "").strip()
        counts = value.split(",") if var == "OMP_NUM_THREADS" else [value]
        if value and not all(c.strip().isdigit() and 1 <= int(c) <= top for c in counts):
            raise UserError(f"{var}={value!r} in the environment: threads, a whole number from 1 to {top} "
                            f"({THREADS_PER_CORE} per core of this machine's {cores}); unset it or fix it")
    workers = getattr(args, "workers", 0)
    if isinstance(workers, int) and not 0 <= workers <= top:
        raise UserError(f"--workers {workers}: from 0 (one per core) to {top} ({THREADS_PER_CORE} per core of this "
                        f"machine's {cores})")
