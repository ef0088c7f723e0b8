"""A store's partition as an assignment file: the part of every vertex, one
per line, in original vertex order; the format ``pipeline build
--partition-file`` reads and DGL's partition assignment files
(``tools/partition_algo``) use."""

from __future__ import annotations

import contextlib
import json
import os
import re
from pathlib import Path

import numpy as np

from shgcn.store import Store

from ..errors import UserError


def assignment_bytes(part: np.ndarray, chunk: int = 1 << 20) -> bytes:
    """The text of an assignment file: ``part[v]`` on line v.

    Parameters
    ----------
    part : (n,) int
        Part of every vertex, original order.
    """
    part = np.asarray(part)
    if part.size == 0:
        return b""
    table = np.array([f"{p}\n".encode() for p in range(int(part.max()) + 1)], dtype=object)  # one per part
    return b"".join(b"".join(table[part[i:i + chunk]]) for i in range(0, part.size, chunk))


def export_assignment(s: Store, out: str | Path, model: str | None = None, overwrite: bool = False) -> Path:
    """Write ``model``'s partition (default: the store's layout model) to ``out``."""
    model = model or s.attrs["model"]
    out = Path(out)
    check_out(out, overwrite, directory=False)
    write_whole(out, assignment_bytes(s.partition(model)))
    return out


def write_whole(out: Path, data: bytes) -> None:
    """``data`` into ``out``, whole or not at all: written into a hidden sibling ``.NAME.partial-PID`` and renamed
    into place; on any failure (a full disk, Ctrl-C) the sibling is removed, and an ``OSError`` names ``out``
    (the command's one line: a full disk is exit 2 with the file named)."""
    tmp = out.with_name(f".{out.name}.partial-{os.getpid()}")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, out)
    except BaseException as e:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if isinstance(e, OSError):  # write()'s ENOSPC names no file: this one is the user's
            raise OSError(e.errno, e.strerror or str(e), str(out)) from None
        raise


def is_export(d: Path) -> bool:
    """A directory this command wrote: a DistDGL config that names shgcn."""
    for f in d.glob("*.json"):
        try:
            if "shgcn" in json.loads(f.read_text()):
                return True
        except (OSError, ValueError):
            continue
    return False


def is_assignment(path: Path) -> bool:
    """A file this command writes: one non-negative part id per line, nothing else."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return False
    return re.fullmatch(rb"(?:[0-9]+\n)*", data) is not None


def check_out(out: Path, overwrite: bool, directory: bool, ours=is_assignment) -> None:
    """``out`` may be written: its directory exists, and whatever is there is
    replaced only with ``overwrite`` and only when this command wrote it
    (``ours(out)``; for a directory: an export of ours, or empty)."""
    if not out.parent.exists():
        raise UserError(f"{out.parent}: directory does not exist")
    from shgcn.store import enclosing_store

    store = enclosing_store(out)
    if store is not None:
        raise UserError(f"{out}: inside the store {store}, which holds only what a build writes (a foreign file "
                        "there would stop `build --overwrite` of it); write the export elsewhere")
    if out.exists() or out.is_symlink():
        if not overwrite:
            raise UserError(f"{out}: already exists (use --overwrite to replace it)")
        if not (out.is_symlink() or out.is_dir() or out.is_file()):  # a FIFO: reading it to tell would block
            raise UserError(f"{out}: exists and is not a regular file (a FIFO, a device); --overwrite replaces only "
                            "what this command writes, so it is left as it is")
        if out.is_symlink() or out.is_dir() != directory:
            what = (f"a link (to {os.readlink(out)})" if out.is_symlink() else "not a directory" if directory
                    else "a directory")
            raise UserError(f"{out}: exists and is {what}; --overwrite replaces only what this command writes, so "
                            "it is left as it is")
        if directory and any(out.iterdir()) and not is_export(out):
            raise UserError(f"{out}: a directory that is not an export of ours and is not empty; --overwrite replaces "
                            "only those, so it is left as it is")
        if not directory and not ours(out):
            raise UserError(f"{out}: not a file this command writes; --overwrite replaces only those, so it is left "
                            "as it is")
