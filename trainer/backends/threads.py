"""numba's threads in a rank (``--threads T``): how many, and which threading layer runs them.

The pool's size is ``NUMBA_NUM_THREADS``, read when numba loads (:func:`shgcn.trainer.cli.share_cores`
sets it to T before anything imports numba); :func:`set_threads` asks for T of them. The layer is
numba's first that loads of tbb, omp (GNU OpenMP), workqueue (numba's own), unless the user chose one
(``NUMBA_THREADING_LAYER``). None of them forks: each starts its threads inside the rank's process, which
is what an MPI rank needs (MPICH's and Open MPI's transports do not survive a fork after ``MPI_Init``).
On this project's machines tbb is not installed and the layer is omp; :func:`layer` names the one in use
(the run log records it).
"""

from __future__ import annotations

import numba


def set_threads(threads: int) -> int:
    """Use ``threads`` numba threads for the parallel kernels launched from this (the calling) thread,
    capped by the pool's size; returns the count set. numba's count is per launching thread, and the
    trainer launches its kernels from the main thread."""
    n = max(1, min(int(threads), numba.config.NUMBA_NUM_THREADS))  # type: ignore[attr-defined]
    numba.set_num_threads(n)
    return n


def layer() -> str | None:
    """The threading layer numba loaded (None before the first parallel kernel ran)."""
    try:
        return numba.threading_layer()
    except ValueError:  # no parallel kernel has run yet
        return None
