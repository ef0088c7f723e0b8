"""The flat sparsity-aware exchanges p2p and alltoallv (core/exchanges/flat.py), by hand."""

import numpy as np
import pytest
from helpers.costs import machine

from shgcn.core.exchanges import EXCHANGES, Layout
from shgcn.core.exchanges.flat import P2P, AllToAllV, volume_messages
from shgcn.core.partition import PartitionCost

VOLUME = np.array([[5, 3, 0], [0, 7, 2], [4, 1, 0]])  # rows part m sends to part q; the diagonal never travels


def cost(volume=VOLUME) -> PartitionCost:
    P = volume.shape[0]
    return PartitionCost("hp", volume, np.full(P, 10), np.full(P, 4), np.full(P, 6), False)


def listed(m):
    return list(zip(m.src.tolist(), m.dst.tolist(), m.rows.tolist(), m.stage.tolist()))


def test_a_message_for_every_nonzero_off_diagonal_entry():
    expected = [(0, 1, 3, 0), (1, 2, 2, 0), (2, 0, 4, 0), (2, 1, 1, 0)]
    assert listed(volume_messages(cost())) == expected
    for ex in (P2P(), AllToAllV()):
        assert listed(ex.messages(cost(), Layout(3, 1))) == expected
        assert listed(ex.messages(cost(), Layout(3, 3))) == expected  # the nodes change nothing
    assert VOLUME[0, 0] == 5  # not modified in place
    assert listed(volume_messages(cost(np.diag([1, 2])))) == []


def test_the_specs():
    assert EXCHANGES["p2p"].overlaps and not EXCHANGES["p2p"].collective
    assert EXCHANGES["alltoallv"].collective and not EXCHANGES["alltoallv"].overlaps
    assert all(EXCHANGES[n].sparsity_aware and EXCHANGES[n].wire_16bit and not EXCHANGES[n].node_aware
               for n in ("p2p", "alltoallv"))


M = machine(ranks_per_node=1)  # a node per rank: every message on the inter path, alpha 10 s, beta 0.1 s a byte


def test_p2p_pays_a_latency_per_message_sent_or_received():
    """4 B a row: rank 0 sends 12 B, receives 16 B; rank 1 sends 8, receives 16; rank 2 sends 20, receives 8.
    Latencies: rank 0 one message each way; ranks 1 and 2 two received or sent."""
    msgs = P2P().messages(cost(), Layout(3, 1))
    t = P2P().time(msgs, 4, M, Layout(3, 1), cost())
    assert t == pytest.approx([10 + 1.6, 20 + 1.6, 20 + 2.0])


def test_alltoallv_counts_p_minus_1_latencies_on_every_rank():
    msgs = AllToAllV().messages(cost(), Layout(3, 1))
    t = AllToAllV().time(msgs, 4, M, Layout(3, 1), cost())
    assert t == pytest.approx([2 * 10 + 1.6, 2 * 10 + 1.6, 2 * 10 + 2.0])
    # a rank that sends and receives nothing still takes part in the collective
    idle = np.array([[0, 1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]])
    t4 = AllToAllV().time(AllToAllV().messages(cost(idle), Layout(4, 1)), 4, M, Layout(4, 1), cost(idle))
    assert t4 == pytest.approx([30 + 0.4, 30 + 0.4, 30, 30])
    one = np.zeros((1, 1), np.int64)
    assert AllToAllV().time(AllToAllV().messages(cost(one), Layout(1, 1)), 4, M, Layout(1, 1), cost(one)).tolist() == [0]
