"""Chunked parallel parsing of text graph files, and cleaning into CSR.

A text file is cut into byte ranges that end on line boundaries; each range is
one Dask task (``ingest-parse``) that tokenizes it with numpy and returns
arrays. Gzip files cannot be split by byte offset, so they are decompressed as
a stream on the client and each block of whole lines becomes a task.
Errors come back from the tasks as data with a chunk-local line number, so
the message can name the global line of the file.
"""

from __future__ import annotations

import gzip
import logging
import os
import uuid
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ._tokens import ChunkError, Tokens, tokenize
from .errors import UserError, located
from .graph import Graph, RawGraph

log = logging.getLogger(__name__)

DEFAULT_CHUNK_BYTES = 16 * 2**20


@dataclass(frozen=True)
class ByteRange:
    """Lines whose first byte lies in ``[start, end)`` of ``path``."""

    path: str
    start: int
    end: int


@dataclass
class ParsedChunk:
    a: np.ndarray  # (E,) int64: source vertex (pairs) or chunk-local vertex line (adjacency)
    b: np.ndarray  # (E,) int64: target vertex
    n_lines: int
    n_comments: int
    error: ChunkError | None = None


def is_gzip(path: str | Path) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == b"\x1f\x8b"


def open_text(path: str | Path):
    """Open a possibly gzip-compressed file for binary reading."""
    return gzip.open(path, "rb") if is_gzip(path) else open(path, "rb")


def read_range(r: ByteRange) -> bytes:
    """Bytes of the whole lines owned by ``r``."""
    with open(r.path, "rb") as f:
        pos = r.start
        if r.start > 0:
            f.seek(r.start - 1)
            if f.read(1) != b"\n":
                f.readline()  # this line belongs to the previous range
                pos = f.tell()
        if pos >= r.end:
            return b""
        f.seek(pos)
        data = f.read(r.end - pos)
        if data and not data.endswith(b"\n"):
            data += f.readline()
        return data


def byte_ranges(path: str, offset: int, chunk_bytes: int) -> list[ByteRange]:
    size = os.path.getsize(path)
    cuts = list(range(offset, size, max(1, chunk_bytes))) + [size]
    return [ByteRange(path, a, b) for a, b in zip(cuts[:-1], cuts[1:])] or [ByteRange(path, offset, size)]


def gzip_blocks(path: str, offset: int, chunk_bytes: int) -> Iterator[bytes]:
    """Decompress ``path`` as a stream and yield blocks of whole lines,
    skipping the first ``offset`` decompressed bytes (the header)."""
    try:
        with gzip.open(path, "rb") as f:
            f.read(offset)
            rest = b""
            while True:
                block = f.read(chunk_bytes)
                if not block:
                    break
                block = rest + block
                cut = block.rfind(b"\n") + 1
                if cut == 0:
                    rest = block
                    continue
                rest = block[cut:]
                yield block[:cut]
            if rest:
                yield rest
    except EOFError:
        raise located(path, "truncated gzip file (the compressed stream ends early)") from None
    except (gzip.BadGzipFile, zlib.error) as e:
        raise located(path, f"corrupt gzip file ({e})") from None


def parse_pairs(data: bytes | ByteRange, max_id: int | None = None, base: int = 0) -> ParsedChunk:
    """Parse lines ``u v [ignored...]`` into two id arrays (``ingest-parse`` task)."""
    if isinstance(data, ByteRange):
        data = read_range(data)
    t = tokenize(data, max_cols=2)
    if t.error:
        return ParsedChunk(_EMPTY, _EMPTY, t.n_lines, t.comment_lines.size, t.error)
    first = t.col == 0
    second = t.col == 1
    lone = np.flatnonzero(first & ~np.r_[second[1:], False])
    if lone.size:
        return ParsedChunk(_EMPTY, _EMPTY, t.n_lines, t.comment_lines.size,
                           ChunkError(int(t.line[lone[0]]), "expected two vertex ids, found one"))
    a, b = t.values[first], t.values[second]
    err = _check_range(t, a, b, first, max_id, base)
    return ParsedChunk(a - base, b - base, t.n_lines, t.comment_lines.size, err)


def parse_adjacency(data: bytes | ByteRange, max_id: int | None, base: int, stride: int, skip: int) -> ParsedChunk:
    """Parse METIS-style adjacency lines (``ingest-parse`` task).

    Line k (comments excluded) lists the neighbours of chunk-local vertex k.
    ``skip`` leading tokens (vertex weights) are dropped, then every
    ``stride``-th token is a neighbour (``stride`` 2 when edge weights follow).
    """
    if isinstance(data, ByteRange):
        data = read_range(data)
    t = tokenize(data)
    if t.error:
        return ParsedChunk(_EMPTY, _EMPTY, t.n_lines, t.comment_lines.size, t.error)
    keep = (t.col >= skip) & ((t.col - skip) % stride == 0)
    line = t.line[keep]
    # a vertex's number is its line minus the comment lines above it
    vertex = line - np.searchsorted(t.comment_lines, line)
    nbr = t.values[keep]
    err = None
    if max_id is not None:
        bad = np.flatnonzero((nbr < base) | (nbr >= max_id + base))
        if bad.size:
            err = ChunkError(int(line[bad[0]]), f"neighbour id {nbr[bad[0]]} outside 1..{max_id}")
    return ParsedChunk(vertex, nbr - base, t.n_lines, t.comment_lines.size, err)


_EMPTY = np.zeros(0, np.int64)


