"""Node data of dataset directories (OGB, GraphSAINT) turned into what the
build reads by row blocks: labels checked and converted block by block
(single-label class ids, or multi-label 0/1 rows), masks from lists of
vertex ids, edges of (2, E) or CSR arrays cut into chunks, and the scratch
directory the conversions write into."""

from __future__ import annotations

import tempfile
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from ..errors import located
from .records import ParsedChunk
from .rowfiles import RawWriter, RowFile
from .tokens import ChunkError

_EMPTY = np.zeros(0, np.int64)


def scratch(work_dir: str | None, name: str) -> Path:
    """A file path in the build's scratch directory (a temporary one when the
    caller gives none)."""
    base = Path(work_dir) if work_dir else Path(tempfile.mkdtemp(prefix="shgcn-"))
    base.mkdir(parents=True, exist_ok=True)
    return base / name


def write_labels(blocks: Iterable[np.ndarray], out: Path, where: str,
                 negative_unlabelled: bool = True) -> tuple[RowFile, int, str]:
    """Label rows, block by block, into ``out``: one column of class ids
    (NaN, or with ``negative_unlabelled`` a negative id: unlabelled, -1) -> int32, single-label; several columns
    of 0/1 (NaN: 0) -> bool, multi-label. Returns (RowFile, classes, kind)."""
    writer: RawWriter | None = None
    top, kind, done = -1, "single", 0
    try:
        for b in blocks:
            b = b.reshape(b.shape[0], -1)
            if writer is None:
                kind = "multi" if b.shape[1] > 1 else "single"
                writer = RawWriter(out, bool if kind == "multi" else np.int32, (b.shape[1],) if kind == "multi" else ())
            ids = _multi(b, where, done) if kind == "multi" else class_ids(b[:, 0], where, done, negative_unlabelled)
            writer.write(ids)
            if kind == "single":
                top = max(top, int(ids.max(initial=-1)))
            done += b.shape[0]
        if writer is None:
            raise located(where, "no labels (empty)")
        classes = top + 1 if kind == "single" else writer.row_shape[0]
        return writer.close(), classes, kind
    finally:
        if writer is not None:
            writer.__exit__()


MAX_CLASS = int(np.iinfo(np.int32).max) - 1  # class ids are stored as int32, and the class count id + 1 too


def class_ids(y: np.ndarray, where: str, done: int = 0, negative_unlabelled: bool = True) -> np.ndarray:
    """(k,) int32 class ids of label values ``y`` (NaN, and a negative id unless the format says NaN only
    (``negative_unlabelled`` false): unlabelled, -1); a fraction, an infinity, a complex value or an id above
    :data:`MAX_CLASS` is a :class:`UserError` naming ``where`` and the row (``done``: rows before this block)."""
    y = np.asarray(y)
    if y.dtype.kind not in "iufb":
        raise located(where, f"labels must be real numbers, got {y.dtype}")
    f = y.astype(np.float64)
    known = np.isfinite(f) & (f >= 0)
    wrong = np.isinf(f) | (known & ((f != np.round(f)) | (f > MAX_CLASS)))
    if not negative_unlabelled:
        wrong |= f < 0
    bad = np.flatnonzero(wrong)
    if bad.size:
        span = f"at most {MAX_CLASS:,}" if negative_unlabelled else f"0 to {MAX_CLASS:,}; unlabelled is NaN"
        raise located(where, f"row {done + int(bad[0])}: label {y[bad[0]]} is not a class number (whole, {span})")
    return np.where(known, f, -1).astype(np.int32)


def _multi(y: np.ndarray, where: str, done: int) -> np.ndarray:
    y = np.nan_to_num(y, nan=0.0)
    bad = np.argwhere((y != 0) & (y != 1))
    if bad.size:
        r, c = bad[0]
        raise located(where, f"row {done + int(r)}, class {int(c)}: multi-label targets must be 0 or 1, found {y[r, c]}")
    return y.astype(bool)


def mask_of(ids: np.ndarray, n: int, where: str) -> np.ndarray:
    """(n,) bool mask of a list of vertex ids (checked: whole numbers in 0..n-1)."""
    try:
        ids = np.asarray(ids)
    except ValueError:  # ragged nested lists
        raise located(where, "expected a flat list of vertex ids") from None
    if ids.ndim != 1 or (ids.dtype.kind not in "iuf" and ids.size):
        what = ("a single value or null" if ids.ndim == 0 else f"{ids.ndim}-D values" if ids.ndim > 1
                else "true/false values" if ids.dtype.kind == "b" else "values that are not numbers")
        raise located(where, f"expected a flat list of vertex ids, got {what}")
    if ids.dtype.kind == "f" and (~np.isfinite(ids) | (ids != np.round(ids))).any():
        raise located(where, "vertex ids must be whole numbers")
    if ids.dtype.kind == "f" and ids.size and ((ids < 0) | (ids >= n)).any():  # before the cast: 1e30 has no int64
        bad_f = ids[(ids < 0) | (ids >= n)][0]
        raise located(where, f"vertex id {bad_f:.17g} outside 0..{n - 1}")
    ids = ids.astype(np.int64)
    if ids.size and (ids.min() < 0 or ids.max() >= n):
        bad = ids[(ids < 0) | (ids >= n)][0]
        raise located(where, f"vertex id {bad} outside 0..{n - 1}")
    m = np.zeros(n, bool)
    m[ids] = True
    return m


