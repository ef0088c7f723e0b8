"""Array helpers (pipeline/arrays.py): unique by sorting, positions by a table or a search, index widths."""

import numpy as np

from shgcn.pipeline.arrays import index_dtype, lookup, row_pieces, sorted_unique


def test_sorted_unique_equals_numpy_unique():
    x = np.array([5, -1, 5, 3, 3, 3, 0], np.int64)
    assert sorted_unique(x).tolist() == [-1, 0, 3, 5]
    assert sorted_unique(np.array([2, 1, 2], np.int16)).tolist() == [1, 2]  # small items: the stable sort
    assert sorted_unique(np.zeros(0, np.int64)).size == 0


def test_lookup_by_table_and_by_search_agree():
    ids = np.array([2, 7, 30], np.int64)
    x = np.array([30, 2, 7, 7])
    assert lookup(ids, x).tolist() == [2, 0, 1, 1]  # a dense table: the largest id is small
    assert lookup(ids, x, limit=10).tolist() == [2, 0, 1, 1]  # over the limit: searchsorted
    assert lookup(np.array([-5, 4]), np.array([4, -5])).tolist() == [1, 0]  # a negative id: searchsorted
    assert lookup(np.zeros(0, np.int64), np.zeros(3, np.int64)).tolist() == [0, 0, 0]


def test_index_dtype_is_the_narrowest_that_fits():
    assert index_dtype(10) is np.int32 and index_dtype(2**31 - 1, 5) is np.int32
    assert index_dtype(10, 2**31) is np.int64 and index_dtype(2**31) is np.int64


def test_row_pieces_cover_the_rows_within_the_limit():
    counts = np.array([3, 1, 4, 1, 5, 0, 2], np.int64)
    pieces = row_pieces(counts, 5)
    assert pieces == [(0, 2), (2, 4), (4, 6), (6, 7)]  # 4, 5, 5, 2 entries: each at most 5
    assert row_pieces(counts, 100) == [(0, 7)]
    assert row_pieces(np.array([9, 1]), 4) == [(0, 1), (1, 2)]  # a row over the limit: a piece of its own
    assert row_pieces(np.zeros(0, np.int64)) == [(0, 0)] and row_pieces(np.zeros(3, np.int64), 1) == [(0, 3)]
