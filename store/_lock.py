"""The lock of an output (``.NAME.lock``): one build at a time per store.

A kernel lock (``flock``, through :mod:`filelock`) on the lock file: the
kernel releases it when its holder dies, however it dies, so a lock is never
stale. While held, the file names its holder (pid, host, the partial), for
the message a second build prints; a file left by a build that was killed is
taken over with a log line. The holder removes the file before it lets go
(filelock >= 4 retries a lock taken on a removed file, so that is safe).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
from pathlib import Path
from typing import Any

from ._schema import StoreError

log = logging.getLogger(__name__)


def read_lock(path: Path) -> dict | None:
    """What a lock file says about its holder (None: nothing readable)."""
    try:
        holder = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return holder if isinstance(holder, dict) else None


class OutputLock:
    """The lock ``path`` of the store ``target``, held by a build writing
    into ``partial``."""

    def __init__(self, path: Path, target: Path, partial: str):
        self.path = path
        self.target = target
        self.me = {"pid": os.getpid(), "host": socket.gethostname(), "partial": partial}
        self._lock: Any = None  # a filelock.FileLock while held

    def _write_holder(self, fd: int) -> None:
        data = json.dumps(self.me).encode()
        os.ftruncate(fd, 0)
        os.pwrite(fd, data, 0)

    def acquire(self) -> None:
        """Take the lock at once, or raise :class:`StoreError` naming its holder."""
        from filelock import FileLock, Timeout

        before = read_lock(self.path)
        lock = FileLock(str(self.path), timeout=0, thread_local=False, on_acquired=self._write_holder)
        try:
            lock.acquire()
        except Timeout:
            holder = read_lock(self.path) or {}
            raise StoreError(f"{self.target}: another build (pid {holder.get('pid', '?')} on "
                             f"{holder.get('host', '?')}) is writing this store; its lock is {self.path}") from None
        except OSError as e:
            from ._arrays import os_error

            raise os_error(self.target, e) from None
        self._lock = lock
        if before and before.get("pid") is not None:
            log.warning("%s: taking over the lock of a build that is no longer running (pid %s on %s)", self.path,
                        before.get("pid"), before.get("host"))

    def release(self) -> None:
        """Remove the lock file, then let go (idempotent)."""
        if self._lock is None:
            return
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        self._lock.release()
        self._lock = None
