"""Graph file formats, read on the Dask workers.

Formats: ``edgelist`` (SNAP / Network Repository text, optionally gzip),
``mtx`` (Matrix Market, banner and size line optional), ``metis`` (METIS
``.graph``), ``npz`` (a scipy.sparse matrix saved with ``save_npz``) and
``planetoid`` (the ``ind.<name>.*`` pickles, see :mod:`.planetoid`).

Reading is two steps, both as tasks: a small ``ingest-probe`` task looks at
the file (existence, size, compression, header, declared size), then the text
is parsed in parallel (:mod:`.ingest`). The client only ever sees the probe
and a few numbers per chunk (:class:`~.ingest.ChunkMeta`), never the edges:
:func:`submit_read` returns a :class:`RawSource` of futures.
"""

from __future__ import annotations

import logging
import math
import os
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import ingest
from .errors import UserError, located
from .graph import NodeSource, ParsedChunk, RawGraph
from .planetoid import load_pickle, read_planetoid  # noqa: F401  (load_pickle: re-exported)

log = logging.getLogger(__name__)

FORMATS = ("edgelist", "mtx", "metis", "npz", "planetoid")
HEADERS = ("auto", "yes", "no")
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
    if name.startswith("ind.") or Path(path).is_dir():
        return "planetoid"
    if name.endswith((".txt", ".edges", ".el", ".tsv", ".edgelist", ".csv")) or "." not in name:
        return "edgelist"
    raise UserError(f"{path}: unknown format; pass --format, one of {', '.join(FORMATS)}")


@dataclass(frozen=True)
class ReadOptions:
    """chunk_bytes: text per parse task; max_line: longest line accepted;
    header: ``auto`` (skip a first line that is the file's size), yes, no."""

    chunk_bytes: int = ingest.DEFAULT_CHUNK_BYTES
    max_line: int = ingest.MAX_LINE_BYTES
    header: str = "auto"


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


@dataclass
class RawSource:
    """A graph read on the workers: chunk futures and what the client knows.

    Attributes
    ----------
    chunks : futures of :class:`ParsedChunk`, in file order. Ids are 0-based
        vertex numbers when ``n`` is set, else the file's labels.
    metas : one :class:`~.ingest.ChunkMeta` per chunk
    n : declared vertex count, or None (ids are relabelled)
    base : file label of vertex 0 when ``n`` is set
    directed : what the file says about direction, or None
    nodes : future of a :class:`NodeSource` (features, labels, split), or None
    """

    name: str
    chunks: list
    metas: list
    n: int | None
    base: int = 0
    directed: bool | None = None
    nodes: Any = None
    notes: list[str] = field(default_factory=list)

    @property
    def lines(self) -> int:
        return sum(m.edges for m in self.metas)


# ------------------------------------------------------------------- probes (tasks)

def probe(path: str, fmt: str) -> Probe:
    """``ingest-probe`` task: check the file and read its header."""
    p = Path(path)
    if fmt != "planetoid":
        if not p.exists():
            raise UserError(f"{path}: file not found")
        if p.is_dir():
            raise UserError(f"{path}: is a directory, expected a {fmt} file")
        if p.stat().st_size == 0:
            raise located(path, "empty file")
    if fmt in ("npz", "planetoid"):
        return Probe(path, fmt, p.stat().st_size if p.exists() else 0, kind="whole")
    size = p.stat().st_size
    gz = ingest.is_gzip(path)
    members = tuple(m) if gz and (m := ingest.bgzf_members(path, size)) else None
    base = Probe(path, fmt, size, gz, members)
    if fmt == "edgelist":
        return base
    lines = _head_lines(path, gz)
    return _probe_mtx(base, lines) if fmt == "mtx" else _probe_metis(base, lines)


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


def _check_declared(path: str, n: int, lineno: int | None) -> None:
    """A declared vertex count must be positive and fit this machine's memory
    (8 bytes per vertex for the row pointers alone), checked before anything
    is allocated."""
    if n < 1:
        raise located(path, f"declared size {n}: a graph needs at least one vertex", lineno)
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    if 8 * n > memory:
        raise located(path, f"declared size {n:,} vertices needs {8 * n / 2**30:,.0f} GiB for its row pointers "
                            f"alone; this machine has {memory / 2**30:,.0f} GiB", lineno)


