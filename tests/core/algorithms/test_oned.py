"""``1d``, a rank per part (core/algorithms/oned.py): its bytes by path, its times and memory, by hand."""

import numpy as np
import pytest
from helpers.costs import machine, node_cost

from shgcn.core.algorithms import ALGORITHMS, GridShape
from shgcn.core.algorithms.oned import expand_messages, layout_of
from shgcn.core.costs import Job
from shgcn.core.errors import UserError
from shgcn.core.exchanges import Layout
from shgcn.core.machine import ComputeModel
from shgcn.core.partition import PartitionCost

ONED = ALGORITHMS["1d"]
SPMM = ComputeModel(spmm=0.1, dense=0.0, elem=0.0, const=0.0)


def hand_cost(own=None, directed=False) -> PartitionCost:
    """Part 0 sends 3 rows to part 1, which sends 5 back; 10 and 20 nonzeros, 4 and 6 rows."""
    return PartitionCost("hp", np.array([[0, 3], [5, 0]]), np.array([10, 20]), np.array([4, 6]), own, directed)


def test_the_grid_and_the_plans():
    assert ONED.shape(4, 4) == GridShape("1d", 4, 1) == ONED.shape_for(4)
    assert ONED.plans(8, [2, 4]) == [(1, 8)]
    with pytest.raises(UserError, match="needs --algorithm 1.5d"):
        ONED.shape(4, 4, 2)


def test_the_nodes_of_a_job():
    assert layout_of(Job((3, 2)), 4) == Layout(4, 1)
    assert layout_of(Job((3, 2), ranks_per_node=2), 4) == Layout(4, 2)


def test_checks_16_bit_rows_against_the_exchange():
    ONED.check(Job((3, 2), itemsize=2), minibatch=True)
    with pytest.raises(UserError, match="^a 16-bit --exchange-dtype needs another --exchange than bcast"):
        ONED.check(Job((3, 2), itemsize=2, exchange="bcast"), minibatch=False)


def test_bytes_by_hand():
    """GCN [8, 4, 2]: four SpMMs of widths 4, 2, 2, 4 (4 B a value): rank 0 sends 3 rows in each, rank 1 sends 5."""
    t = ONED.traffic(hand_cost(), Job((8, 4, 2)))
    assert t["bytes_sent"].tolist() == [144, 240] and t["bytes_recv"].tolist() == [240, 144]
    assert t["msgs_sent"].tolist() == [4, 4] and t["calls"].tolist() == [[48, 80], [24, 40], [24, 40], [48, 80]]
    assert t["inter_bytes"].tolist() == [144, 240] and t["intra_bytes"].tolist() == [0, 0]  # a node per rank
    shared = ONED.traffic(hand_cost(), Job((8, 4, 2), ranks_per_node=2))
    assert shared["intra_bytes"].tolist() == [144, 240] and shared["inter_msgs"].tolist() == [0, 0]
    assert expand_messages(hand_cost(), Job((8, 4, 2))).rows.tolist() == [3, 5]


def test_node_exchange_bytes_by_hand():
    """tests/core/exchanges/test_node.py's example: one expand sends 3, 6, 5 and 1 rows from ranks 0..3 in 2, 3, 3
    and 1 messages (ranks 1 and 2 relay 3 and 2 rows across the network) and receives 3, 5, 4 and 3 rows;
    4 B x (4 + 2 + 2 + 4) = 48 B a row over the step."""
    job = Job((8, 4, 2), exchange="node", ranks_per_node=2)
    t = ONED.traffic(node_cost(), job)
    assert t["bytes_sent"].tolist() == [144, 288, 240, 48] and t["msgs_sent"].tolist() == [8, 12, 12, 4]
    assert t["inter_bytes"].tolist() == [0, 144, 96, 0] and t["inter_msgs"].tolist() == [0, 4, 4, 0]
    # directed: the backward folds send back what the expands received (24 B a row forward, 24 back)
    d = ONED.traffic(node_cost(directed=True), job)
    assert d["bytes_sent"].tolist() == [24 * 3 + 24 * 3, 24 * 6 + 24 * 5, 24 * 5 + 24 * 4, 24 * 1 + 24 * 3]


def test_times_without_overlap_by_hand():
    """A node per rank (alpha 10 s, beta 0.1 s a byte), 0.1 s per nonzero and column. Every SpMM: one message
    each way, 5 rows the larger: 10 + 0.1 x 5 x 4 w. Widths 4, 2, 2, 4: 2 (18 + 14) = 64; the allreduce of
    160 B: 20 + 16; the product 0.1 x (10, 20) x 12."""
    t = ONED.times(hand_cost(), Job((8, 4, 2)), machine(compute=SPMM))
    assert t["comm"] == pytest.approx([100, 100]) and t["compute"] == pytest.approx([12, 24])
    assert t["total"] == pytest.approx([112, 124]) and t["epoch"] == pytest.approx(124)
    a2a = ONED.times(hand_cost(own=np.array([6, 12])), Job((8, 4, 2), exchange="alltoallv"), machine(compute=SPMM))
    assert a2a["comm"] == pytest.approx([100, 100])  # alpha (P - 1) = one latency; it never overlaps


def test_p2p_overlaps_the_own_columns():
    """Own nonzeros 6 and 12: rank 0 hides 0.1 x 6 x w of each exchange (w = 4: 18 - 2.4; w = 2: 14 - 1.2),
    rank 1 0.1 x 12 x w (18 - 4.8, 14 - 2.4)."""
    t = ONED.times(hand_cost(own=np.array([6, 12])), Job((8, 4, 2)), machine(compute=SPMM))
    assert t["comm"] == pytest.approx([2 * (15.6 + 12.8) + 36, 2 * (13.2 + 11.6) + 36])
    assert t["compute"] == pytest.approx([12, 24]) and t["epoch"] == pytest.approx(49.6 + 36 + 24)


def test_one_rank_communicates_nothing():
    one = PartitionCost("rp", np.zeros((1, 1), np.int64), np.array([30]), np.array([10]), np.array([30]), False)
    t = ONED.times(one, Job((8, 4, 2)), machine(compute=SPMM))
    assert t["comm"].tolist() == [0.0] and t["total"] == pytest.approx([0.1 * 30 * 12])


def test_memory_by_hand():
    """core/memory.rank_bytes with the rows received (5 for part 0, 3 for part 1) and the rows packed to send
    (each the other's: 3 and 5), GCN [8, 4, 2], widest 4.
    Part 0: 16 x 10 + 16 x 4 + 4 x 4 x 8 + (8 x 4 x 10 + 4 x 4 x 8) + 4 x (5 + 3) x 4."""
    assert ONED.memory(hand_cost(), Job((8, 4, 2))).tolist() == [160 + 64 + 128 + 448 + 80 + 48,
                                                                 320 + 96 + 192 + 672 + 48 + 80]
