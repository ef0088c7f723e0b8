"""The fluid model of a stage's inter-node messages (core/fluid.py, issue 58): max-min fair rates by hand,
flows freeing their share when they finish, the two ends of a message coupled, the adapter's message rate,
and the bundled path equal to the per-flow one."""

from dataclasses import replace

import numpy as np
import pytest
from helpers.costs import machine
from hypothesis import given, settings
from hypothesis import strategies as st

from shgcn.core import fluid
from shgcn.core.contention import maxmin_finish, stage_terms
from shgcn.core.exchanges import Messages


def test_maxmin_rates_by_hand():
    """Resources 0 (cap 1) and 1 (cap 3); flow a on 0, b on 0 and 1, c on 1: a = b = 0.5 (0 is full), c takes
    what b leaves of 1: 2.5."""
    res = np.array([[0, 0], [0, 1], [1, 1]])
    weight = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 0.0]])
    rate = fluid.maxmin_rates(res, weight, np.array([1.0, 3.0]))
    assert rate.tolist() == [0.5, 0.5, 2.5]
    out = np.zeros(3)
    fluid._fill(res, weight, np.array([1.0, 3.0]), np.arange(3), out)
    assert out.tolist() == [0.5, 0.5, 2.5]


def test_a_flow_that_finishes_gives_its_share_to_the_others():
    """Ranks 0, 1 on node 0 send 2 B and 6 B to ranks 2, 3 on node 1, through 2 B/s adapters: 1 B/s each until
    the first is done at 2 s, then the second has the link for its last 4 B (done at 4 s: 8 B / 2 B/s)."""
    node = np.array([0, 0, 1, 1])
    send, recv = fluid.stage_finish([0, 1], [2, 3], [2.0, 6.0], [1, 1], node, cap=10.0, link_rate=2.0)
    assert send.tolist() == [2.0, 4.0, 0.0, 0.0] and recv.tolist() == [0.0, 0.0, 2.0, 4.0]
    # a rank's own rate binds before the link: the per-flow path (cap < link) gives 1 B/s, then still 1 B/s
    send, recv = fluid.stage_finish([0, 1], [2, 3], [2.0, 6.0], [1, 1], node, cap=1.0, link_rate=2.0)
    assert send.tolist() == pytest.approx([2.0, 6.0, 0.0, 0.0]) and recv.tolist() == pytest.approx([0, 0, 2, 6])


def test_a_message_goes_no_faster_than_its_busier_end():
    """Nodes of one rank, 1 B/s adapters. 0 -> 1 and 0 -> 3 share node 0's adapter out; 0 -> 1 and 2 -> 1 share
    node 1's in: every flow at 0.5 B/s, all done at 8 s. Rank 2 alone on its node sends 4 B, but its message
    shares node 1's adapter: 8 s, where the closed form maxmin (each direction on its own) says 4 s."""
    node = np.arange(4)
    send, recv = fluid.stage_finish([0, 2, 0], [1, 1, 3], [4.0, 4.0, 4.0], [1, 1, 1], node, cap=10.0,
                                    link_rate=1.0)
    assert send.tolist() == [8.0, 0.0, 8.0, 0.0] and recv.tolist() == [0.0, 8.0, 0.0, 8.0]
    assert maxmin_finish([8.0, 0.0, 4.0, 0.0], node, 1.0, 10.0).tolist() == [8.0, 0.0, 4.0, 0.0]


def test_the_adapters_message_rate():
    """100 B in one message through a 100 B/s adapter that takes 1 s a message: 2 s. Two such messages out of
    one node: 4 s (the adapter's time is the bytes' plus the messages')."""
    node = np.array([0, 1, 1])
    send, _ = fluid.stage_finish([0], [1], [100.0], [1], node, cap=1e9, link_rate=100.0, overhead=1.0)
    assert send[0] == pytest.approx(2.0)
    send, recv = fluid.stage_finish([0, 0], [1, 2], [100.0, 100.0], [1, 1], node, cap=1e9, link_rate=100.0,
                                    overhead=1.0)
    assert send[0] == pytest.approx(4.0) and recv[1:] == pytest.approx([4.0, 4.0])


def test_work_conserving():
    """One node's ranks sending to another's, uneven bytes: the node's last byte is through at the node's bytes
    over its link when the adapters bind, whatever the order."""
    rng = np.random.default_rng(3)
    node = np.repeat([0, 1], 8)
    src = np.repeat(np.arange(8), 8)
    dst = np.tile(np.arange(8, 16), 8)
    b = rng.integers(1, 50, src.size).astype(float)
    send, recv = fluid.stage_finish(src, dst, b, np.ones(src.size), node, cap=100.0, link_rate=10.0)
    assert send.max() == pytest.approx(b.sum() / 10.0) and recv.max() == pytest.approx(b.sum() / 10.0)


