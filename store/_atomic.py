"""The file-system steps that make a build atomic and safe: the swap of the
partial store into place (``renameat2``), and what a directory is (a store,
inside a store, holding what no store holds). The output's lock is
:mod:`._lock`."""

from __future__ import annotations

import ctypes
import json
import os
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


def enclosing_store(path: Path) -> Path | None:
    """The store (or a build's partial store) that ``path`` would lie inside, if any."""
    for candidate in (path.absolute(), path.resolve()):
        for parent in candidate.parents:
            if _layout.is_partial(parent) or is_store_dir(parent):
                return parent
    return None


def foreign_entries(root: Path, limit: int = 1) -> list[Path]:
    """Up to ``limit`` entries under the store ``root`` that a store does not
    contain: anything but group and array metadata (``zarr.json``) and an
    array's chunks (``c/0/1...``), or another store. What ``--overwrite``
    would delete besides the store is never deleted: these make it refuse."""
    found: list[Path] = []
    chunks: set[Path] = set()  # the c/ directories of arrays
    for here, dirs, files in os.walk(root):
        at = Path(here)
        if any(p in chunks for p in (at, *at.parents)):
            found += [at / x for x in [*dirs, *files] if not x.isdigit()]
        elif at != root and is_store_dir(at):
            found.append(at)
            dirs[:] = []
        else:
            if _node_type(at) == "array":
                chunks.add(at / "c")
                found += [at / d for d in dirs if d != "c"]
                dirs[:] = [d for d in dirs if d == "c"]
            dirs[:] = [d for d in dirs if not (at == root and d == ".work")]  # the partitioners' scratch (a partial)
            found += [at / f for f in files if f != _layout.ROOT_META]
        if len(found) >= limit:
            break
    return found[:limit]


def _node_type(path: Path) -> str | None:
    try:
        meta = json.loads((path / _layout.ROOT_META).read_text())
    except (OSError, ValueError):
        return None
    return meta.get("node_type") if isinstance(meta, dict) else None


def identity(path: Path) -> tuple | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return st.st_dev, st.st_ino


