"""What every exchange's cost model shares (core/exchanges/base.py): nodes of ranks, messages, their bytes by
path and their time on a machine, on examples counted by hand."""

from dataclasses import replace

import numpy as np
import pytest
from helpers.costs import machine

from shgcn.core.exchanges import KINDS, ExchangeCost, Layout, Messages, stage_time, traffic


def arrays(m: Messages) -> list[list[int]]:
    return [m.src.tolist(), m.dst.tolist(), m.rows.tolist(), m.stage.tolist()]


def test_layout_with_a_smaller_last_node():
    lay = Layout(5, 2)  # nodes {0, 1}, {2, 3}, {4}
    assert lay.nodes == 3
    assert lay.node_of().tolist() == [0, 0, 1, 1, 2] and lay.node_of([4, 1]).tolist() == [2, 0]
    assert lay.first([0, 1, 2]).tolist() == [0, 2, 4] and lay.size([0, 1, 2]).tolist() == [2, 2, 1]
    assert lay.node_of().dtype == np.int64


def test_ranks_per_node_is_clamped_to_one_and_the_job():
    assert Layout(3, 0).ranks_per_node == 1 and Layout(3, 0).nodes == 3
    assert Layout(3, 10).ranks_per_node == 3 and Layout(3, 10).nodes == 1
    assert Layout(4, 4) == Layout(4, 9)


def test_relays_spread_over_a_nodes_ranks():
    lay = Layout(5, 2)
    # A -> B: sender rank b mod size(A) of A, receiver rank a mod size(B) of B
    send, recv = lay.relay([0, 0, 1, 2, 2], [1, 2, 0, 0, 1])
    assert send.tolist() == [1, 0, 2, 4, 4]  # node 0 to node 1: rank 0 + 1; to node 2: rank 0 + 0; node 2 has one
    assert recv.tolist() == [2, 4, 1, 0, 2]  # node 1 from 0: rank 2 + 0; node 0 from 1: rank 0 + 1; from 2: 0 + 0


def test_messages_of_drop_the_empty_ones():
    m = Messages.of([0, 1, 2], [1, 2, 0], [3, 0, 2], stage=[0, 1, 2])
    assert arrays(m) == [[0, 2], [1, 0], [3, 2], [0, 2]]
    assert arrays(Messages.of([0, 1], [1, 0], [1, 1])) == [[0, 1], [1, 0], [1, 1], [0, 0]]  # stage broadcast
    assert m.src.dtype == m.stage.dtype == np.int64
    both = Messages.concat([m, Messages.of([3], [1], [5], stage=1)])
    assert arrays(both) == [[0, 2, 3], [1, 0, 1], [3, 2, 5], [0, 2, 1]]


def test_a_fold_reverses_the_messages_and_their_stages():
    m = Messages.of([0, 1, 1], [1, 2, 0], [3, 1, 2], stage=[0, 1, 2])
    f = m.fold()
    assert arrays(f) == [[1, 2, 0], [0, 1, 1], [3, 1, 2], [2, 1, 0]]
    assert m.stages == f.stages == 3 and arrays(f.fold()) == arrays(m)
    empty = Messages.of([], [], [])
    assert empty.stages == 1 and arrays(empty.fold()) == [[], [], [], []]


def three_messages() -> Messages:
    """0 -> 1 (3 rows, inside node 0), 0 -> 2 (2 rows, to node 1), 3 -> 0 (1 row, to node 0)."""
    return Messages.of([0, 0, 3], [1, 2, 0], [3, 2, 1])


def test_traffic_by_path():
    t = traffic(three_messages(), 8, Layout(4, 2))
    assert {k: v.tolist() for k, v in t.items()} == {
        "bytes_sent": [40, 0, 0, 8], "msgs_sent": [2, 0, 0, 1], "bytes_recv": [8, 24, 16, 0],
        "intra_bytes": [24, 0, 0, 0], "intra_msgs": [1, 0, 0, 0], "inter_bytes": [16, 0, 0, 8],
        "inter_msgs": [1, 0, 0, 1]}
    assert KINDS == ("intra", "inter")
    one = traffic(three_messages(), 8, Layout(4, 1))  # a node per rank: everything crosses the network
    assert one["intra_bytes"].tolist() == [0] * 4 and one["inter_bytes"].tolist() == one["bytes_sent"].tolist()


