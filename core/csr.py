"""CSR index helpers that the pipeline and the trainer both use."""

from __future__ import annotations

import numpy as np


def segments(ptr: np.ndarray, sel: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions of the CSR segments ``sel`` of ``ptr``, concatenated in the
    order of ``sel``, and the index into ``sel`` of each.

    Parameters
    ----------
    ptr : (m + 1,) int, segment boundaries (a CSR ``indptr``)
    sel : (s,) int, the segments to gather

    Returns
    -------
    pos : (k,) int64, positions into the arrays ``ptr`` indexes
    seg : (k,) int64, for each position, its segment's index in ``sel``
    """
    ptr = np.asarray(ptr, dtype=np.int64)
    sel = np.asarray(sel, dtype=np.int64)
    starts = ptr[sel]
    lengths = ptr[sel + 1] - starts
    seg = np.repeat(np.arange(sel.size, dtype=np.int64), lengths)
    first = np.cumsum(lengths) - lengths  # where each segment starts in the output
    return np.arange(seg.size, dtype=np.int64) + (starts - first)[seg], seg
