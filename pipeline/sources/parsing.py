"""Parsing text graph files on the workers, and cleaning edges into row blocks.

Text is cut into tasks that each own whole lines:

- a plain file: byte ranges (``parse-range`` tasks), read by the workers;
- a BGZF / multi-member gzip whose members carry their size: groups of
  members, decompressed in parallel (``parse-bgzf``);
- any other gzip: one ``parse-gzip`` task streams it (bounded memory) and
  returns its blocks; the client never reads the file.

Each task parses with pyarrow (the fast path); when pyarrow refuses a chunk
(comments in the middle, mixed separators, a bad token), the chunk is parsed
again by the vectorized tokenizer of :mod:`.tokens`, which finds the first
bad line. Errors come back as data with a chunk-local line number, and the
client names the global line of the file (``file:line: message``).

A line longer than ``max_line`` bytes ends the parse with an error, so a
binary file or a gzip bomb never makes a task hold more than about
``chunk_bytes + max_line`` bytes of text.
"""

from __future__ import annotations

import gzip
import io
import logging
import struct
import threading
import zlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .budget import edges_over, max_edges
from .records import ParsedChunk
from .tokens import ChunkError, Tokens, count_lines, tokenize

log = logging.getLogger(__name__)

DEFAULT_CHUNK_BYTES = 16 * 2**20
MAX_LINE_BYTES = 2**20
_EMPTY = np.zeros(0, np.int64)


@dataclass(frozen=True)
class ByteRange:
    """Lines whose first byte lies in ``[start, end)`` of ``path``."""

    path: str
    start: int
    end: int


@dataclass(frozen=True)
class Members:
    """BGZF members by file offset: a group's own ``[start, stop)``, ``prev`` the member before it (``prev ==
    start``: the first group) and ``more``, the end of the members its last line may reach into."""

    prev: int
    start: int
    stop: int
    more: int


def is_gzip(path: str) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == b"\x1f\x8b"


def byte_ranges(path: str, offset: int, size: int, chunk_bytes: int) -> list[ByteRange]:
    cuts = list(range(offset, size, max(1, chunk_bytes))) + [size]
    return [ByteRange(path, a, b) for a, b in zip(cuts[:-1], cuts[1:])] or [ByteRange(path, offset, size)]


def _to_newline(f, limit: int) -> tuple[bytes, bool]:
    """Read up to and including the next newline, at most ``limit`` bytes;
    returns (bytes, found)."""
    out = b""
    while len(out) <= limit:
        part = f.readline(min(65536, limit + 1 - len(out)))
        if not part:
            return out, True  # end of file ends the line
        out += part
        if part.endswith(b"\n"):
            return out, True
    return out, False


def read_range(r: ByteRange, max_line: int = MAX_LINE_BYTES) -> tuple[bytes, ChunkError | None]:
    """Bytes of the whole lines owned by ``r`` (bounded: a line longer than
    ``max_line`` is an error, never a read of the rest of the file)."""
    with open(r.path, "rb") as f:
        pos = r.start
        if r.start > 0:
            f.seek(r.start - 1)
            if f.read(1) != b"\n":
                skipped, found = _to_newline(f, max_line)  # this line belongs to the previous range
                if not found:
                    return b"", None  # the previous range reports the long line
                pos = r.start + len(skipped)
        if pos >= r.end:
            return b"", None
        f.seek(pos)
        data = f.read(r.end - pos)
        if data and not data.endswith(b"\n"):
            tail, found = _to_newline(f, max_line)
            data += tail
            if not found:
                return data, _long_line(data, max_line)
    return data, None


def _long_line(data: bytes, max_line: int) -> ChunkError:
    return ChunkError(count_lines(data) - 1, f"line longer than {max_line:,} bytes (a binary or corrupt file?)")


# ------------------------------------------------------------------ parsers

def parse_pairs(data: bytes, max_id: int | None = None, base: int = 0, mtx_field: str | None = None) -> ParsedChunk:
    """Lines ``u v [ignored...]`` -> two id arrays (shifted by ``base``).
    Fast path: scipy's Matrix Market reader for the entries of a file with a
    banner (``mtx_field``: its field, e.g. ``pattern`` or ``real``), pyarrow
    for the rest; on any refusal, the tokenizer (which names the line)."""
    fast = _fast_mtx(data, max_id, mtx_field) if mtx_field and max_id else _fast_pairs(data, max_id, base)
    if fast is not None:
        return fast
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