def _probe_mtx(pb: Probe, lines: list[bytes]) -> Probe:
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
            _check_declared(path, rows, i + 1)
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


def _probe_metis(pb: Probe, lines: list[bytes]) -> Probe:
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
    _check_declared(path, n, i + 1)
    fmt = f"{head[2]:03d}" if len(head) > 2 else "000"
    ncon = head[3] if len(head) > 3 else (1 if fmt[1] == "1" else 0)
    if fmt[0] == "1":
        raise located(path, "METIS vertex sizes (fmt 1xx) are not supported", i + 1)
    return Probe(pb.path, pb.fmt, pb.size, pb.gzip, pb.members, i + 1, sum(len(x) for x in lines[: i + 1]), n, 1,
                 False, m, "adjacency", {"max_id": n, "base": 1, "stride": 2 if fmt[2] == "1" else 1,
                                         "skip": ncon if fmt[1] == "1" else 0})


def bgzf_members_of(path: str | Path) -> list[int] | None:
    """Member offsets of a BGZF file, or None (for tests and diagnostics)."""
    return ingest.bgzf_members(str(path), Path(path).stat().st_size)


# -------------------------------------------------------- whole-file readers (tasks)

@dataclass
class Whole:
    """A graph read in one task: its edges (0-based), size and node data."""

    chunk: ParsedChunk
    n: int
    directed: bool | None
    base: int = 0
    nodes: NodeSource | None = None
    notes: list[str] = field(default_factory=list)


def read_npz(path: str) -> Whole:
    """A scipy.sparse matrix saved with ``save_npz`` (its size is checked
    before anything is allocated)."""
    import scipy.sparse as sp

    try:
        with np.load(path, allow_pickle=False) as z:
            shape = tuple(int(x) for x in z["shape"]) if "shape" in z.files else None
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as e:
        raise located(path, f"not a scipy.sparse .npz file ({e})") from None
    if shape is None or len(shape) != 2:
        raise located(path, "not a scipy.sparse .npz file (no 2-d 'shape')")
    if shape[0] != shape[1]:
        raise located(path, f"matrix is {shape[0]} x {shape[1]}; an adjacency matrix must be square")
    _check_declared(path, shape[0], None)
    try:
        m = sp.load_npz(path).tocoo()
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as e:
        raise located(path, f"not a scipy.sparse .npz file ({e})") from None
    return Whole(ParsedChunk(m.row.astype(np.int64), m.col.astype(np.int64), int(m.nnz)), shape[0], None)


def read_planetoid_whole(prefix: str) -> Whole:
    try:
        raw = read_planetoid(prefix)
    except (TypeError, ValueError, IndexError, KeyError, AttributeError) as e:
        raise located(prefix, f"not the Planetoid layout this reader knows ({type(e).__name__}: {e})") from None
    return Whole(ParsedChunk(raw.src, raw.dst, raw.lines), int(raw.n or 0), raw.directed, 0,
                 NodeSource(raw.features, raw.labels, raw.masks), list(raw.notes))


def whole_chunk(w: Whole) -> ParsedChunk:
    return w.chunk


def whole_nodes(w: Whole) -> NodeSource | None:
    return w.nodes


def whole_info(w: Whole) -> tuple[int, bool | None, int, list[str], bool]:
    return w.n, w.directed, w.chunk.n_lines, w.notes, w.nodes is not None


# ----------------------------------------------------------------- client side

