"""A partition given by its ratios to a baseline's volumes and messages (core/profile.py, issue 53): a baseline
scaled by hand, its averages and maxima exactly the ratios', and what cannot be met refused."""

import numpy as np
import pytest

from shgcn.core.partition import PartitionCost
from shgcn.core.profile import PAPER_SLASHDOT_512, Ratios, _scaled_counts, profile_of, ratios_of, scaled

V = np.array([[0, 4, 2, 2], [2, 0, 2, 0], [1, 1, 0, 2], [3, 1, 0, 0]])  # sends 8, 4, 4, 4 rows; 3, 2, 3, 2 messages


def base() -> PartitionCost:
    return PartitionCost("rp", V, load=np.array([10, 20, 5, 5]), rows=np.array([4, 2, 2, 2]),
                         own=np.array([1, 2, 1, 0]), directed=False)


def test_a_baseline_scaled_by_hand():
    """Messages: rank 0 (3, the most) keeps 3; the others' 7 become 8 - 3 = 5 (x 5/7: 1.43, 2.14, 1.43; the last
    one to the larger remainder, the lower rank): 2, 2, 1. Rows: rank 0 (8) sends 16; the others' 12 become 30 - 16
    = 14 (4.67 each: 5, 5, 4). Each rank keeps its largest destinations and spreads its rows over them as it did;
    compute: a balanced partition's (10 rows, 40 nonzeros, 4 own over 4 ranks)."""
    p = scaled(base(), Ratios(volume_avg=1.5, volume_max=2.0, msgs_avg=0.8, msgs_max=1.0), "x")
    assert p.model == "x" and p.graph is None and p.part is None
    assert p.volume.tolist() == [[0, 8, 4, 4], [3, 0, 2, 0], [2, 0, 0, 3], [4, 0, 0, 0]]
    assert p.rows.tolist() == [3, 3, 2, 2] and p.load.tolist() == [10, 10, 10, 10] and p.own.tolist() == [1, 1, 1, 1]


def test_the_averages_and_maxima_are_exactly_the_ratios():
    for r in (Ratios(1.5, 2.0, 0.8, 1.0), Ratios(1.0, 1.0, 1.0, 1.0), Ratios(0.9, 1.0, 1.0, 1.0)):
        got = ratios_of(scaled(base(), r), base())
        assert (got.volume_avg, got.volume_max, got.msgs_avg, got.msgs_max) == (r.volume_avg, r.volume_max,
                                                                                r.msgs_avg, r.msgs_max)
    same = scaled(base(), Ratios(1.0, 1.0, 1.0, 1.0))  # the identity keeps every message and row
    assert same.volume.tolist() == V.tolist()
    rng = np.random.default_rng(0)  # so does a larger, random one (rp's kind)
    big = rng.integers(0, 5, (40, 40)) * (rng.random((40, 40)) < 0.6)
    np.fill_diagonal(big, 0)
    c = PartitionCost("rp", big, np.ones(40, np.int64), np.ones(40, np.int64), None, False)
    assert scaled(c, Ratios(1.0, 1.0, 1.0, 1.0)).volume.tolist() == big.tolist()
    assert profile_of(base()) == {"volume_avg": 5.0, "volume_max": 8.0, "msgs_avg": 2.5, "msgs_max": 3.0}


def test_the_busiest_rank_alone_scaled():
    """The others unchanged (average = (sum + (s - 1) max) / sum): the busiest rank's rows times s, its
    destinations the same."""
    for s in (1, 2, 5):
        r = Ratios((20 + (s - 1) * 8) / 20, s, 1.0, 1.0)
        p = scaled(base(), r)
        assert p.volume[1:].tolist() == V[1:].tolist() and p.volume[0].sum() == 8 * s
        assert ((p.volume[0] > 0) == (V[0] > 0)).all()


def test_others_that_would_pass_the_maximum_stay_at_it():
    """[10, 9, 1] to an average of 0.6 (12) with the largest at 0.5 (5): the others' 7 at 0.7 would give 9 x 0.7 =
    6.3 > 5, so that one stays at 5 and the last gets the rest, 2."""
    assert _scaled_counts(np.array([10, 9, 1]), 0.6, 0.5, "x").tolist() == [5, 5, 2]
    with pytest.raises(ValueError, match="cannot both hold"):
        _scaled_counts(np.array([10, 9, 1]), 1.0, 0.5, "volume")  # 15 more over 2 ranks of at most 5


def test_what_cannot_be_met_is_refused():
    with pytest.raises(ValueError, match="rows in"):  # 1 row in 2 messages
        scaled(base(), Ratios(volume_avg=0.25, volume_max=0.25, msgs_avg=1.0, msgs_max=1.0))
    # more messages than the baseline's: new destinations, the lowest ranks not yet sent to
    more = scaled(base(), Ratios(volume_avg=1.0, volume_max=1.0, msgs_avg=1.2, msgs_max=1.0))
    assert (more.volume > 0).sum(1).tolist() == [3, 3, 3, 3] and more.volume.sum(1).tolist() == [8, 4, 4, 4]


def test_the_papers_rows():
    """The paper's Table 2, soc-slashdot0902 at P = 512 (the issue's numbers)."""
    hp, gp = PAPER_SLASHDOT_512["HP"], PAPER_SLASHDOT_512["GP"]
    assert (hp.volume_avg, hp.volume_max, hp.msgs_avg, hp.msgs_max, hp.epoch) == (0.74, 0.69, 0.86, 0.92, 0.75)
    assert (gp.volume_avg, gp.volume_max, gp.msgs_avg, gp.msgs_max, gp.epoch) == (0.85, 4.38, 0.93, 1.00, 2.02)
