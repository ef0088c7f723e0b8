"""Graph file formats, read on the Dask workers.

Formats: ``edgelist`` (SNAP / Network Repository text, optionally gzip),
``mtx`` (Matrix Market, banner and size line optional), ``metis`` (METIS
``.graph``), ``npz`` (a scipy.sparse matrix saved with ``save_npz``) and
``planetoid`` (the ``ind.<name>.*`` pickles, see :mod:`.planetoid`).

Reading is two steps, both as tasks: a small ``ingest-probe`` task looks at
the file (existence, size, compression, header, declared size), then the text
is parsed in parallel (:mod:`.parsing`). The client only ever sees the probe
and a few numbers per chunk (:class:`~.chunk_tasks.ChunkMeta`), never the edges:
:func:`submit_read` returns a :class:`RawSource` of futures.
"""

from __future__ import annotations

import logging
import math
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import UserError, located
from . import HEADERS, budget, parsing
from . import chunks as chunk_tasks
from .planetoid import read_planetoid
from .probe import FORMATS, Probe, check_declared, detect_format, probe
from .records import NodeSource, ParsedChunk, RawGraph

log = logging.getLogger(__name__)



@dataclass(frozen=True)
class ReadOptions:
    """chunk_bytes: text per parse task; max_line: longest line accepted;
    header: ``auto`` (skip a first line that is the file's size), yes, no;
    split_scheme: an OGB directory's ``split/<scheme>`` (None: the only one,
    or the dataset's); work_dir: scratch space for node data converted to
    row-addressable files (None: a temporary directory); feature_dtype:
    what those files hold (float32 or float16)."""

    chunk_bytes: int = parsing.DEFAULT_CHUNK_BYTES
    max_line: int = parsing.MAX_LINE_BYTES
    header: str = "auto"
    split_scheme: str | None = None
    work_dir: str | None = None
    feature_dtype: str = "float32"
    memory_limit: int | None = None  # bytes the build may use (None: this machine's memory)

    @property
    def limit(self) -> int:
        return self.memory_limit or budget.machine_memory()


