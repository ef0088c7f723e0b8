"""Looking at a graph file before it is parsed (the ``ingest-probe`` task):
its format, size, compression, header and declared size."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UserError, located
from . import FORMATS, budget, parsing

_HEADER_PEEK = 64 * 1024


def detect_format(path: str | Path) -> str:
    """Guess the format from the file name."""
    name = Path(path).name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    if name.endswith(".mtx"):
        return "mtx"
    if name.endswith((".graph", ".metis")) and not name.startswith("ind."):
        return "metis"
    if name.endswith(".npz"):
        return "npz"
    if Path(path).is_dir():
        return _dir_format(Path(path))
    if name.startswith("ind."):
        return "planetoid"
    if name.endswith((".txt", ".edges", ".el", ".tsv", ".edgelist", ".csv")) or "." not in name:
        return "edgelist"
    raise UserError(f"{path}: unknown format; pass --format, one of {', '.join(FORMATS)}")


def _dir_format(path: Path) -> str:
    """A directory: an OGB node-property directory (raw/edge.csv.gz or
    raw/data.npz), a GraphSAINT one (adj_full.npz, role.json), else Planetoid."""
    raw = path / "raw"
    if raw.is_dir() and any((raw / f).exists() for f in ("edge.csv.gz", "edge.csv", "data.npz")):
        return "ogb"
    if (path / "adj_full.npz").exists() or (path / "role.json").exists():
        return "saint"
    if raw.is_dir() or (path / "split").is_dir():
        return "ogb"  # an OGB directory that lacks its edges: its reader names the missing file
    return "planetoid"


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


def probe(path: str, fmt: str, limit: int | None = None) -> Probe:
    """``ingest-probe`` task: check the file and read its header; declared
    sizes are checked against the memory budget ``limit`` (bytes)."""
    p = Path(path)
    if fmt != "planetoid":
        if not p.exists():
            raise UserError(f"{path}: file not found")
        if p.is_dir():
            raise UserError(f"{path}: is a directory, expected a {fmt} file")
        readable(path)
        if p.stat().st_size == 0:
            raise located(path, "empty file")
    if fmt in ("npz", "planetoid"):
        return Probe(path, fmt, p.stat().st_size if p.exists() else 0, kind="whole")
    size = p.stat().st_size
    gz = parsing.is_gzip(path)
    members = tuple(m) if gz and (m := parsing.bgzf_members(path, size)) else None
    base = Probe(path, fmt, size, gz, members)
    if fmt == "edgelist":
        return base
    lines = _head_lines(path, gz)
    return _probe_mtx(base, lines, limit) if fmt == "mtx" else _probe_metis(base, lines, limit)


def readable(path: str | Path) -> None:
    """One line naming ``path`` when this process may not read it (permission
    denied, an unreadable mount), before any work."""
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


def _head_lines(path: str, gz: bool) -> list[bytes]:
    import gzip

    try:
        with (gzip.open(path, "rb") if gz else open(path, "rb")) as f:
            head = f.read(_HEADER_PEEK)
    except EOFError:
        raise located(path, "truncated gzip file (the compressed stream ends early)") from None
    except OSError as e:
        raise located(path, f"cannot read ({e})") from None
    return head.splitlines(keepends=True)


def _int_words(line: bytes, path: str, lineno: int, what: str) -> list[int]:
    try:
        return [int(x) for x in line.split()]
    except ValueError:
        raise located(path, f"bad {what} {line.strip()[:60]!r}", lineno) from None


def check_declared(path: str, n: int, lineno: int | None, limit: int | None = None, edges: int = 0) -> None:
    """A declared vertex count must be positive, and the declared vertices
    and edges must fit the memory budget ``limit`` (default: this machine's
    memory), checked before anything is allocated."""
    if n < 1:
        raise located(path, f"declared size {n}: a graph needs at least one vertex", lineno)
    if edges < 0:
        raise located(path, f"declared edge count {edges}: must not be negative", lineno)
    what = f"the declared size ({n:,} vertices" + (f", {edges:,} edges)" if edges else ")")
    budget.check(limit or budget.machine_memory(), budget.graph_bytes(n, edges), what, path, lineno)


def _probe_mtx(pb: Probe, lines: list[bytes], limit: int | None = None) -> Probe:
    """Matrix Market coordinate file; banner and size line optional.

    Without a banner, the first data line is a size line only if it has three
    integers and the third equals the number of entries that follow; the
    symmetry is then decided after parsing (all entries in one triangle:
    symmetric)."""
    path = pb.path
    symmetric: bool | None = None
    banner_words: list[str] = []
    i = 0
    if lines and lines[0].startswith(b"%%MatrixMarket"):
        banner_words = lines[0].decode("latin-1").lower().split()
        if len(banner_words) < 5 or banner_words[1] != "matrix" or banner_words[2] != "coordinate":
            raise located(path, "only 'matrix coordinate' Matrix Market files are supported", 1)
        symmetric = banner_words[4] in ("symmetric", "skew-symmetric", "hermitian")
        i = 1
    while i < len(lines) and (lines[i].startswith(b"%") or not lines[i].strip()):
        i += 1
    header_bytes = sum(len(x) for x in lines[:i])
    first_words = lines[i].split() if i < len(lines) else []
    banner = symmetric is not None
    n: int | None = None
    entries: int | None = None
    if first_words and (banner or len(first_words) == 3):
        words: list[int] = _int_words(lines[i], path, i + 1, "size line")
        if len(words) != 3:
            raise located(path, f"bad size line {lines[i].strip()!r}: expected 'rows columns entries'", i + 1)
        rows, cols, nnz = words
        if banner or _count_data_lines(path, pb.gzip, header_bytes + len(lines[i])) == nnz:
            if rows != cols:
                raise located(path, f"matrix is {rows} x {cols}; an adjacency matrix must be square", i + 1)
            check_declared(path, rows, i + 1, limit, nnz)
            n, entries = rows, nnz
            header_bytes += len(lines[i])
            i += 1
    field = banner_words[3] if banner and len(banner_words) > 3 else None
    kwargs: dict = {"max_id": n, "base": 1}
    if field in ("pattern", "real", "integer", "double"):  # scipy's reader parses the entries (complex: the tokenizer)
        kwargs["mtx_field"] = field
    return Probe(pb.path, pb.fmt, pb.size, pb.gzip, pb.members, i, header_bytes, n, 1,
                 None if symmetric is None else not symmetric, entries, "pairs", kwargs)


def _count_data_lines(path: str, gz: bool, offset: int) -> int:
    import gzip

    with (gzip.open(path, "rb") if gz else open(path, "rb")) as f:
        f.read(offset)
        count, last = 0, b"\n"
        while block := f.read(1 << 24):
            count += block.count(b"\n")
            last = block[-1:]
    return count + (last != b"\n")


def _probe_metis(pb: Probe, lines: list[bytes], limit: int | None = None) -> Probe:
    """METIS ``.graph``: header ``n m [fmt [ncon]]``, then one 1-based
    adjacency line per vertex; ``%`` lines are comments."""
    path = pb.path
    i = 0
    while i < len(lines) and (lines[i].startswith(b"%") or not lines[i].strip()):
        i += 1
    if i == len(lines):
        raise located(path, "no METIS header line")
    head = _int_words(lines[i], path, i + 1, "METIS header")
    if len(head) < 2:
        raise located(path, "METIS header needs 'n m'", i + 1)
    n, m = head[0], head[1]
    check_declared(path, n, i + 1, limit, 2 * m)
    fmt = f"{head[2]:03d}" if len(head) > 2 else "000"
    ncon = head[3] if len(head) > 3 else (1 if fmt[1] == "1" else 0)
    if fmt[0] == "1":
        raise located(path, "METIS vertex sizes (fmt 1xx) are not supported", i + 1)
    return Probe(pb.path, pb.fmt, pb.size, pb.gzip, pb.members, i + 1, sum(len(x) for x in lines[: i + 1]), n, 1,
                 False, m, "adjacency", {"max_id": n, "base": 1, "stride": 2 if fmt[2] == "1" else 1,
                                         "skip": ncon if fmt[1] == "1" else 0})


def bgzf_members_of(path: str | Path) -> list[int] | None:
    """Member offsets of a BGZF file, or None (for tests and diagnostics)."""
    return parsing.bgzf_members(str(path), Path(path).stat().st_size)