def submit_read(tasks, path: str, fmt: str | None, opts: ReadOptions = ReadOptions()) -> RawSource:
    """Read ``path`` on the workers; returns futures and a few numbers.
    Raises :class:`UserError` (one line, naming file and line) for bad input."""
    if fmt is None:
        fmt = detect_format(path)
    if fmt not in FORMATS:
        raise UserError(f"unknown format {fmt!r}; known formats: {', '.join(FORMATS)}")
    if opts.header not in HEADERS:
        raise UserError(f"--header {opts.header!r}: choose from {', '.join(HEADERS)}")
    pb: Probe = tasks.submit("ingest-probe", probe, path, fmt).result()
    if pb.kind == "whole":
        whole = tasks.submit("ingest-read", read_planetoid_whole if fmt == "planetoid" else read_npz, path)
        n, directed, lines, notes, has_nodes = tasks.submit("ingest-info", whole_info, whole).result()
        chunk = tasks.submit("ingest-chunk", whole_chunk, whole)
        nodes = tasks.submit("ingest-nodes", whole_nodes, whole) if has_nodes else None
        return RawSource(path, [chunk], [ingest.ChunkMeta(lines, 0, lines, None)], n, 0, directed, nodes, notes)
    chunks = _submit_text(tasks, pb, opts)
    metas = tasks.gather([tasks.submit("ingest-meta", ingest.meta, c, index=i) for i, c in enumerate(chunks)])
    _raise_first_error(pb, metas)
    if pb.kind == "adjacency":
        chunks, metas = _shift_adjacency(tasks, pb, chunks, metas)
    raw = RawSource(path, chunks, metas, pb.n, pb.base, pb.directed)
    if sum(m.edges for m in metas) == 0:
        raise located(path, "no edges found (only comments or blank lines)" if fmt == "edgelist" else "no entries found")
    if fmt == "edgelist":
        _header_line(tasks, raw, opts.header)
    if fmt == "mtx":
        _mtx_after(tasks, pb, raw)
    return raw


