"""``bcast``, CAGNET's sparsity-oblivious baseline (core/exchanges/bcast.py), by hand."""

import numpy as np
import pytest
from helpers.costs import machine

from shgcn.core.collectives import bcast_time
from shgcn.core.exchanges import EXCHANGES, Layout, traffic
from shgcn.core.exchanges.bcast import Bcast
from shgcn.core.partition import PartitionCost


def cost(rows) -> PartitionCost:
    P = len(rows)
    volume = np.ones((P, P), np.int64) - np.eye(P, dtype=np.int64)  # what the ranks need changes nothing
    return PartitionCost("hp", volume, np.full(P, 10), np.array(rows), None, False)


def test_every_root_sends_its_whole_block_to_every_other_rank():
    m = Bcast().messages(cost([2, 3, 1]), Layout(3, 1))
    assert list(zip(m.src.tolist(), m.dst.tolist(), m.rows.tolist())) == \
        [(0, 1, 2), (0, 2, 2), (1, 0, 3), (1, 2, 3), (2, 0, 1), (2, 1, 1)]
    t = traffic(m, 4, Layout(3, 1))
    assert t["bytes_sent"].tolist() == [16, 24, 8] and t["msgs_sent"].tolist() == [2, 2, 2]
    assert t["bytes_recv"].tolist() == [16, 12, 20]
    empty = Bcast().messages(cost([2, 0, 1]), Layout(3, 1))  # an empty block sends nothing
    assert empty.src.tolist() == [0, 0, 2, 2]


def test_the_time_is_one_broadcast_per_block_among_all_ranks():
    """alpha 10, beta 0.1 (a node per rank), 100 B a row: blocks of 200, 300 and 100 B among 3 ranks,
    each 10 (ceil log2 3 + 2) + 2 x 0.1 x bytes x 2/3."""
    m = machine(ranks_per_node=1)
    c = cost([2, 3, 1])
    t = Bcast().time(Bcast().messages(c, Layout(3, 1)), 100, m, Layout(3, 1), c)
    assert t == pytest.approx([3 * 40 + 0.4 * 600 / 3] * 3)
    assert t == pytest.approx([sum(bcast_time(b, 3, m.inter) for b in (200, 300, 100))] * 3)
    one = cost([5])
    assert Bcast().time(Bcast().messages(one, Layout(1, 1)), 100, m, Layout(1, 1), one).tolist() == [0.0]
    on_one_node = machine(ranks_per_node=4)  # among ranks of one node: the intra path, alpha 1, beta 0.01
    assert Bcast().time(None, 100, on_one_node, Layout(3, 1), c) == pytest.approx([3 * 4 + 0.04 * 600 / 3] * 3)


def test_the_spec():
    b = EXCHANGES["bcast"]
    assert not b.sparsity_aware and not b.wire_16bit and not b.overlaps and not b.node_aware
