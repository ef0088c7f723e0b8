"""The volume balancing's search (pipeline/models/vb/search.py) on the hand-built graph of Figure 2: the
candidate parts of a vertex, the score of each move against a plain restatement of the rule, and one pass."""

import numpy as np
from helpers.graphs import FIG2_EDGES, FIG2_PART, a_hat

from shgcn.pipeline.models.pins import PinCounts
from shgcn.pipeline.models.vb import search as vb_search
from shgcn.pipeline.models.vb.messages import MessagePrice

NO_EXTRA = np.zeros(0, np.int64)


def fig2():
    return PinCounts(a_hat(6, FIG2_EDGES), FIG2_PART, 3)


def scratch(parts=3):
    return np.zeros(parts, np.int64), np.zeros(parts, np.int64), np.zeros(parts, np.int8), np.empty(parts, np.int64)


def unpriced(pc):
    """``mc`` with the messages not priced (ν = 0)."""
    return MessagePrice(pc, 0.0).context(3.0, 0.0)


def targets(pc, v, cap=32, max_targets=8, extra=NO_EXTRA):
    cand = np.empty(pc.parts, np.int64)
    nc, cut = vb_search._targets(v, pc.part[v], pc.g, pc.pc, (cap, max_targets, extra),
                                 (np.zeros(pc.parts, np.int64), cand))
    return cand[:nc].tolist(), cut


def test_candidates_are_the_parts_of_the_vertexs_nets_most_shared_first():
    pc = fig2()
    # vertex 3 (part 1): its nets 0, 2, 3, 4 have pins in part 0, nets 3, 4, 5 in part 2
    assert targets(pc, 3) == ([0, 2], True)
    assert targets(pc, 3, max_targets=1) == ([0], True)  # part 0 shares 4 nets, part 2 three
    assert targets(pc, 3, max_targets=1, extra=np.array([1, 2])) == ([0, 2], True)  # extras, not its own part
    assert targets(pc, 3, cap=2) == ([0, 2], True)  # nets of 3 parts propose none; 0 by nets 0, 2; 2 by net 5
    inside = PinCounts(a_hat(6, FIG2_EDGES), np.zeros(6, np.int32), 2)
    assert targets(inside, 3, extra=np.array([1])) == ([1], False)  # no cut net: not a boundary vertex


def reference_score(pc, v, b, state, tau, mu, power):
    """The rule, restated: -ΔΦ - μ Δtotal, or None when the move raises a maximum or passes the total bound."""
    ds, dr = pc.deltas(v, b)
    send, recv = pc.send + ds, pc.recv + dr
    if (send > state[1])[ds > 0].any() or (recv > state[2])[dr > 0].any():
        return None
    def pen(x):
        return (np.maximum(x - tau, 0) ** power).sum()

    return -(pen(send) + pen(recv) - pen(pc.send) - pen(pc.recv)) - mu * ds.sum()


def test_the_best_target_by_score_and_the_load_bound():
    pc = fig2()
    state = np.array([pc.total, pc.send.max(), pc.recv.max()], np.int64)  # [9, 3, 4]
    tau, mu, power = 3.0, 0.5, 3.0
    scores = {b: reference_score(pc, 3, b, state, tau, mu, power) for b in (0, 2)}
    assert scores[2] == 1.5  # recv of part 1 falls from 4 to 2 (ΔΦ = -1) and the total by 1
    best = max((b for b in scores if scores[b] is not None), key=lambda b: scores[b])
    cand = np.array([0, 2], np.int64)
    ctx = (pc.g, pc.pc, pc.vol, state, (100, 100, tau, mu, power), scratch(), unpriced(pc))
    b, score = vb_search.best_target(3, cand, 2, 0.0, False, ctx)
    assert (b, score) == (best, scores[best])
    tight = (pc.g, pc.pc, pc.vol, state, (int(pc.load.max()), 100, tau, mu, power), scratch(),
             unpriced(pc))  # no part has room
    assert vb_search.best_target(3, cand, 2, 0.0, False, tight)[0] == -1
    assert vb_search.best_target(3, cand, 2, 0.0, True, tight) == (best, scores[best])  # blocked by load alone
    over = (pc.g, pc.pc, pc.vol, state, (100, 7, tau, mu, power), scratch(), unpriced(pc))  # a total bound below 9 - 1
    assert vb_search.best_target(3, cand, 2, 0.0, False, over)[0] == -1