def _submit_text(tasks, pb: Probe, opts: ReadOptions) -> list:
    kind, kw = pb.kind, pb.kwargs
    if not pb.gzip:
        return [tasks.submit("ingest-parse", ingest.parse_range, r, kind, opts.max_line, kw, index=i)
                for i, r in enumerate(ingest.byte_ranges(pb.path, pb.header_bytes, pb.size, opts.chunk_bytes))]
    if pb.members is None or pb.header_bytes:
        # one worker streams the file; its blocks become chunks
        blocks = tasks.submit("ingest-gzip", ingest.parse_gzip, pb.path, pb.header_bytes, opts.chunk_bytes,
                              opts.max_line, kind, kw)
        count = tasks.submit("ingest-gzip-count", ingest.count, blocks).result()
        return [tasks.submit("ingest-block", ingest.nth, blocks, i, index=i) for i in range(count)]
    starts = list(pb.members) + [pb.size]
    per = max(1, opts.chunk_bytes // max(1, pb.size // max(1, len(pb.members))) // 4)  # ~4x compression
    reach = math.ceil(opts.max_line / 65536) + 1  # members that can hold the rest of a line
    groups = list(range(0, len(pb.members), per))
    return [tasks.submit("ingest-bgzf", ingest.parse_bgzf, pb.path, starts[max(g - 1, 0)], starts[g],
                         starts[min(g + per, len(starts) - 1)], starts[min(g + per + reach, len(starts) - 1)],
                         opts.max_line, kind, kw, index=i)
            for i, g in enumerate(groups)]


def _raise_first_error(pb: Probe, metas: list) -> None:
    line0 = pb.header_lines
    for m in metas:
        if m.error is not None:
            if m.error.line < 0:
                raise located(pb.path, m.error.message)
            raise located(pb.path, m.error.message, line=line0 + m.error.line + 1)
        line0 += m.n_lines


def _shift_adjacency(tasks, pb: Probe, chunks: list, metas: list) -> tuple[list, list]:
    """Chunk-local vertex lines -> vertex numbers; the file's size checks."""
    shifts = np.cumsum([0] + [m.n_lines - m.n_comments for m in metas[:-1]])
    vertex_lines = sum(m.n_lines - m.n_comments for m in metas)
    if vertex_lines < (pb.n or 0):
        raise located(pb.path, f"header declares {pb.n} vertices but the file has {vertex_lines} adjacency lines")
    chunks = [tasks.submit("ingest-shift", ingest.shift_vertices, c, int(s), index=i)
              for i, (c, s) in enumerate(zip(chunks, shifts))]
    top = max((m.max_a for m in tasks.gather([tasks.submit("ingest-meta", ingest.meta, c, index=i)
                                              for i, c in enumerate(chunks)]) if m.edges), default=-1)
    if pb.n is not None and top >= pb.n:
        raise located(pb.path, f"more adjacency lines than the {pb.n} vertices in the header",
                      pb.header_lines + 1 + int(top))
    edges = sum(m.edges for m in metas)
    if pb.entries is not None and edges != 2 * pb.entries:
        log.warning("%s: header declares %d edges, adjacency lists hold %d entries", pb.path, pb.entries, edges)
    return chunks, metas


def _header_line(tasks, raw: RawSource, header: str) -> None:
    """A first line of two integers that states the file's size (vertices,
    then edges or twice the edges) is a header, not an edge (``auto``)."""
    if header == "no":
        return
    i = next(k for k, m in enumerate(raw.metas) if m.edges)
    first = raw.metas[i].first
    if first is None:
        return
    top = max([raw.metas[i].max_rest] + [m.max_id for k, m in enumerate(raw.metas) if m.edges and k != i])
    lines = raw.lines - 1
    looks = first[1] in (lines, 2 * lines) and first[0] >= top
    if header == "yes" or looks:
        if header == "auto":
            log.warning("%s: the first line %d %d is the file's size (vertices, edges), not an edge: skipped "
                        "(--header no reads it as an edge)", raw.name, *first)
        raw.chunks[i] = tasks.submit("ingest-header", ingest.drop_first, raw.chunks[i])
        m = raw.metas[i]
        raw.metas[i] = ingest.ChunkMeta(m.n_lines, m.n_comments, m.edges - 1, None, m.first, m.max_rest, m.max_a,
                                        m.lower, m.upper, m.max_rest)


def _mtx_after(tasks, pb: Probe, raw: RawSource) -> None:
    edges = raw.lines
    if pb.entries is not None and edges != pb.entries:
        raise located(pb.path, f"the size line declares {pb.entries:,} entries but the file has {edges:,} "
                               "(a truncated or corrupt file?)")
    if raw.n is None:
        raw.n = max(m.max_id for m in raw.metas if m.edges) + 1
        _check_declared(pb.path, raw.n, None)
    if raw.directed is None and (all(m.lower for m in raw.metas) or all(m.upper for m in raw.metas)):
        log.info("%s: no banner and all entries in one triangle: reading as symmetric", pb.path)
        raw.directed = False


def gather_raw(tasks, raw: RawSource) -> RawGraph:
    """Everything a RawSource holds, on the client (tests and small graphs only)."""
    chunks = tasks.gather(raw.chunks)
    nodes = raw.nodes.result() if raw.nodes is not None else None
    src = np.concatenate([c.a for c in chunks]) if chunks else np.zeros(0, np.int64)
    dst = np.concatenate([c.b for c in chunks]) if chunks else np.zeros(0, np.int64)
    return RawGraph(src=src, dst=dst, n=raw.n, directed=raw.directed, source=raw.name, lines=int(src.size),
                    node_ids=None if raw.n is None else np.arange(raw.n, dtype=np.int64) + raw.base,
                    features=None if nodes is None else nodes.features, labels=None if nodes is None else nodes.labels,
                    masks=None if nodes is None else nodes.masks, notes=list(raw.notes))


def read(path: str | Path, fmt: str | None, client, chunk_bytes: int = ingest.DEFAULT_CHUNK_BYTES,
         header: str = "auto") -> RawGraph:
    """Read ``path`` and bring its edges to the client (tests and small graphs)."""
    from .cluster import Tasks

    tasks = Tasks(client)
    try:
        return gather_raw(tasks, submit_read(tasks, str(path), fmt, ReadOptions(chunk_bytes=chunk_bytes, header=header)))
    finally:
        tasks.release()