@dataclass
class RawSource:
    """A graph read on the workers: chunk futures and what the client knows.

    Attributes
    ----------
    chunks : futures of :class:`ParsedChunk`, in file order. Ids are 0-based
        vertex numbers when ``n`` is set, else the file's labels.
    metas : one :class:`~.chunk_tasks.ChunkMeta` per chunk
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


def read_npz(path: str, limit: int | None = None) -> Whole:
    """A scipy.sparse matrix saved with ``save_npz`` (its shape and entry
    count are checked against the memory budget before anything is allocated)."""
    import scipy.sparse as sp

    try:
        with np.load(path, allow_pickle=False) as z:
            shape = tuple(int(x) for x in z["shape"]) if "shape" in z.files else None
            entries = _npz_entries(z)
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as e:
        raise located(path, f"not a scipy.sparse .npz file ({e})") from None
    if shape is None or len(shape) != 2:
        raise located(path, "not a scipy.sparse .npz file (no 2-d 'shape')")
    if shape[0] != shape[1]:
        raise located(path, f"matrix is {shape[0]} x {shape[1]}; an adjacency matrix must be square")
    check_declared(path, shape[0], None, limit, entries)
    try:
        m = sp.load_npz(path).tocoo()
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as e:
        raise located(path, f"not a scipy.sparse .npz file ({e})") from None
    return Whole(ParsedChunk(m.row.astype(np.int64), m.col.astype(np.int64), int(m.nnz)), shape[0], None)


def _npz_entries(z) -> int:
    """The entry count of a saved sparse matrix, from an array's header
    (``indices`` or ``row``): nothing is read but the header."""
    for name in ("indices", "row", "data"):
        member = f"{name}.npy"
        if member in z.zip.namelist():
            with z.zip.open(member) as f:
                version = np.lib.format.read_magic(f)
                shape = (np.lib.format.read_array_header_1_0(f) if version == (1, 0) else
                         np.lib.format.read_array_header_2_0(f))[0]
            return int(np.prod(shape)) if shape else 0
    return 0


def read_planetoid_whole(prefix: str, limit: int | None = None) -> Whole:
    try:
        raw = read_planetoid(prefix, limit)
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
    if fmt in ("ogb", "saint"):  # dataset directories (their own modules; they import this one)
        from .ogb import submit_ogb
        from .saint import submit_saint

        return (submit_ogb if fmt == "ogb" else submit_saint)(tasks, path, opts)
    pb: Probe = tasks.submit("ingest-probe", probe, path, fmt, opts.limit).result()
    if pb.kind == "whole":
        whole = tasks.submit("ingest-read", read_planetoid_whole if fmt == "planetoid" else read_npz, path,
                             opts.limit)
        n, directed, lines, notes, has_nodes = tasks.submit("ingest-info", whole_info, whole).result()
        chunk = tasks.submit("ingest-chunk", whole_chunk, whole)
        nodes = tasks.submit("ingest-nodes", whole_nodes, whole) if has_nodes else None
        return RawSource(path, [chunk], [chunk_tasks.ChunkMeta(lines, 0, lines, None)], n, 0, directed, nodes, notes)
    chunks = _submit_text(tasks, pb, opts)
    metas = _metas_within(tasks, pb, chunks, opts.limit)
    _raise_first_error(pb, metas)
    if pb.kind == "adjacency":
        chunks, metas = _shift_adjacency(tasks, pb, chunks, metas)
    raw = RawSource(path, chunks, metas, pb.n, pb.base, pb.directed)
    if sum(m.edges for m in metas) == 0:
        raise located(path, "no edges found (only comments or blank lines)" if fmt == "edgelist" else "no entries found")
    if fmt == "edgelist":
        _header_line(tasks, raw, opts.header)
    if fmt == "mtx":
        _mtx_after(tasks, pb, raw, opts.limit)
    return raw


def _submit_text(tasks, pb: Probe, opts: ReadOptions) -> list:
    kind, kw = pb.kind, pb.kwargs
    if not pb.gzip:
        return [tasks.submit("ingest-parse", parsing.parse_range, r, kind, opts.max_line, kw, index=i)
                for i, r in enumerate(parsing.byte_ranges(pb.path, pb.header_bytes, pb.size, opts.chunk_bytes))]
    if pb.members is None or pb.header_bytes:
        # one worker streams the file; its blocks become chunks
        blocks = tasks.submit("ingest-gzip", parsing.parse_gzip, pb.path, pb.header_bytes, opts.chunk_bytes,
                              opts.max_line, kind, kw, opts.limit)
        count = tasks.submit("ingest-gzip-count", chunk_tasks.count, blocks).result()
        return [tasks.submit("ingest-block", chunk_tasks.nth, blocks, i, index=i) for i in range(count)]
    starts = list(pb.members) + [pb.size]
    per = max(1, opts.chunk_bytes // max(1, pb.size // max(1, len(pb.members))) // 4)  # ~4x compression
    reach = math.ceil(opts.max_line / 65536) + 1  # members that can hold the rest of a line
    groups = list(range(0, len(pb.members), per))
    return [tasks.submit("ingest-bgzf", parsing.parse_bgzf, pb.path, starts[max(g - 1, 0)], starts[g],
                         starts[min(g + per, len(starts) - 1)], starts[min(g + per + reach, len(starts) - 1)],
                         opts.max_line, kind, kw, index=i)
            for i, g in enumerate(groups)]


def _metas_within(tasks, pb: Probe, chunks: list, limit: int) -> list:
    """The chunks' metas, gathered as they complete; once the edges parsed so
    far cannot fit the memory budget, the rest is dropped and the build stops
    with one line (the parsed chunks never pile up beyond the budget)."""
    from distributed import as_completed

    futures = [tasks.submit("ingest-meta", chunk_tasks.meta, c, index=i) for i, c in enumerate(chunks)]
    cap = budget.max_edges(limit) or 0
    seen = 0
    for f in as_completed(futures):
        m = f.result()
        seen += m.edges
        if m.error is None and seen > cap:
            for other in futures + chunks:
                other.release()
            raise located(pb.path, budget.edges_over(cap, limit))
    return tasks.gather(futures)


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
    chunks = [tasks.submit("ingest-shift", chunk_tasks.shift_vertices, c, int(s), index=i)
              for i, (c, s) in enumerate(zip(chunks, shifts))]
    top = max((m.max_a for m in tasks.gather([tasks.submit("ingest-meta", chunk_tasks.meta, c, index=i)
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
        raw.chunks[i] = tasks.submit("ingest-header", chunk_tasks.drop_first, raw.chunks[i])
        m = raw.metas[i]
        raw.metas[i] = chunk_tasks.ChunkMeta(m.n_lines, m.n_comments, m.edges - 1, None, m.first, m.max_rest, m.max_a,
                                        m.lower, m.upper, m.max_rest)


def _mtx_after(tasks, pb: Probe, raw: RawSource, limit: int | None = None) -> None:
    edges = raw.lines
    if pb.entries is not None and edges != pb.entries:
        raise located(pb.path, f"the size line declares {pb.entries:,} entries but the file has {edges:,} "
                               "(a truncated or corrupt file?)")
    if raw.n is None:
        raw.n = max(m.max_id for m in raw.metas if m.edges) + 1
        check_declared(pb.path, raw.n, None, limit, raw.lines)
    if raw.directed is None and (all(m.lower for m in raw.metas) or all(m.upper for m in raw.metas)):
        log.info("%s: no banner and all entries in one triangle: reading as symmetric", pb.path)
        raw.directed = False


def _whole_array(a):
    """An in-memory array of a node array (a RowFile is read whole: tests and small graphs only)."""
    return a if a is None or isinstance(a, np.ndarray) else a[0:a.shape[0]]


def gather_raw(tasks, raw: RawSource) -> RawGraph:
    """Everything a RawSource holds, on the client (tests and small graphs only)."""
    chunks = tasks.gather(raw.chunks)
    nodes = raw.nodes.result() if raw.nodes is not None else None
    if nodes is not None:
        nodes = NodeSource(_whole_array(nodes.features) if nodes.features is not None else None,
                           _whole_array(nodes.labels) if nodes.labels is not None else None, nodes.masks,
                           nodes.classes, nodes.label_kind)
    src = np.concatenate([c.a for c in chunks]) if chunks else np.zeros(0, np.int64)
    dst = np.concatenate([c.b for c in chunks]) if chunks else np.zeros(0, np.int64)
    return RawGraph(src=src, dst=dst, n=raw.n, directed=raw.directed, source=raw.name, lines=int(src.size),
                    node_ids=None if raw.n is None else np.arange(raw.n, dtype=np.int64) + raw.base,
                    features=None if nodes is None else nodes.features, labels=None if nodes is None else nodes.labels,
                    masks=None if nodes is None else nodes.masks, notes=list(raw.notes))


def read(path: str | Path, fmt: str | None, client, chunk_bytes: int = parsing.DEFAULT_CHUNK_BYTES,
         header: str = "auto", split_scheme: str | None = None, memory_limit: int | None = None) -> RawGraph:
    """Read ``path`` and bring its edges (and node data) to the client (tests and small graphs)."""
    import tempfile

    from ..runtime.client import Tasks

    tasks = Tasks(client)
    with tempfile.TemporaryDirectory(prefix="shgcn-read-") as work:
        try:
            opts = ReadOptions(chunk_bytes=chunk_bytes, header=header, split_scheme=split_scheme, work_dir=work,
                               memory_limit=memory_limit)
            return gather_raw(tasks, submit_read(tasks, str(path), fmt, opts))
        finally:
            tasks.release()
