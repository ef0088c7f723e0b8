"""The file-system steps that make a build atomic and exclusive: the swap of
the partial store into place (``renameat2``), and the lock file of an
output (who holds it, whether that process is alive)."""

from __future__ import annotations

import ctypes
import json
import os
import socket
from pathlib import Path

from . import _layout


def renameat2(src: Path, dst: Path, flags: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    at_fdcwd = -100
    if libc.renameat2(at_fdcwd, os.fsencode(src), at_fdcwd, os.fsencode(dst), flags) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), str(dst))


RENAME_NOREPLACE, RENAME_EXCHANGE = 1, 2


def is_store_dir(path: Path) -> bool:
    """A directory that a shgcn build wrote (complete or not)."""
    try:
        meta = json.loads((path / _layout.ROOT_META).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(meta, dict) and "schema_version" in meta.get("attributes", {})


def identity(path: Path) -> tuple | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return st.st_dev, st.st_ino




def read_lock(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def alive(holder: dict) -> bool:
    if holder.get("host") != socket.gethostname():
        return True  # another machine's build: cannot tell, assume it runs
    try:
        os.kill(int(holder.get("pid", -1)), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, ValueError, TypeError):
        return True
    return True