def test_no_finite_limit_is_an_error():
    with pytest.raises(ValueError, match="no finite limit"):
        fluid.stage_finish([0], [1], [4.0], [1], np.array([0, 1]), cap=np.inf, link_rate=None)


def _instance(seed: int, P: int, k: int):
    rng = np.random.default_rng(seed)
    node = np.arange(P) // k
    s, d = np.nonzero(rng.random((P, P)) < 0.5)
    inter = node[s] != node[d]
    return node, s[inter], d[inter], rng.integers(1, 9, int(inter.sum())) * 64.0


@pytest.mark.parametrize("seed", range(4))
def test_the_bundles_equal_the_per_flow_simulation(seed):
    """When a rank's own rate cannot bind (cap >= link), the flows between two nodes as one bundle give every
    flow's end exactly as the flow-by-flow simulation does (both exact: tol 0)."""
    node, s, d, b = _instance(seed, 18, 6)
    res, w, cap = fluid.resources(s, d, b, np.ones(s.size), node, cap=13.0, link_rate=12.0, overhead=2.0)
    per_flow = fluid.finish_times(res, w, cap, b, tol=0.0)
    bundled = fluid.node_pair_finish(node[s], node[d], b, 1.0, 12.0, overhead=2.0)
    assert bundled == pytest.approx(per_flow, rel=1e-9)


def test_tol_finishes_close_flows_together_within_it():
    node, s, d, b = _instance(7, 24, 6)
    exact = fluid.node_pair_finish(node[s], node[d], b, 1.0, 12.0, overhead=0.5, tol=0.0)
    fast = fluid.node_pair_finish(node[s], node[d], b, 1.0, 12.0, overhead=0.5, tol=1e-3)
    assert np.max(np.abs(fast / exact - 1)) <= 5e-3


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 12), st.integers(1, 4), st.integers(0, 2 ** 31))
def test_maxmin_rates_are_feasible_and_fair(F, R, seed):
    """Every resource within its capacity, and every flow crosses a full resource on which no flow goes faster
    (the definition of max-min fairness); the compiled filling gives the same rates."""
    rng = np.random.default_rng(seed)
    res = rng.integers(0, R, (F, 2))
    weight = rng.uniform(0.5, 2.0, (F, 2))
    weight[res[:, 0] == res[:, 1], 1] = 0.0  # a flow names a resource once
    capacity = rng.uniform(1.0, 5.0, R)
    rate = fluid.maxmin_rates(res, weight, capacity)
    load = np.bincount(res.ravel(), weights=(weight * rate[:, None]).ravel(), minlength=R)
    assert np.all(load <= capacity * (1 + 1e-9))
    full = load >= capacity * (1 - 1e-9)
    top = np.full(R, 0.0)
    for k in range(2):
        on = weight[:, k] > 0
        np.maximum.at(top, res[on, k], rate[on])
    for f in range(F):
        assert any(full[res[f, k]] and weight[f, k] > 0 and rate[f] >= top[res[f, k]] * (1 - 1e-9) for k in range(2))
    out = np.zeros(F)
    fluid._fill(res, weight, capacity, np.arange(F), out)
    assert out == pytest.approx(rate, rel=1e-9)


def test_the_fluid_terms_of_a_stage():
    """The house example (core/test_contention): 48 B and 16 B from node 0 to node 1, 5 B/s adapters, 10 B/s a
    rank: 2.5 B/s each until the 16 B are through at 6.4 s, then the 48 B message has the link: 12.8 s."""
    m = replace(machine(ranks_per_node=2, link_rate=5.0), contention="fluid")
    t = stage_terms(Messages.of([0, 1], [2, 3], [6, 2]), 8, m, 4)
    assert t["link_send"] == pytest.approx([12.8, 6.4, 0, 0]) and t["link_recv"] == pytest.approx([0, 0, 12.8, 6.4])
    assert t["total"] == pytest.approx([22.8, 16.4, 22.8, 16.4])
    # the adapter's message rate: 1 message/s adds 1 s of each node's adapter per message
    t = stage_terms(Messages.of([0, 1], [2, 3], [6, 2]), 8, replace(m, message_rate=1.0), 4)
    # adapter seconds per byte 0.2 + 1/48 and 0.2 + 1/16: both at 1 / (their sum) until the 16 B are through;
    # the node adapter busy 64 x 0.2 s for the bytes and 2 x 1 s for the messages in all
    assert t["link_send"][:2] == pytest.approx([64 * 0.2 + 2.0, 16 * (0.2 + 1 / 48 + 0.2 + 1 / 16)])