def _leading_comments(data: bytes) -> tuple[int, int]:
    """(byte offset, count) of the comment and blank lines that open ``data``."""
    pos = lines = 0
    while pos < len(data) and data[pos:pos + 1] in (b"#", b"%", b"\n", b"\r"):
        nl = data.find(b"\n", pos)
        pos = len(data) if nl < 0 else nl + 1
        lines += 1
    return pos, lines


_MMREAD = threading.Lock()  # one mmread at a time per process: it has its own thread pool, and two tasks calling it
#                              at once crashed scipy 1.12 (a segfault in a threaded worker)


def _fast_mtx(data: bytes, n: int, field: str) -> ParsedChunk | None:
    """Entries of a Matrix Market file, parsed by ``scipy.io.mmread`` (its C++
    reader) behind a banner and size line written for this chunk alone
    ("general": the symmetry is the build's business). None when it refuses."""
    import scipy.io

    lines = count_lines(data)
    if lines == 0:
        return ParsedChunk(_EMPTY, _EMPTY, 0, 0)
    if b"%" in data:  # comments between entries: the tokenizer counts them
        return None
    head = f"%%MatrixMarket matrix coordinate {field} general\n{n} {n} {lines}\n".encode()
    # scipy 1.17's reader segfaults on whitespace at the very end of its input with no newline after it
    # ("7 8\r", "7 8 "; found by the fuzz test): CRs become spaces, and the chunk ends with a newline
    body = data.replace(b"\r", b" ")
    if not body.endswith(b"\n"):
        body += b"\n"
    try:
        with _MMREAD:
            m = scipy.io.mmread(io.BytesIO(head + body))  # BytesIO: a Python stream read from
            #   mmread's reader threads crashed it too
    except Exception:  # noqa: BLE001 - any refusal (a bad token, an id out of range, blank lines): the slow path
        return None
    coo = m.tocoo() if hasattr(m, "tocoo") else None
    if coo is None or coo.nnz != lines:
        return None
    return ParsedChunk(coo.row.astype(np.int64), coo.col.astype(np.int64), lines, 0)


_NOT_DECIMAL = (b"0x", b"0X", b"-0")  # what pyarrow's integer parser accepts and a vertex id must not be


