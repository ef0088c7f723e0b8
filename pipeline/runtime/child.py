"""Child processes for native code that holds the GIL.

Native partitioners hold the GIL for their whole run (Mt-KaHyPar's binding:
measured, no other thread ran for 270 s of a 200k-vertex partition). In a
Dask worker that starves the scheduler and the client (a build lost its task
after 28 minutes), so such work runs in a fresh interpreter: the same code,
the same result, and the worker stays responsive. The child dies with its
parent (``PR_SET_PDEATHSIG``) and is killed on Ctrl-C (:func:`kill_children`).

Inputs and outputs travel as files in a working directory (a plain
subprocess, not multiprocessing, which would re-import the caller's main
module). A child that fails because of the user's input writes
``user_error.txt`` there (:func:`user_error`) and exits with code 2.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from ..errors import UserError

USER_ERROR = "user_error.txt"

_CHILDREN: set[subprocess.Popen] = set()
_LOCK = threading.Lock()


def run_module(module: str, workdir: Path, what: str) -> None:
    """Run ``python -m module WORKDIR PARENT_PID`` and wait for it.

    Raises :class:`UserError` with the child's message when it left one,
    else ``RuntimeError`` naming ``what``, the signal or the exit code and
    the end of its stderr."""
    proc = subprocess.Popen([sys.executable, "-m", module, str(workdir), str(os.getpid())],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    with _LOCK:
        _CHILDREN.add(proc)
    try:
        err = _wait(proc, what)
    finally:
        with _LOCK:
            _CHILDREN.discard(proc)
    if proc.returncode == 0:
        return
    if (workdir / USER_ERROR).exists():
        raise UserError((workdir / USER_ERROR).read_text())
    if proc.returncode < 0:
        raise RuntimeError(f"{what}: the child process was killed by signal {signal.Signals(-proc.returncode).name}")
    raise RuntimeError(f"{what}: failed in its child process (exit {proc.returncode}): {err[-2000:]}")


def _wait(proc: subprocess.Popen, what: str) -> str:
    """Wait for the child (its stderr collected); in a Dask worker that is
    closing (its scheduler is gone, the cluster shuts down), kill the child
    at once rather than leave it running until the worker process exits."""
    while True:
        try:
            return proc.communicate(timeout=POLL)[1]
        except subprocess.TimeoutExpired:
            if worker_closing():
                proc.kill()
                proc.communicate()
                raise RuntimeError(f"{what}: stopped, the Dask worker that ran it is closing (its scheduler is gone)") \
                    from None


POLL = 0.5  # seconds between looks at the worker while a child runs
_CLOSING = {"closing", "closing_gracefully", "closed", "failed", "stopping", "stopped"}


def worker_closing() -> bool:
    """Running in a Dask worker that is closing or closed."""
    try:
        from distributed import get_worker

        status = get_worker().status
    except (ImportError, ValueError, AttributeError):
        return False
    return getattr(status, "name", str(status)) in _CLOSING


def user_error(workdir: Path, message: str) -> None:
    """In the child: hand a user error to the parent and exit with code 2."""
    (workdir / USER_ERROR).write_text(message)
    raise SystemExit(2)


def kill_children() -> int:
    """Kill every child of this process (Ctrl-C); returns how many."""
    with _LOCK:
        procs = list(_CHILDREN)
    for proc in procs:
        try:
            proc.kill()
        except OSError:
            pass
    return len(procs)


def die_with_parent(parent: int) -> None:
    """In the child (Linux): the kernel kills this process when its parent
    dies (a killed build must not leave a partitioner running; a Python
    watchdog thread could not run while the binding holds the GIL)."""
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: best effort
        return
    if os.getppid() != parent:  # the parent died before prctl
        os._exit(1)