def test_one_pass_applies_the_best_move_and_keeps_the_state():
    pc = fig2()
    state = np.array([pc.total, pc.send.max(), pc.recv.max()], np.int64)
    moves = vb_search.one_pass(np.array([3], np.int64), (pc.g, pc.pc, pc.vol, state), (100, 100, 3.0, 0.5, 3.0, 9),
                               (32, 8, 0), NO_EXTRA, unpriced(pc))
    assert moves == 1 and pc.part.tolist() == [0, 0, 1, 2, 2, 2]
    assert state.tolist() == [8, 3, 3] and pc.send.tolist() == [3, 2, 3] and pc.recv.tolist() == [3, 2, 3]
    again = vb_search.one_pass(np.array([3], np.int64), (pc.g, pc.pc, pc.vol, state), (100, 100, 3.0, 0.5, 3.0, 9),
                               (32, 8, 0), NO_EXTRA, unpriced(pc))
    assert again == 0 and pc.part.tolist() == [0, 0, 1, 2, 2, 2]  # nothing better left for vertex 3


# parts {0, 2, 6}, {1, 3}, {4, 5}: part 0 sends rows 0, 2, 6 to part 1, part 1 rows 1, 3 to part 0
MSG_EDGES = [(0, 1), (0, 2), (0, 6), (1, 2), (3, 6)]
MSG_PART = np.array([0, 1, 0, 1, 2, 2, 0])


def test_a_move_that_adds_a_message_at_the_maximum_is_refused():
    # Moving vertex 3 to part 2: part 2 now owns net 3 {3, 6} (sends row 3 to part 0) and part 0 sends row 6
    # to part 2 instead of part 1. Send [3, 2, 0] -> [3, 1, 1], receive [2, 3, 0] -> [2, 2, 1]: the busiest
    # receiver drops, the total stays 5. But part 0 now sends 2 messages (to 1 and 2), above the maximum 1.
    power, mu = 3.0, 0.5
    pc = PinCounts(a_hat(7, MSG_EDGES), MSG_PART, 3)
    state = np.array([pc.total, pc.send.max(), pc.recv.max()], np.int64)
    assert state.tolist() == [5, 3, 3]
    cand = np.array([2], np.int64)
    vol_score = reference_score(pc, 3, 2, state, 2.0, mu, power)
    assert vol_score == 1.0  # the busiest receiver falls to tau = 2
    lim = (100, 100, 2.0, mu, power)
    assert vb_search.best_target(3, cand, 1, 0.0, False, (pc.g, pc.pc, pc.vol, state, lim, scratch(),
                                                          unpriced(pc))) == (2, vol_score)
    price = MessagePrice(pc, 1.0)
    assert price.mstate.tolist() == [1, 1]
    nu, msg, mstate, taum, buf, mscr = price.context(power, 1.0)
    assert taum == 2 / 3 and nu > 0
    assert vb_search.best_target(3, cand, 1, 0.0, False, (pc.g, pc.pc, pc.vol, state, lim, scratch(),
                                                          (nu, msg, mstate, taum, buf, mscr)))[0] == -1
    # with the message maxima at 2 the move is allowed, and priced: sent and received messages [1, 1, 0] ->
    # [2, 1, 1], so ΔΨ = 2 ((2 - τm)^3 + (1 - τm)^3 - (1 - τm)^3) = 2 (4/3)^3
    relaxed = np.array([2, 2], np.int64)
    b, score = vb_search.best_target(3, cand, 1, -np.inf, False, (pc.g, pc.pc, pc.vol, state, lim, scratch(),
                                                                   (2.0, msg, relaxed, taum, buf, mscr)))
    assert b == 2 and np.isclose(score, vol_score - 2.0 * 2 * (4 / 3) ** 3)
    assert msg[1].tolist() == [1, 1, 0] and msg[2].tolist() == [1, 1, 0]  # nothing applied


def test_one_pass_with_messages_keeps_the_pair_counts():
    pc = PinCounts(a_hat(7, MSG_EDGES), MSG_PART, 3)
    price = MessagePrice(pc, 1.0)
    mc = price.context(3.0, 1.0)
    state = np.array([pc.total, pc.send.max(), pc.recv.max()], np.int64)
    order = np.arange(7, dtype=np.int64)
    vb_search.one_pass(order, (pc.g, pc.pc, pc.vol, state), (100, 100, 5 / 3, 0.5, 3.0, 5), (32, 8, 8),
                       np.arange(3, dtype=np.int64), mc)
    fresh = MessagePrice(PinCounts(a_hat(7, MSG_EDGES), pc.part, 3), 1.0)
    for got, want in zip(price.msg, fresh.msg):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(price.mstate, fresh.mstate)
    assert (price.mstate <= 1).all()  # the message maxima never rose
