"""The node-aware exchange (core/exchanges/node.py) on a hand example: 4 ranks on 2 nodes of 2, rank r owning
rows 2r and 2r + 1. Relays: node 0 -> node 1 leaves from rank 1 (1 mod 2 of node 0) for rank 2 (0 mod 2 of
node 1); node 1 -> node 0 leaves from rank 2 for rank 1."""

import numpy as np
import pytest
from helpers.costs import NODE_OWNER, NODE_PAIRS, machine, node_cost

from shgcn.core.exchanges import EXCHANGES, Layout, traffic
from shgcn.core.exchanges.flat import volume_messages
from shgcn.core.exchanges.node import node_messages
from shgcn.core.partition import PartitionCost

OWNER, PAIRS = NODE_OWNER, NODE_PAIRS
LAYOUT = Layout(4, 2)


def expand():
    rows, dest = (np.array(x) for x in zip(*PAIRS))
    return node_messages(rows, dest, OWNER, LAYOUT)


def listed(m):
    return sorted(zip(m.stage.tolist(), m.src.tolist(), m.dst.tolist(), m.rows.tolist()))


def test_the_messages_by_hand():
    assert listed(expand()) == [
        # stage 0: direct inside a node (0 -> 1 row 0, 1 -> 0 row 2, 2 -> 3 row 5), and the gathers to the
        # relay senders: rank 0's rows 0 and 1 to rank 1; rank 3's row 6 to rank 2 (rows 3 and 4 are at their relay)
        (0, 0, 1, 1), (0, 0, 1, 2), (0, 1, 0, 1), (0, 2, 3, 1), (0, 3, 2, 1),
        # stage 1: one message per node pair: rows 0, 1, 3 from rank 1 to rank 2; rows 4, 6 from rank 2 to rank 1
        (1, 1, 2, 3), (1, 2, 1, 2),
        # stage 2: the relay receivers scatter: rank 2 gives rank 3 rows 0 and 1; rank 1 gives rank 0 rows 4 and 6
        (2, 1, 0, 2), (2, 2, 3, 2)]
    m = expand()
    assert m.stages == 3
    by_stage = [int(m.rows[m.stage == s].sum()) for s in range(3)]
    assert by_stage == [3 + 3, 5, 4]  # direct + gathered rows, relayed rows, scattered rows


def test_a_row_two_ranks_of_a_node_need_crosses_once():
    m = expand()
    inter = LAYOUT.node_of(m.src) != LAYOUT.node_of(m.dst)
    assert int(m.rows[inter].sum()) == 5  # rows 0, 1, 3 and 4, 6: row 0 (for ranks 2 and 3) and 6 (0 and 1) once
    flat = [(r, q) for r, q in PAIRS if LAYOUT.node_of([OWNER[r]])[0] != LAYOUT.node_of([q])[0]]
    assert len(flat) == 7  # what a flat exchange sends across
    per_node = np.bincount(LAYOUT.node_of(m.src[inter]), minlength=LAYOUT.nodes)
    assert per_node.tolist() == [1, 1] and per_node.max() <= LAYOUT.nodes - 1
    t = traffic(m, 1, LAYOUT)
    assert t["inter_msgs"].tolist() == [0, 1, 1, 0] and t["inter_bytes"].tolist() == [0, 3, 2, 0]
    assert t["intra_msgs"].tolist() == [2, 2, 2, 1] and t["intra_bytes"].tolist() == [3, 3, 3, 1]


def test_the_fold_runs_the_same_messages_back():
    f = expand().fold()
    assert listed(f) == sorted((2 - s, d, r, n) for s, r, d, n in listed(expand()))


def test_more_nodes_spread_the_relays():
    """6 ranks on 3 nodes of 2: node 0's rows for node 1 leave from rank 1, for node 2 from rank 0."""
    layout = Layout(6, 2)
    owner = np.arange(6)  # row r on rank r
    m = node_messages(np.array([0, 0, 1]), np.array([2, 4, 3]), owner, layout)
    # node 0 -> 1: sender 0 + 1 % 2 = 1 (rank 0 gives it row 0), receiver 2 + 0 = 2 (keeps row 0, gives rank 3 row 1);
    # node 0 -> 2: sender 0 + 2 % 2 = 0 (holds row 0 itself), receiver 4 + 0 % 2 = 4 (needs it)
    assert listed(m) == [(0, 0, 1, 1), (1, 0, 4, 1), (1, 1, 2, 2), (2, 2, 3, 1)]


def test_one_rank_per_node_is_the_flat_exchange():
    rows, dest = (np.array(x) for x in zip(*PAIRS))
    m = node_messages(rows, dest, OWNER, Layout(4, 1))
    volume = np.zeros((4, 4), np.int64)
    np.add.at(volume, (OWNER[rows], dest), 1)
    flat = volume_messages(PartitionCost("x", volume, np.zeros(4), np.zeros(4), None, False))
    assert sorted(zip(m.src.tolist(), m.dst.tolist(), m.rows.tolist())) == \
        sorted(zip(flat.src.tolist(), flat.dst.tolist(), flat.rows.tolist()))
    assert set(m.stage.tolist()) == {1}


def test_the_spec_reads_the_pairs_of_the_partition():
    node = EXCHANGES["node"]
    assert node.node_aware and node.overlaps and node.sparsity_aware
    assert listed(node.messages(node_cost(), LAYOUT)) == listed(expand())


def test_the_time_of_its_three_stages_by_hand():
    """Nodes of 2 on the machine too: intra alpha 1, beta 0.01; inter alpha 10, beta 0.1; 1 B a row.
    A rank pays a latency per message on the busier of its two directions (full duplex), bytes likewise.
    Stage 0, node 0: rank 0 sends 2 messages (3 rows), receives 1: 2 + 0.03; rank 1 receives 2 (3 rows): 2 + 0.03;
    node 1: ranks 2 and 3 send and receive one message of a row: 1 + 0.01. Stage 1: ranks 1 and 2 send one message
    and receive one, 3 rows the larger: 10 + 0.3. Stage 2: ranks 1 and 2 send 2 rows, 0 and 3 receive them: 1 + 0.02.
    Every stage lasts as long as the slowest rank of the node."""
    m = machine(ranks_per_node=2)
    t = EXCHANGES["node"].time(expand(), 1, m, LAYOUT, node_cost())
    node0 = 2.03 + 10.3 + 1.02
    node1 = 1.01 + 10.3 + 1.02
    assert t == pytest.approx([node0, node0, node1, node1])
