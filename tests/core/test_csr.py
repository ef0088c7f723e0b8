"""CSR segment positions (core/csr.py)."""

import numpy as np

from shgcn.core.csr import segments


def test_segments_in_the_order_asked():
    ptr = np.array([0, 2, 2, 5, 6])  # segments [0, 2), [2, 2), [2, 5), [5, 6)
    pos, seg = segments(ptr, np.array([2, 0, 1, 3]))
    assert pos.tolist() == [2, 3, 4, 0, 1, 5]
    assert seg.tolist() == [0, 0, 0, 1, 1, 3]  # index into sel: segment 1 is empty, so index 2 never appears
    assert pos.dtype == np.int64 and seg.dtype == np.int64


def test_a_segment_twice_and_gathering_with_it():
    ptr = [0, 3, 4]
    values = np.array([10, 11, 12, 20])
    pos, seg = segments(ptr, [1, 0, 1])
    assert values[pos].tolist() == [20, 10, 11, 12, 20] and seg.tolist() == [0, 1, 1, 1, 2]


def test_nothing_selected_or_only_empty_segments():
    for sel in ([], [1, 1]):
        pos, seg = segments(np.array([0, 2, 2]), np.array(sel, np.int64))
        assert pos.tolist() == [] and seg.tolist() == []
