"""What the trainer writes (rank 0: the run log, the checkpoint), checked
before any work: a directory that is missing or read-only, a log or a
checkpoint that exists and would be replaced. Nothing the trainer did not
write is ever replaced: ``--overwrite`` replaces only a run log (its first
line is a header record) and a checkpoint (``checkpoint.npz`` with its
identity); ``--resume`` continues both."""

from __future__ import annotations

import json
import os
import tempfile
import zipfile
from pathlib import Path

from .checkpoint import FILE
from .config import TrainConfig, TrainError


def check_outputs(cfg: TrainConfig, rank: int) -> None:
    """Raise :class:`TrainError` (one line) for an output that cannot or must
    not be written; rank 0 writes them, the other ranks check nothing."""
    if rank != 0:
        return
    if cfg.log:
        _check_names(Path(cfg.log), "--log", LOG_SIBLING)
        _check_log(Path(cfg.log), cfg)
    if cfg.checkpoint:
        _check_names(Path(cfg.checkpoint), "--checkpoint", 0)
        _check_checkpoint(Path(cfg.checkpoint), cfg)


NAME_MAX = 255  # bytes in a file name (every Linux filesystem's)
PATH_MAX = 4096 - 64  # bytes in a path, less room for the checkpoint's file and its temporary sibling
LOG_SIBLING = 32  # the run log is first written as ".NAME.tmp-<pid>" beside it


def _check_names(path: Path, flag: str, room: int) -> None:
    """Every name of ``path`` fits the filesystem (the last with ``room`` bytes to spare), and the path does:
    otherwise every look at it fails with ENAMETOOLONG."""
    names = path.parts
    for i, name in enumerate(names):
        size, most = len(os.fsencode(name)), NAME_MAX - (room if i == len(names) - 1 else 0)
        if size > most:
            raise TrainError(f"{flag}: a name of {size} bytes in the path; at most {most}"
                             f"{' (the trainer writes a sibling named after it first)' if most < NAME_MAX else ''}")
    size = len(os.fsencode(os.path.abspath(path)))
    if size > PATH_MAX:
        raise TrainError(f"{flag}: a path of {size} bytes; at most {PATH_MAX}")


def _check_log(log: Path, cfg: TrainConfig) -> None:
    if log.is_dir():
        raise TrainError(f"--log {log}: is a directory; name the run log's file, e.g. {log / 'run.jsonl'}")
    _writable_dir(log.parent, f"--log {log}")
    if not (log.exists() or log.is_symlink()):
        return
    if not is_run_log(log):
        raise TrainError(f"--log {log}: exists and is not a run log; it is left as it is (choose another file)")
    if not (cfg.resume or cfg.overwrite):
        raise TrainError(f"--log {log}: already exists; pass --overwrite to replace it, or --resume (with "
                         "--checkpoint) to continue it")


def _check_checkpoint(directory: Path, cfg: TrainConfig) -> None:
    what = f"--checkpoint {directory}"
    if directory.exists() and not directory.is_dir():
        raise TrainError(f"{what}: exists and is not a directory")
    if not directory.exists():  # made at the first save: its nearest existing parent must take it
        parent = next(p for p in directory.absolute().parents if p.exists())
        if not parent.is_dir():
            raise TrainError(f"{what}: {parent} is not a directory")
        _writable_dir(parent, what)
        return
    _writable_dir(directory, what)
    saved = directory / FILE
    if saved.exists() and not saved.is_file():  # a FIFO: reading it (to resume, or to tell) would block
        raise TrainError(f"{what}: {saved} is not a regular file (a FIFO, a device); it is left as it is")
    if saved.exists() and not cfg.resume:
        if not is_checkpoint(saved):
            raise TrainError(f"{what}: {saved} is not a checkpoint of this trainer; it is left as it is")
        if not cfg.overwrite:
            raise TrainError(f"{what}: holds a checkpoint ({saved}); pass --resume to continue it, or --overwrite "
                             "to replace it")


def _writable_dir(directory: Path, what: str) -> None:
    """``directory`` exists and a file can be created in it (tried: a mode, a
    read-only mount and a full quota all show)."""
    if not directory.is_dir():
        raise TrainError(f"{what}: the directory {directory} does not exist")
    try:
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".shgcn-train-check-"):
            pass
    except OSError as e:
        raise TrainError(f"{what}: cannot write into {directory} ({e.strerror or e})") from None


def is_run_log(path: Path) -> bool:
    """The first line is a run log's header record (of a regular file: a FIFO is never read, it would block)."""
    if not os.path.isfile(path):
        return False
    try:
        with open(path, "rb") as f:
            first = f.readline(1 << 20)
        return json.loads(first).get("type") == "header"
    except (OSError, ValueError, AttributeError):
        return os.path.exists(path) and os.path.getsize(path) == 0  # an empty file: nothing to lose


def is_checkpoint(path: Path) -> bool:
    """A ``.npz`` with the arrays :func:`.checkpoint.save` writes (a regular file's)."""
    if not os.path.isfile(path):
        return False
    try:
        with zipfile.ZipFile(path) as z:
            names = set(z.namelist())
    except (OSError, zipfile.BadZipFile):
        return False
    return {"epoch.npy", "identity.npy", "w0.npy"} <= names
