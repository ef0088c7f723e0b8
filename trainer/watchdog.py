"""A collective watchdog: a job in which no rank makes progress ends with one
line naming the rank that stopped answering, instead of waiting forever.

Every rank runs a thread that, every ``interval`` seconds, sends a heartbeat
(a few bytes: how long ago its own rank last made progress) to every other
rank and collects theirs, on a communicator of its own (a ``Dup`` of the
job's, so heartbeats never meet the training's messages). The training loop
marks progress with :func:`tick` (each epoch, mini-batch step and
evaluation). When this rank has made no progress for ``timeout`` seconds,
the watchdog looks at what it heard:

- a rank that sent nothing for ``timeout`` seconds stopped answering (a
  ``SIGSTOP``, a hang in native code that holds the GIL, a lost node); it
  is named;
- if every rank answers, none made progress: the rank whose last progress is
  oldest is named, and the message says to raise ``--timeout`` if steps are
  really this long.

The lowest-numbered rank that still answers prints the line and aborts the
job (``MPI_Abort`` with exit code 2, which the launcher turns into a kill of
every rank, a stopped one included); the others wait for that, and leave on
their own (exit 2) if it does not come. Checkpoints are written atomically,
so ``--resume`` continues from the last one afterwards.

Needs ``MPI_THREAD_MULTIPLE`` (mpi4py asks for it by default); without it,
or on one rank, the watchdog does not run.
"""

from __future__ import annotations

import os
import sys
import threading
import time

import numpy as np

_TAG = 77
ABORT_GRACE = 1.0  # seconds for the last line to reach the launcher before the job is aborted
_CURRENT: Watchdog | None = None


def tick() -> None:
    """This rank made progress (a no-op when no watchdog runs)."""
    if _CURRENT is not None:
        _CURRENT.last_progress = time.monotonic()


class Watchdog:
    """Heartbeats among the ranks of ``comm``; see the module docstring.

    ``timeout``: seconds without progress before the job ends; ``interval``:
    seconds between heartbeats (default: a tenth of the timeout, between
    0.2 and 10 s). Create it on every rank at the same point (``Dup`` is
    collective), then :meth:`start`; :meth:`stop` before ``MPI_Finalize``.
    """

    def __init__(self, comm, timeout: float, interval: float | None = None, prefix: str = "shgcn-train"):
        self.comm = comm.Dup()
        self.rank, self.size = self.comm.Get_rank(), self.comm.Get_size()
        self.timeout = float(timeout)
        self.interval = interval if interval is not None else min(max(self.timeout / 10, 0.2), 10.0)
        self.prefix = prefix
        now = time.monotonic()
        self.last_progress = now
        self.heard = {q: now for q in self._peers()}  # when each peer was last heard from
        self.their_age = {q: 0.0 for q in self._peers()}  # seconds since the peer's own progress, as it said
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="shgcn-watchdog", daemon=True)
        self._recv = {q: np.zeros(1, np.float64) for q in self._peers()}
        self._rreq: dict = {}
        self._sreq: dict = {}
        self._sbuf: dict = {}

    def _peers(self) -> list[int]:
        return [q for q in range(self.size) if q != self.rank]

    def start(self) -> Watchdog:
        global _CURRENT
        _CURRENT = self
        for q in self._peers():
            self._rreq[q] = self.comm.Irecv(self._recv[q], source=q, tag=_TAG)
        self._thread.start()
        return self

    def stop(self) -> None:
        """End the heartbeats (every rank, at the same point: pending messages are cancelled)."""
        global _CURRENT
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        _CURRENT = None if _CURRENT is self else _CURRENT
        for req in [*self._rreq.values(), *self._sreq.values()]:
            try:
                req.Cancel()
                req.Wait()
            except Exception:  # noqa: BLE001 - a request that completed meanwhile
                pass

    # --- the thread
    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            now = time.monotonic()
            self._send(now)
            self._receive(now)
            if now - self.last_progress > self.timeout:
                self._fire(now)
                return

    def _send(self, now: float) -> None:
        age = now - self.last_progress
        for q in self._peers():
            req = self._sreq.get(q)
            if req is not None and not req.Test():
                continue  # the last heartbeat to q is still on its way (q may be stopped): do not pile up
            self._sbuf[q] = np.array([age], np.float64)
            self._sreq[q] = self.comm.Isend(self._sbuf[q], dest=q, tag=_TAG)

    def _receive(self, now: float) -> None:
        for q in self._peers():
            while self._rreq[q].Test():
                self.heard[q] = now
                self.their_age[q] = float(self._recv[q][0])
                self._rreq[q] = self.comm.Irecv(self._recv[q], source=q, tag=_TAG)

    def verdict(self, now: float) -> tuple[list[int], str]:
        """(the ranks that stopped answering, the line that says what happened)."""
        silent = [q for q in self._peers() if now - self.heard[q] > self.timeout]
        if silent:
            who = ", ".join(map(str, silent))
            what = (f"rank{'s' if len(silent) > 1 else ''} {who} stopped answering: no message for "
                    f"{now - max(self.heard[q] for q in silent):.0f} s (a stopped or hung process, or a lost node)")
        else:
            ages = {**{q: self.their_age[q] + (now - self.heard[q]) for q in self._peers()},
                    self.rank: now - self.last_progress}
            slowest = max(ages, key=lambda q: ages[q])
            what = (f"no rank made progress for {self.timeout:.0f} s although every rank answers; rank {slowest} "
                    f"made its last progress {ages[slowest]:.0f} s ago (raise --timeout if a step takes that long)")
        return silent, f"{what}; every rank stops (--timeout {self.timeout:g})"

    def _fire(self, now: float) -> None:
        silent, line = self.verdict(now)
        reporter = min(r for r in range(self.size) if r not in silent)
        if self.rank == reporter:
            say(f"{self.prefix}: error: {line}")
            abort_job(2)
        # another rank reports and aborts the job; if that does not come, leave on our own
        time.sleep(self.timeout + 5 * self.interval)
        say(f"{self.prefix}: error: {line}")
        os._exit(2)