def test_stage_time_by_hand():
    """Nodes of 2 ranks; intra alpha 1 s, beta 0.01 s/B; inter alpha 10 s, beta 0.1 s/B; 8 B a row.
    Rank 0: latencies 1 (intra) + 10 (inter); bytes max(0.01 x 24, 0.1 x max(16 out, 8 in)) = 1.6.
    Rank 1: 1 + 0.24. Rank 2: 10 + 1.6. Rank 3: 10 + 0.8."""
    m = machine(ranks_per_node=2)
    assert stage_time(three_messages(), 8, m, 4) == pytest.approx([12.6, 1.24, 11.6, 10.8])


def test_stage_time_of_a_node_is_bounded_by_its_shared_link():
    """A link of 5 B/s: node 0 sends 16 B and receives 8 B across it, node 1 sends 8 B and receives 16 B. The
    fluid model (the default): each message through its two adapters, 16 / 5 = 3.2 s for 0 -> 2 and 8 / 5 = 1.6 s
    for 3 -> 0, over the latencies; rank 1 has no inter-node message. aggregate: 3.2 s of bytes on every rank."""
    m = machine(ranks_per_node=2, link_rate=5.0)
    assert stage_time(three_messages(), 8, m, 4) == pytest.approx([14.2, 1.24, 13.2, 11.6])
    agg = replace(m, contention="aggregate")
    assert stage_time(three_messages(), 8, agg, 4) == pytest.approx([14.2, 4.2, 13.2, 13.2])
    fast = machine(ranks_per_node=2, link_rate=1e9)  # a fast link bounds nothing
    assert stage_time(three_messages(), 8, fast, 4) == pytest.approx([12.6, 1.24, 11.6, 10.8])


def test_stage_time_follows_the_machines_nodes_and_leaves_idle_ranks_at_zero():
    one_node = machine(ranks_per_node=4)  # every message intra: rank 0 pays 2 latencies (2 sent, 1 received)
    assert stage_time(three_messages(), 8, one_node, 4) == pytest.approx([2.4, 1.24, 1.16, 1.08])
    assert stage_time(three_messages(), 8, machine(ranks_per_node=2), 5)[4] == 0.0
    assert stage_time(Messages.of([], [], []), 8, one_node, 3).tolist() == [0.0, 0.0, 0.0]


def test_stage_time_with_a_collectives_latencies():
    """latency_msgs: that many latencies of the job's flat path (the network: 2 nodes) on every rank, idle or not."""
    m = machine(ranks_per_node=2)
    t = stage_time(three_messages(), 8, m, 4, latency_msgs=np.array([3, 3, 3, 3]))
    assert t == pytest.approx([30 + 1.6, 30 + 0.24, 30 + 1.6, 30 + 0.8])
    assert stage_time(Messages.of([], [], []), 8, m, 2, latency_msgs=np.array([1, 1])) == pytest.approx([1.0, 1.0])


class Listed(ExchangeCost):
    """An exchange whose messages are given."""

    name = "listed"

    def __init__(self, msgs: Messages):
        self.msgs = msgs

    def messages(self, cost, layout):
        return self.msgs


def test_the_generic_time_of_one_stage_is_the_stage_time():
    m = machine(ranks_per_node=2)
    ex = Listed(three_messages())
    assert ex.time(ex.messages(None, None), 8, m, Layout(4, 2), None).tolist() == \
        stage_time(three_messages(), 8, m, 4).tolist()


def test_a_staged_exchange_waits_for_the_slowest_rank_of_its_node_each_stage():
    """Stage 0: 0 -> 1 (3 rows, intra): ranks 0 and 1 take 1 + 0.24. Stage 1: 0 -> 2 (2 rows, inter): ranks 0
    and 2 take 10 + 1.6. Each stage lasts on a node as long as its slowest rank."""
    msgs = Messages.of([0, 0], [1, 2], [3, 2], stage=[0, 1])
    m = machine(ranks_per_node=2)
    assert Listed(msgs).time(msgs, 8, m, Layout(4, 2), None) == pytest.approx([12.84, 12.84, 11.6, 11.6])
    # the job's nodes decide who waits for whom: on nodes of one rank nobody waits for another
    assert Listed(msgs).time(msgs, 8, m, Layout(4, 1), None) == pytest.approx([12.84, 1.24, 11.6, 0.0])


def test_the_default_spec():
    ex = Listed(three_messages())
    assert (ex.sparsity_aware, ex.overlaps, ex.wire_16bit, ex.node_aware, ex.collective) == \
        (True, False, True, False, False)
    with pytest.raises(TypeError):
        ExchangeCost()  # abstract: an exchange says which messages it sends