def _check_range(t: Tokens, a, b, first, max_id, base) -> ChunkError | None:
    lo = min(a.min(initial=base), b.min(initial=base))
    hi = max(a.max(initial=base), b.max(initial=base))
    if lo >= base and (max_id is None or hi < max_id + base):
        return None
    lines = t.line[first]
    bad = np.flatnonzero((a < base) | (b < base) | ((a >= max_id + base) | (b >= max_id + base) if max_id is not None else False))
    i = bad[0]
    val = a[i] if (a[i] < base or (max_id is not None and a[i] >= max_id + base)) else b[i]
    if val < base:
        return ChunkError(int(lines[i]), f"id {val} below {base} in a {base}-based file")
    return ChunkError(int(lines[i]), f"id {val} beyond the declared size {max_id}")


@dataclass(frozen=True)
class Parser:
    """Where and how text is parsed: the Dask client, bytes per task, and
    whether to show a progress bar."""

    client: object
    chunk_bytes: int = DEFAULT_CHUNK_BYTES
    progress: bool = False

    def run(self, path: str, parse: Callable[..., ParsedChunk], **kwargs):
        return parse_text(self.client, path, parse, chunk_bytes=self.chunk_bytes, progress=self.progress, **kwargs)


def parse_text(
    client,
    path: str,
    parse: Callable[..., ParsedChunk],
    *,
    header_lines: int = 0,
    header_bytes: int = 0,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    progress: bool = False,
    **kwargs,
) -> tuple[np.ndarray, np.ndarray, list[ParsedChunk]]:
    """Run ``parse`` over the chunks of ``path`` as Dask tasks.

    Returns the concatenated ``a`` and ``b`` arrays, with chunk-local vertex
    lines of adjacency formats already shifted to global vertex numbers.
    """
    name = f"ingest-parse-{uuid.uuid4().hex[:8]}"  # unique: a key names one result in the cluster
    if is_gzip(path):
        # decompression is serial; each block of lines is parsed as soon as it exists
        futures = [client.submit(parse, client.scatter(block, hash=False), key=(name, i), **kwargs)
                   for i, block in enumerate(gzip_blocks(path, header_bytes, chunk_bytes))]
    else:
        futures = [client.submit(parse, r, key=(name, i), **kwargs)
                   for i, r in enumerate(byte_ranges(path, header_bytes, chunk_bytes))]
    if progress:
        from distributed import progress as show
        show(futures, notebook=False)
        print(flush=True)
    chunks: list[ParsedChunk] = client.gather(futures)
    line0 = header_lines
    for c in chunks:
        if c.error is not None:
            raise located(path, c.error.message, line=line0 + c.error.line + 1)
        line0 += c.n_lines
    if parse is parse_adjacency:
        shift = np.cumsum([0] + [c.n_lines - c.n_comments for c in chunks[:-1]])
        a = np.concatenate([c.a + s for c, s in zip(chunks, shift)]) if chunks else _EMPTY
    else:
        a = np.concatenate([c.a for c in chunks]) if chunks else _EMPTY
    b = np.concatenate([c.b for c in chunks]) if chunks else _EMPTY
    return a, b, chunks


# ---------------------------------------------------------------- cleaning

def relabel(raw: RawGraph) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Map the file's ids to 0..n-1.

    Returns ``(src, dst, node_ids)``. With a declared size the ids are kept
    (isolated vertices included); otherwise the ids that occur are numbered
    in increasing order.
    """
    if raw.n is not None:
        ids = raw.node_ids if raw.node_ids is not None else np.arange(raw.n, dtype=np.int64)
        return raw.src, raw.dst, ids
    both = np.concatenate([raw.src, raw.dst])
    if both.size == 0:
        raise UserError(f"{raw.source}: no edges found (empty file?)")
    if both.min() < 0:
        raise UserError(f"{raw.source}: negative vertex id {both.min()}")
    top = int(both.max())
    if top <= 4 * both.size + 1024:  # dense enough for a direct lookup table
        present = np.zeros(top + 1, dtype=bool)
        present[both] = True
        node_ids = np.flatnonzero(present).astype(np.int64)
        new = np.cumsum(present, dtype=np.int64) - 1
        return new[raw.src], new[raw.dst], node_ids
    node_ids, inv = np.unique(both, return_inverse=True)
    return inv[: raw.src.size].astype(np.int64), inv[raw.src.size:].astype(np.int64), node_ids


def to_graph(raw: RawGraph, directed: bool) -> Graph:
    """Relabel, drop self loops and duplicates, symmetrize if undirected, CSR.

    Parameters
    ----------
    raw : RawGraph
    directed : bool
        Keep edge direction; otherwise every edge is stored both ways.
    """
    src, dst, node_ids = relabel(raw)
    n = node_ids.size
    if n == 0:
        raise UserError(f"{raw.source}: the graph has no vertices")
    loops = src == dst
    n_loops = int(loops.sum())
    src, dst = src[~loops], dst[~loops]
    if not directed:
        src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
    key = np.unique(src * n + dst)  # sorted by (row, column): CSR order
    rows, cols = np.divmod(key, n)
    idx_dtype = np.int32 if max(n, key.size) < 2**31 else np.int64
    indptr = np.zeros(n + 1, dtype=idx_dtype)
    np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
    adj = sp.csr_matrix((np.ones(key.size, np.float32), cols.astype(idx_dtype), indptr), shape=(n, n))
    adj.has_sorted_indices = True
    kept = key.size if directed else key.size // 2
    stats = {
        "lines": int(raw.lines),
        "self_loops": n_loops,
        "duplicates": int(raw.lines - n_loops - kept) if directed else None,
        "nodes": int(n),
        "edges": int(kept),
    }
    log.info("%s: %d nodes, %d %s edges (%d self loops removed)", raw.source, n, kept,
             "directed" if directed else "undirected", n_loops)
    return Graph(adj=adj, directed=directed, node_ids=node_ids, source=raw.source,
                 features=raw.features, labels=raw.labels, masks=raw.masks, stats=stats, notes=list(raw.notes))