def say(line: str) -> None:
    """``line`` on stderr as one whole line, in one write: the ranks of a job
    share the launcher's stderr, and a line written in two pieces (``print``
    writes its text and its newline apart) runs into another rank's when
    several ranks fail at once ("...empty sequenceshgcn-train: rank 0: ...")."""
    encoding = getattr(sys.stderr, "encoding", None) or "utf-8"
    data = (line.strip("\n").replace("\n", " ") + "\n").encode(encoding, "backslashreplace")
    try:  # a closed stderr must not keep the job from ending (abort_job comes next)
        if sys.stderr is not None:
            sys.stderr.flush()
        while data:  # a pipe takes up to PIPE_BUF bytes whole; a longer line may still come in pieces
            data = data[os.write(2, data):]
    except OSError:
        pass


def abort_job(code: int) -> None:
    """End every rank of the job (``MPI_Abort``) after this rank's own line:
    MPICH's note on stderr ("Abort(2) on node 0 ...: application called
    MPI_Abort") would be a second line, so stderr goes to /dev/null first.
    The launcher forwards a rank's output through its proxy, and an abort
    tears that down: the line gets a moment to travel first."""
    from mpi4py import MPI

    sys.stderr.flush()
    time.sleep(ABORT_GRACE)
    with open(os.devnull, "wb") as null:
        os.dup2(null.fileno(), 2)
    MPI.COMM_WORLD.Abort(code)


def start(comm, timeout: float) -> Watchdog | None:
    """A running watchdog for ``comm``, or None (one rank, ``timeout`` 0, or
    an MPI without thread support). Collective: every rank calls it."""
    from mpi4py import MPI

    if comm.Get_size() < 2 or timeout <= 0:
        return None
    if MPI.Query_thread() < MPI.THREAD_MULTIPLE:
        if comm.Get_rank() == 0:
            say("shgcn-train: warning: this MPI gives no MPI_THREAD_MULTIPLE, so no watchdog runs (--timeout "
                "is ignored; a rank that stops answering leaves the others waiting)")
        return None
    return Watchdog(comm, timeout).start()
