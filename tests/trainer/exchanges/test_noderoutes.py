"""The node-aware exchange's routes (trainer/exchanges/noderoutes.py) without MPI: relays merged from every
rank's rows and pins, the batch rule that keeps a relay row, and who relays for whom."""

import numpy as np

from shgcn.trainer.exchanges.noderoutes import Nodes, Relay, _kept, _merge


def test_relay_ranks_are_spread_over_a_node():
    n = Nodes(np.array([0, 0, 0, 1, 1, 2]), me=0)
    assert n.members(0).tolist() == [0, 1, 2] and n.count() == 3
    assert [n.sender(0, b) for b in (1, 2)] == [1, 2] and [n.receiver(a, 0) for a in (1, 2)] == [1, 2]
    assert n.sender(2, 0) == 5 and n.receiver(0, 2) == 5  # a single-rank node relays everything itself


def test_merge_joins_pins_of_the_same_row():
    rel = _merge(np.array([9, 4, 9]), np.array([2, 1, 1]), np.array([100, 101, 102, 103]))
    assert rel.rows.tolist() == [4, 9] and rel.ptr.tolist() == [0, 1, 4] and rel.pins.tolist() == [102, 100, 101, 103]


def test_a_batch_keeps_a_row_when_it_and_one_of_its_pins_are_in_it():
    rel = Relay(np.array([1, 2, 3]), np.array([0, 2, 3, 4]), np.array([5, 6, 7, 8]))
    keep, pins = _kept(rel, None, 10)
    assert keep.tolist() == [0, 1, 2] and pins.all()
    keep, pins = _kept(rel, np.array([1, 2, 6, 8]), 10)  # row 1 (pin 6), row 2 (pin 7 out), row 3 out
    assert keep.tolist() == [0] and pins.tolist() == [False, True, False, True]
