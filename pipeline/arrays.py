"""Small array utilities every layer of the pipeline uses."""

from __future__ import annotations

import numpy as np


def sorted_unique(x: np.ndarray) -> np.ndarray:
    """``np.unique(x)`` by sorting: numpy 2.4's hash-based ``np.unique`` is
    7-25x slower on 8M int64 keys here (measured), and these keys are sorted
    anyway for CSR order."""
    s = np.sort(x, kind="stable" if x.dtype.itemsize <= 2 else "quicksort")
    if s.size == 0:
        return s
    keep = np.empty(s.size, bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


def lookup(sorted_ids: np.ndarray, x: np.ndarray, limit: int = 1 << 27) -> np.ndarray:
    """Positions of ``x``'s values in ``sorted_ids`` (all present): a dense
    table when the largest id allows (a gather is far faster than
    ``searchsorted``'s random binary searches), else ``searchsorted``."""
    if sorted_ids.size == 0:
        return np.zeros(x.shape, np.int64)
    top = int(sorted_ids[-1])
    if 0 <= int(sorted_ids[0]) and top < limit:
        table = np.zeros(top + 1, np.int64)
        table[sorted_ids] = np.arange(sorted_ids.size, dtype=np.int64)
        return table[x]
    return np.searchsorted(sorted_ids, x)


def index_dtype(n: int, nnz: int = 0) -> type:
    """int32 where every id and offset fits, else int64."""
    return np.int32 if max(n, nnz) < 2**31 else np.int64


PIECE_ENTRIES = 1 << 20  # entries a block's task sorts at once: its temporary arrays bounded by this, not the block


def row_pieces(counts: np.ndarray, limit: int = PIECE_ENTRIES) -> list[tuple[int, int]]:
    """Consecutive ranges (lo, hi) covering rows 0..len(counts)-1, each of at
    most ``limit`` entries (``counts``: entries per row), but for a single row
    holding more; none empty unless there are no rows."""
    rows = int(counts.size)
    if rows == 0:
        return [(0, 0)]
    ends = np.cumsum(counts, dtype=np.int64)
    out, lo = [], 0
    while lo < rows:  # a loop over pieces (total / limit of them)
        base = int(ends[lo - 1]) if lo else 0
        hi = max(lo + 1, int(np.searchsorted(ends, base + limit, side="right")))
        out.append((lo, min(hi, rows)))
        lo = hi
    return out
