"""The collectives' time on one path (core/collectives.py)."""

import pytest

from shgcn.core.collectives import allreduce_time, bcast_time
from shgcn.core.machine import Channel


def test_bcast_time_by_hand():
    ch = Channel(1.0, 0.01)
    # 4 ranks: alpha (log2 4 + 3) + 2 beta 1000 x 3/4 = 5 + 15
    assert bcast_time(1000, 4, ch) == pytest.approx(20.0)
    # 5 ranks: alpha (ceil log2 5 = 3, + 4) + 2 beta 1000 x 4/5 = 7 + 16
    assert bcast_time(1000, 5, ch) == pytest.approx(23.0)
    assert bcast_time(1000, 1, ch) == 0.0
    assert bcast_time([1000, 0], 4, ch).tolist() == pytest.approx([20.0, 5.0])


def test_allreduce_time_by_hand():
    ch = Channel(1.0, 0.01)
    assert allreduce_time(1000, 4, ch) == pytest.approx(2 * 2 + 2 * 0.01 * 1000 * 3 / 4)  # 19
    assert allreduce_time(1000, 3, ch) == pytest.approx(2 * 2 + 2 * 0.01 * 1000 * 2 / 3)
    assert allreduce_time(1000, 2, ch) == pytest.approx(2 + 10)
    assert allreduce_time(1000, 1, ch) == 0.0


