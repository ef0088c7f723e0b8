"""Looking at a graph's path before it is read: its format (the one place
that decides it, :func:`detect_format`), and for a file (the
``ingest-probe`` task) its size, compression and whether this process may
read it; the helpers the readers' header checks share."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UserError, located
from . import budget, parsing
from .base import Reader

_HEADER_PEEK = 64 * 1024


def detect_format(path: str | Path, readers: Iterable[Reader]) -> str:
    """The format of ``path``: the first of ``readers`` (the registry's, in
    its order) whose :class:`~.base.Recognizes` claims it, by the
    precedence that class describes. :class:`UserError` when none does."""
    readers = tuple(readers)
    claims = [(r.name, r.recognizes) for r in readers]
    name = Path(path).name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    for fmt, k in claims:  # a name that is a format's own, even a directory's
        if k.suffixes and name.endswith(k.suffixes) and not (k.unless and name.startswith(k.unless)):
            return fmt
    if Path(path).is_dir():
        found = _dir_format(Path(path), claims)
        if found is not None:
            return found
    else:
        for fmt, k in claims:
            if k.prefixes and name.startswith(k.prefixes):
                return fmt
        for fmt, k in claims:
            if (k.loose and name.endswith(k.loose)) or (k.bare and "." not in name):
                return fmt
    raise UserError(f"{path}: unknown format; pass --format, one of {', '.join(r.name for r in readers)}")


def _dir_format(path: Path, claims: list) -> str | None:
    """A directory's format: a reader's files inside it (an OGB directory's
    ``raw/edge.csv.gz``, GraphSAINT's ``adj_full.npz``), then its folders (an
    OGB directory that lacks its edges: its reader names the missing file),
    then the reader of any directory (Planetoid's)."""
    for fmt, k in claims:
        if any((path / f).exists() for f in k.files):
            return fmt
    for fmt, k in claims:
        if any((path / f).is_dir() for f in k.folders):
            return fmt
    return next((fmt for fmt, k in claims if k.directory), None)


@dataclass(frozen=True)
class Probe:
    """What a look at the file found (the ``ingest-probe`` task's result)."""

    path: str
    fmt: str
    size: int
    gzip: bool = False
    members: tuple[int, ...] | None = None  # BGZF member offsets
    header_lines: int = 0
    header_bytes: int = 0  # (decompressed) bytes before the first entry
    n: int | None = None  # declared vertex count
    base: int = 0  # id of the first vertex in the file (0 or 1)
    directed: bool | None = None  # what the file says
    entries: int | None = None  # declared entry count (mtx) or edges (metis)
    kind: str = "pairs"
    kwargs: dict = field(default_factory=dict)


def check_file(path: str, fmt: str) -> int:
    """The file exists, is not a directory, may be read by this process and
    is not empty: one line naming it otherwise. Returns its size."""
    p = Path(path)
    if not p.exists():
        raise UserError(f"{path}: file not found")
    if p.is_dir():
        raise UserError(f"{path}: is a directory, expected a {fmt} file")
    readable(path)
    size = p.stat().st_size
    if size == 0:
        raise located(path, "empty file")
    return size


def probe(path: str, fmt: str, limit: int | None = None) -> Probe:
    """``ingest-probe`` task of a text file: :func:`check_file`, then its
    size and compression (gzip, and the members of a BGZF file). A format
    with a header reads it from :func:`head_lines` (:mod:`.mtx`,
    :mod:`.metis`); ``limit`` is the memory budget its declared sizes are
    checked against there."""
    size = check_file(path, fmt)
    gz = gzip_named(path)
    members = tuple(m) if gz and (m := parsing.bgzf_members(path, size)) else None
    return Probe(path, fmt, size, gz, members)


def gzip_named(path: str) -> bool:
    """Whether ``path`` is gzip (its magic bytes); a ``.gz`` name without
    them (renamed plain text, a broken download) is one line, not text read
    as it is."""
    gz = parsing.is_gzip(path)
    if str(path).endswith(".gz") and not gz:
        raise located(path, "named .gz but not gzip-compressed (no gzip header)")
    return gz


def regular(path: str | Path) -> None:
    """One line naming ``path`` when it is not a regular file (links
    followed): a FIFO, a process substitution (``<(...)``), a device or a
    socket would block the reader or never end."""
    import os
    import stat

    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise UserError(f"{path}: file not found") from None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return
    kind = ("a FIFO or pipe (such as <(...))" if stat.S_ISFIFO(mode) else "a character device" if stat.S_ISCHR(mode)
            else "a block device" if stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode) else "special")
    raise located(path, f"is {kind}, not a regular file: write the data to a file first")


def readable(path: str | Path) -> None:
    """One line naming ``path`` when this process may not read it (permission
    denied, an unreadable mount) or it is no regular file, before any work."""
    regular(path)
    try:
        with open(path, "rb") as f:
            f.read(1)
    except IsADirectoryError:
        return
    except PermissionError:
        raise located(path, "permission denied: this user may not read the file (check its mode and owner)") \
            from None
    except OSError as e:
        raise located(path, f"cannot read ({e.strerror or e})") from None


def head_lines(path: str, gz: bool) -> list[bytes]:
    """The first lines of the (decompressed) file: where a header is."""
    import gzip

    try:
        with (gzip.open(path, "rb") if gz else open(path, "rb")) as f:
            head = f.read(_HEADER_PEEK)
    except EOFError:
        raise located(path, "truncated gzip file (the compressed stream ends early)") from None
    except OSError as e:
        raise located(path, f"cannot read ({e})") from None
    return head.splitlines(keepends=True)


def int_words(line: bytes, path: str, lineno: int, what: str) -> list[int]:
    """The integers of a header line; one line naming ``what`` is bad otherwise."""
    try:
        return [int(x) for x in line.split()]
    except ValueError:
        raise located(path, f"bad {what} {line.strip()[:60]!r}", lineno) from None


def check_declared(path: str, n: int, lineno: int | None, limit: int | None = None, edges: int = 0) -> None:
    """A declared vertex count must be positive, and the declared vertices
    and edges must fit the memory budget ``limit``, checked before anything
    is allocated. ``limit`` None: no budget here, because the build's plan
    checked these counts already (``ReadOptions.limit``; the budget is the
    readers' coarse per-edge guard, about twice what a build holds)."""
    if n < 1:
        raise located(path, f"declared size {n}: a graph needs at least one vertex", lineno)
    if edges < 0:
        raise located(path, f"declared edge count {edges}: must not be negative", lineno)
    what = f"the declared size ({n:,} vertices" + (f", {edges:,} edges)" if edges else ")")
    budget.check(limit, budget.graph_bytes(n, edges), what, path, lineno)


def bgzf_members_of(path: str | Path) -> list[int] | None:
    """Member offsets of a BGZF file, or None (for tests and diagnostics)."""
    return parsing.bgzf_members(str(path), Path(path).stat().st_size)