def _fast_pairs(data: bytes, max_id: int | None, base: int) -> ParsedChunk | None:
    """pyarrow's CSV reader on the common layouts (one tab or one space
    between fields, comments only at the top); None when it does not apply."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    start, comments = _leading_comments(data)
    body = memoryview(data)[start:]
    if not body:
        return ParsedChunk(_EMPTY, _EMPTY, count_lines(data), comments)
    if any(data.find(t, start) >= 0 for t in _NOT_DECIMAL):
        return None  # pyarrow reads 0x10 as 16 and -0 as 0; the tokenizer refuses both and names the line
    nl = data.find(b"\n", start)
    delim = "\t" if b"\t" in data[start:nl if nl >= 0 else len(data)] else " "
    # no pre-scan for comments or odd spacing: pyarrow refuses those lines (a bad value, an empty field
    # that becomes null, or a different number of columns), and the tokenizer then names them
    try:
        table = pacsv.read_csv(
            pa.py_buffer(body),
            read_options=pacsv.ReadOptions(autogenerate_column_names=True, use_threads=False, block_size=1 << 20),
            parse_options=pacsv.ParseOptions(delimiter=delim, ignore_empty_lines=True),
            convert_options=pacsv.ConvertOptions(column_types={"f0": pa.int64(), "f1": pa.int64()},
                                                 include_columns=["f0", "f1"]))
    except (pa.ArrowInvalid, pa.ArrowKeyError, KeyError):
        return None
    if table.num_columns != 2 or table.column(0).null_count or table.column(1).null_count:
        return None
    a = table.column(0).to_numpy()
    b = table.column(1).to_numpy()
    lo = min(a.min(initial=base), b.min(initial=base))
    hi = max(a.max(initial=base), b.max(initial=base))
    if lo < base or (max_id is not None and hi >= max_id + base):
        return None  # the tokenizer names the line
    if base:
        a, b = a - base, b - base
    return ParsedChunk(a, b, count_lines(data), comments)


def parse_adjacency(data: bytes, max_id: int | None, base: int, stride: int, skip: int) -> ParsedChunk:
    """METIS-style adjacency lines: line k (comments excluded) lists the
    neighbours of chunk-local vertex k. ``skip`` leading tokens (vertex
    weights) are dropped, then every ``stride``-th token is a neighbour
    (``stride`` 2 when edge weights follow)."""
    t = tokenize(data)
    if t.error:
        return ParsedChunk(_EMPTY, _EMPTY, t.n_lines, t.comment_lines.size, t.error)
    keep = (t.col >= skip) & ((t.col - skip) % stride == 0)
    line = t.line[keep]
    vertex = line - np.searchsorted(t.comment_lines, line)  # a vertex's number: its line minus the comments above
    nbr = t.values[keep]
    err = None
    if max_id is not None:
        bad = np.flatnonzero((nbr < base) | (nbr >= max_id + base))
        if bad.size:
            err = ChunkError(int(line[bad[0]]), f"neighbour id {nbr[bad[0]]} outside 1..{max_id}")
    return ParsedChunk(vertex, nbr - base, t.n_lines, t.comment_lines.size, err)


def _check_range(t: Tokens, a, b, first, max_id, base) -> ChunkError | None:
    lo = min(a.min(initial=base), b.min(initial=base))
    hi = max(a.max(initial=base), b.max(initial=base))
    if lo >= base and (max_id is None or hi < max_id + base):
        return None
    over = ((a >= max_id + base) | (b >= max_id + base)) if max_id is not None else np.zeros(a.size, bool)
    i = np.flatnonzero((a < base) | (b < base) | over)[0]
    val = a[i] if (a[i] < base or (max_id is not None and a[i] >= max_id + base)) else b[i]
    line = int(t.line[first][i])
    if val < base:
        return ChunkError(line, f"id {val} below {base} in a {base}-based file")
    return ChunkError(line, f"id {val} beyond the declared size {max_id}")


def parse_csv_pairs(data: bytes, max_id: int | None = None, base: int = 0) -> ParsedChunk:
    """Lines ``u,v`` (OGB's ``edge.csv.gz``): the pairs parser with commas as separators."""
    return parse_pairs(data.replace(b",", b" "), max_id, base)


PARSERS: dict[str, Callable[..., ParsedChunk]] = {"pairs": parse_pairs, "adjacency": parse_adjacency,
                                                  "csv-pairs": parse_csv_pairs}


# ------------------------------------------------------------------- tasks

def parse_range(r: ByteRange, kind: str, max_line: int, kwargs: dict) -> ParsedChunk:
    """``ingest-parse`` task: read and parse one byte range."""
    data, err = read_range(r, max_line)
    if err is not None:
        return ParsedChunk(_EMPTY, _EMPTY, count_lines(data), 0, err)
    return PARSERS[kind](data, **kwargs)


def parse_gzip(path: str, skip: int, chunk_bytes: int, max_line: int, kind: str, kwargs: dict, *,
               limit: int | None = None) -> list[ParsedChunk]:
    """``ingest-gzip`` task: stream a gzip file (after ``skip`` decompressed
    header bytes) and parse it block by block; the text in memory stays near
    ``chunk_bytes + max_line``, and the lines are counted before each block
    is parsed, so a file that expands past the edges the memory budget
    ``limit`` allows (a gzip bomb) stops before its edges exhaust memory.
    Stops at the first error."""
    cap = max_edges(limit)
    if cap is not None and limit is not None and not _lines_within(path, skip, chunk_bytes, cap, max_line):
        return [_too_many(cap, limit)]  # counted without parsing or keeping anything: a bomb stops here
    out: list[ParsedChunk] = []
    lines = 0
    try:
        with gzip.open(path, "rb") as f:
            f.read(skip)
            rest = b""
            while True:
                block = f.read(chunk_bytes)
                if not block:
                    break
                block = rest + block
                cut = block.rfind(b"\n") + 1
                if cut == 0:
                    if len(block) > max_line:
                        out.append(ParsedChunk(_EMPTY, _EMPTY, 1, 0, _long_line(block[:max_line + 1], max_line)))
                        return out
                    rest = block
                    continue
                rest = block[cut:]
                if len(rest) > max_line:
                    out.append(ParsedChunk(_EMPTY, _EMPTY, count_lines(block[:cut]) + 1, 0,
                                           ChunkError(count_lines(block[:cut]), _long_line(rest, max_line).message)))
                    return out
                if cap is not None and limit is not None and lines + block.count(b"\n", 0, cut) > cap:
                    return out + [_too_many(cap, limit)]
                out.append(PARSERS[kind](block[:cut], **kwargs))
                lines += out[-1].n_lines
                if out[-1].error is not None:
                    return out
            if rest:
                out.append(PARSERS[kind](rest, **kwargs))
    except EOFError:
        out.append(ParsedChunk(_EMPTY, _EMPTY, 0, 0,
                               ChunkError(-1, "truncated gzip file (the compressed stream ends early)")))
    except (gzip.BadGzipFile, zlib.error) as e:
        out.append(ParsedChunk(_EMPTY, _EMPTY, 0, 0, ChunkError(-1, f"corrupt gzip file ({e})")))
    return out


def _lines_within(path: str, skip: int, chunk_bytes: int, cap: int, max_line: int) -> bool:
    """Whether the decompressed file (after ``skip`` bytes) has at most
    ``cap`` lines: one pass that counts newlines block by block and stops
    once past ``cap`` (memory: one block). A corrupt stream, or a line longer
    than ``max_line`` (a binary file), counts as within: the parse names its
    problem at once."""
    lines = tail = 0
    try:
        with gzip.open(path, "rb") as f:
            f.read(skip)
            while lines <= cap and (block := f.read(chunk_bytes)):
                found = block.count(b"\n")
                tail = tail + len(block) if not found else len(block) - block.rfind(b"\n") - 1
                if tail > max_line:
                    return True
                lines += found
    except (EOFError, OSError, zlib.error):
        return True
    return lines <= cap


def _too_many(cap: int, limit: int) -> ParsedChunk:
    return ParsedChunk(_EMPTY, _EMPTY, 0, 0, ChunkError(-1, edges_over(cap, limit, "decompressed, the file")))


def bgzf_members(path: str, size: int) -> list[int] | None:
    """Start offsets of the gzip members of a BGZF-style file (every member
    carries its compressed size in a ``BC`` extra field), or None when the
    file is not one (then it is streamed by one task)."""
    starts = []
    with open(path, "rb") as f:
        pos = 0
        while pos < size:
            head = f.read(18)
            if len(head) < 18 or head[:4] != b"\x1f\x8b\x08\x04" or head[12:14] != b"BC":
                return None
            bsize = struct.unpack("<H", head[16:18])[0] + 1
            starts.append(pos)
            pos += bsize
            f.seek(pos)
        return starts if len(starts) > 1 else None


def parse_bgzf(path: str, group: Members, max_line: int, kind: str, kwargs: dict) -> ParsedChunk:
    """``ingest-bgzf`` task: decompress the ``group``'s members ``[start, stop)`` and parse the lines that begin in
    them; the member at ``prev`` says whether the first line began earlier, those up to ``more`` complete the last."""
    prev, start, stop, more = group.prev, group.start, group.stop, group.more
    first = prev == start
    try:
        with open(path, "rb") as f:
            f.seek(prev)
            before = gzip.decompress(f.read(start - prev)) if start > prev else b""
            own = gzip.decompress(f.read(stop - start))
            extra = gzip.decompress(f.read(more - stop)) if more > stop else b""
    except EOFError:
        return ParsedChunk(_EMPTY, _EMPTY, 0, 0, ChunkError(-1, "truncated gzip file (the compressed stream ends early)"))
    except (gzip.BadGzipFile, zlib.error) as e:
        return ParsedChunk(_EMPTY, _EMPTY, 0, 0, ChunkError(-1, f"corrupt gzip file ({e})"))
    if not first and before and not before.endswith(b"\n"):  # a line that began earlier is the previous group's
        nl = own.find(b"\n")
        own = b"" if nl < 0 else own[nl + 1:]
    if own and not own.endswith(b"\n"):
        end = extra.find(b"\n")
        own += extra if end < 0 else extra[:end + 1]
    if own and not own.endswith(b"\n") and more > stop:
        return ParsedChunk(_EMPTY, _EMPTY, count_lines(own), 0, _long_line(own, max_line))
    newlines = np.flatnonzero(np.frombuffer(own, np.uint8) == 10)
    gaps = np.diff(np.concatenate([[-1], newlines, [len(own)]]))
    if gaps.size and gaps.max() > max_line + 1:
        return ParsedChunk(_EMPTY, _EMPTY, count_lines(own), 0,
                           ChunkError(int(gaps.argmax()), f"line longer than {max_line:,} bytes (a binary or corrupt file?)"))
    return PARSERS[kind](own, **kwargs)