def pair_chunk(src: RowFile, dst: RowFile, a: int, b: int, n: int, where: str) -> ParsedChunk:
    """``ingest-edges`` task: edges a..b-1 of a (2, E) edge list, checked against n."""
    s, d = src[a:b], dst[a:b]
    frac = _fraction(s, d)
    if frac is not None:
        return ParsedChunk(_EMPTY, _EMPTY, 0, 0, ChunkError(-1, f"{where}: edge {a + frac[0]} has the id {frac[1]}, "
                                                                "not a whole number"))
    return _checked(s, d, n, where, a)


def _fraction(*ids: np.ndarray) -> tuple[int, object] | None:
    """(position, value) of the first id that is not a whole number (NaN,
    infinite, fractional, complex) in arrays of ids read from a file, or None."""
    for x in ids:
        x = np.asarray(x)
        if x.dtype.kind in "iub":
            continue
        bad = np.flatnonzero(~np.isfinite(x) | (x != np.round(x.real))) if x.dtype.kind in "fc" else \
            np.arange(min(1, x.size))
        if bad.size:
            return int(bad[0]), x[bad[0]]
    return None


def csr_chunk(indptr: RowFile, indices: RowFile, lo: int, hi: int, n: int, where: str) -> ParsedChunk:
    """``ingest-edges`` task: the entries of rows lo..hi-1 of a CSR matrix."""
    ptr = indptr[lo:hi + 1].astype(np.int64)
    if ptr.size and (np.any(np.diff(ptr) < 0) or ptr[0] < 0 or ptr[-1] > indices.shape[0]):
        return ParsedChunk(_EMPTY, _EMPTY, 0, 0, ChunkError(-1, f"{where}: indptr is not a CSR row pointer "
                                                                f"(rows {lo}..{hi - 1})"))
    cols = indices[int(ptr[0]):int(ptr[-1])] if ptr.size else _EMPTY
    frac = _fraction(cols)
    if frac is not None:
        return ParsedChunk(_EMPTY, _EMPTY, 0, 0, ChunkError(-1, f"{where}: column index {frac[1]} (entry "
                                                                f"{int(ptr[0]) + frac[0]}) is not a whole number"))
    rows = np.repeat(np.arange(lo, hi, dtype=np.int64), np.diff(ptr))
    return _checked(rows, cols, n, where, int(ptr[0]) if ptr.size else 0)


def _checked(s: np.ndarray, d: np.ndarray, n: int, where: str, first: int) -> ParsedChunk:
    """The edges (s, d) as int64, or a chunk error naming the first id outside 0..n-1: checked on the ids as
    read (an id of 1e30 or 2**64 - 1 would wrap in the cast)."""
    bad = np.flatnonzero((s < 0) | (s >= n) | (d < 0) | (d >= n))
    if bad.size:
        i = int(bad[0])
        return ParsedChunk(_EMPTY, _EMPTY, s.size, 0, ChunkError(-1, f"{where}: edge {first + i} ({_id(s[i])}, "
                                                                     f"{_id(d[i])}) has an id outside 0..{n - 1}"))
    return ParsedChunk(s.astype(np.int64), d.astype(np.int64), int(s.size), 0)


def _id(v) -> str:
    """An id as the file holds it: 1e+30, not the integer a cast would make of it."""
    return str(int(v)) if np.asarray(v).dtype.kind in "iub" else f"{v:.17g}"


def cuts(total: int, per: int) -> list[tuple[int, int]]:
    """[a, b) ranges of at most ``per`` covering 0..total-1 (one empty range for 0)."""
    per = max(1, per)
    return [(a, min(a + per, total)) for a in range(0, total, per)] or [(0, 0)]


def row_cuts(indptr: RowFile, per: int) -> list[tuple[int, int]]:
    """Row ranges of a CSR matrix holding about ``per`` entries each (a small task: reads indptr)."""
    ptr = indptr.read().astype(np.int64)
    n = ptr.size - 1
    if n <= 0:
        return [(0, 0)]
    marks = np.searchsorted(ptr, np.arange(per, int(ptr[-1]), max(1, per)), side="right") - 1
    bounds = np.unique(np.concatenate([[0], np.clip(marks, 1, n), [n]]))
    return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]
