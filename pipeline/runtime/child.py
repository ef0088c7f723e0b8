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

A long child says how far it is with :func:`report` (a line in a file of
the working directory, the latest wins); the parent, polling the child,
forwards each new line to the build's client as a Dask event (topic
:data:`PROGRESS_TOPIC`), where the stage's heartbeat and bar show it.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from ..errors import UserError

USER_ERROR = "user_error.txt"
PROGRESS = "progress.txt"
PROGRESS_ENV = "SHGCN_CHILD_PROGRESS"  # the child's progress file, set by :func:`run_module`
PROGRESS_TOPIC = "shgcn-progress"

log = logging.getLogger(__name__)
_CHILDREN: set[subprocess.Popen] = set()
_LOCK = threading.Lock()


class DeadlinePassed(Exception):
    """The child of :func:`run_module` was stopped at its deadline (a time budget, not a failure)."""


def run_module(module: str, workdir: Path, what: str, limit: int | None = None, deadline: float | None = None
               ) -> None:
    """Run ``python -m module WORKDIR PARENT_PID`` and wait for it.

    Raises :class:`UserError` with the child's message when it left one,
    else ``RuntimeError`` naming ``what``, the signal or the exit code and
    the end of its stderr. With ``limit`` (bytes, the user's
    ``--memory-limit``) the child is killed, with a :class:`UserError` that
    says what to change, as soon as it and this process hold more than
    that (:func:`over_limit`, sampled every :data:`POLL` seconds). With
    ``deadline`` (a :func:`time.monotonic` time) the child is killed when it
    runs past it, and :class:`DeadlinePassed` is raised (native code cannot
    be interrupted inside one process: this is how a time budget binds it)."""
    proc = subprocess.Popen([sys.executable, "-m", module, str(workdir), str(os.getpid())],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, PROGRESS_ENV: str(workdir / PROGRESS)})
    with _LOCK:
        _CHILDREN.add(proc)
    try:
        err = _wait(proc, what, workdir / PROGRESS, limit, deadline)
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


def _wait(proc: subprocess.Popen, what: str, progress: Path, limit: int | None = None,
          deadline: float | None = None) -> str:
    """Wait for the child (its stderr collected), forwarding each new line of its ``progress`` file
    (:func:`forward`); in a Dask worker that is closing (its scheduler is gone, the cluster shuts down), kill
    the child at once rather than leave it running until the worker process exits; kill it too when it and
    this process hold more than ``limit`` bytes, or when it runs past ``deadline``."""
    seen = ""
    while True:
        timeout = POLL if deadline is None else min(POLL, max(deadline - time.monotonic(), 0.01))
        try:
            return proc.communicate(timeout=timeout)[1]
        except subprocess.TimeoutExpired:
            if deadline is not None and time.monotonic() >= deadline:
                proc.kill()
                proc.communicate()
                raise DeadlinePassed(what) from None
            if worker_closing():
                proc.kill()
                proc.communicate()
                raise RuntimeError(f"{what}: stopped, the Dask worker that ran it is closing (its scheduler is gone)") \
                    from None
            over = over_limit(proc.pid, what, limit) if limit is not None else None
            if over is not None:
                proc.kill()
                proc.communicate()
                raise UserError(over) from None
            seen = forward(progress, what, seen)


def tree_resident(pid: int) -> int:
    """Resident bytes of process ``pid`` and all its descendants (0 once it is gone)."""
    import psutil

    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0
    total = 0
    for p in procs:
        try:
            total += p.memory_info().rss
        except psutil.Error:  # ended while we looked
            continue
    return total


def over_limit(pid: int, what: str, limit: int) -> str | None:
    """The message that stops child ``pid`` when it (with its own children) and this process hold more than
    ``limit`` bytes at once, else None. This process and its other children are counted because the
    child's input and this process's arrays are resident beside it: the limit is the build's, not the
    child's (with worker processes, ``--processes``, the worker's process tree)."""
    child = tree_resident(pid)
    own = max(0, tree_resident(os.getpid()) - child)
    if child + own <= limit:
        return None
    gib = 2.0**30
    return (f"{what}: stopped: its child process held {child / gib:.2f} GiB beside the build's {own / gib:.2f} GiB, "
            f"{(child + own) / gib:.2f} GiB at once, over --memory-limit {limit / gib:.2f} GiB; raise --memory-limit "
            "(pipeline build ... --plan prints the peak each stage is predicted to hold)")


def report(text: str) -> None:
    """In a child of :func:`run_module`: the line of progress its parent shows (the latest replaces the one
    before; written whole, then renamed, so the parent never reads half a line). Nothing outside a child."""
    path = os.environ.get(PROGRESS_ENV)
    if not path:
        return
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def forward(progress: Path, what: str, seen: str) -> str:
    """Publish the child's progress line when it changed since ``seen``: an event for the build's client in a
    Dask worker, a log line elsewhere. Returns the line now seen."""
    try:
        text = progress.read_text()
    except OSError:  # none yet
        return seen
    if text == seen:
        return seen
    try:
        from distributed import get_worker

        get_worker().log_event(PROGRESS_TOPIC, {"what": what, "text": text})
    except (ImportError, ValueError):  # not in a Dask worker
        log.info("%s: %s", what, text)
    return text


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
