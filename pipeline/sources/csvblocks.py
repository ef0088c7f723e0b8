"""Comma-separated numbers (OGB's ``node-feat.csv.gz``, ``node-label.csv.gz``,
split files), read as a stream of row blocks: each block of whole lines is
parsed by pyarrow's CSV reader and handed on, so memory holds one block,
never the file. A bad line is named (``file:line: expected D values, found
K``), found only once pyarrow has refused its block."""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterator

import numpy as np

from ..errors import located
from .parsing import DEFAULT_CHUNK_BYTES, MAX_LINE_BYTES
from .probe import gzip_named


def _open(path: str):
    try:
        return gzip.open(path, "rb") if gzip_named(path) else open(path, "rb")
    except FileNotFoundError:
        raise located(path, "file not found") from None


def _line_blocks(path: str, chunk_bytes: int, max_line: int) -> Iterator[tuple[int, bytes]]:
    """(lines before, whole lines) of about ``chunk_bytes`` each."""
    before, rest = 0, b""
    try:
        with _open(path) as f:
            while block := f.read(chunk_bytes):
                block = rest + block
                cut = block.rfind(b"\n") + 1
                if cut == 0 or len(block) - cut > max_line:
                    if len(block) > max_line:
                        raise located(path, f"line longer than {max_line:,} bytes (a binary or corrupt file?)",
                                      before + block[:cut].count(b"\n") + 1)
                    rest = block
                    continue
                rest = block[cut:]
                yield before, block[:cut]
                before += block[:cut].count(b"\n")
            if rest.strip():
                yield before, rest + b"\n"
    except EOFError:
        raise located(path, "truncated gzip file (the compressed stream ends early)") from None
    except (gzip.BadGzipFile, zlib.error) as e:
        raise located(path, f"corrupt gzip file ({e})") from None


def _bad_line(path: str, data: bytes, before: int, cols: int, why: str) -> Exception:
    """The first line of ``data`` that does not hold ``cols`` numbers (the slow path, after a refusal)."""
    for i, line in enumerate(data.split(b"\n")):
        words = line.strip().split(b",") if line.strip() else []
        if not words:
            continue
        if len(words) != cols:
            return located(path, f"expected {cols} comma-separated values, found {len(words)}", before + i + 1)
        for w in words:
            try:
                float(w)
            except ValueError:
                return located(path, f"not a number: {w.strip()[:40]!r}", before + i + 1)
    return located(path, f"cannot parse ({why})", before + 1)


def _parse(path: str, data: bytes, before: int, cols: int) -> np.ndarray:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    names = [f"c{i}" for i in range(cols)]
    try:
        table = pacsv.read_csv(
            pa.py_buffer(data),
            read_options=pacsv.ReadOptions(column_names=names, use_threads=False, block_size=1 << 22),
            parse_options=pacsv.ParseOptions(delimiter=",", ignore_empty_lines=True),
            convert_options=pacsv.ConvertOptions(column_types=dict.fromkeys(names, pa.float64())))
    except (pa.ArrowInvalid, pa.ArrowKeyError) as e:
        raise _bad_line(path, data, before, cols, str(e).splitlines()[0]) from None
    out = np.empty((table.num_rows, cols), np.float64)
    for i in range(cols):  # a loop over columns: each is one vectorized copy
        out[:, i] = table.column(i).to_numpy(zero_copy_only=False)
    return out


def column_count(path: str, max_line: int = MAX_LINE_BYTES) -> int:
    """Values on the first non-empty line (0 for an empty file)."""
    for _, data in _line_blocks(path, 1 << 16, max_line):
        for line in data.split(b"\n"):
            if line.strip():
                return line.count(b",") + 1
    return 0


def row_blocks(path: str, cols: int | None = None, chunk_bytes: int = DEFAULT_CHUNK_BYTES,
               max_line: int = MAX_LINE_BYTES) -> Iterator[np.ndarray]:
    """(rows, cols) float64 blocks of the file, in order (NaN where a value
    is empty or ``nan``). ``cols`` None: the first line's count."""
    cols = column_count(path, max_line) if cols is None else cols
    if cols == 0:
        raise located(path, "empty file")
    for before, data in _line_blocks(path, chunk_bytes, max_line):
        yield _parse(path, data, before, cols)


def read_column(path: str, chunk_bytes: int = DEFAULT_CHUNK_BYTES) -> np.ndarray:
    """A one-value-per-line file (a split's vertex ids) as (k,) float64, whole (O(n))."""
    cols = column_count(path)
    if cols == 0:
        return np.zeros(0, np.float64)
    if cols != 1:
        raise located(path, f"expected one value per line, found {cols}", 1)
    blocks = [b[:, 0] for b in row_blocks(path, 1, chunk_bytes)]
    return np.concatenate(blocks) if blocks else np.zeros(0, np.float64)
