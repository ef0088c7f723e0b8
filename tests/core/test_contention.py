"""What a rank's messages cost while its node's other ranks send (core/contention.py, issue 53): the sharing of a
node's link by hand, the per-rank terms of a stage, and every term per rank in the epoch model's breakdown."""

from dataclasses import replace

import numpy as np
import pytest
from helpers.costs import machine, path_cost

from shgcn.core import contention, epoch
from shgcn.core.contention import aggregate_finish, maxmin_finish, share_finish, stage_terms
from shgcn.core.costs import Job
from shgcn.core.errors import UserError
from shgcn.core.exchanges import Messages, stage_time
from shgcn.core.machine import machine_of, presets


def test_two_ranks_on_one_node_sharing_a_link_get_half_each():
    """4 B each through a 2 B/s link: 1 B/s each, done at 2 x 4 / 2 = 4 s, under every model."""
    for finish in (maxmin_finish, share_finish, aggregate_finish):
        assert finish([4, 4], [0, 0], 2.0, 10.0).tolist() == [4.0, 4.0]
    # one rank alone on its link gets all of it (up to its own rate)
    assert maxmin_finish([4], [0], 2.0, 10.0).tolist() == [2.0] and maxmin_finish([4], [0], 2.0, 1.0).tolist() == [4.0]


def test_maxmin_gives_what_a_finished_rank_leaves_to_the_others():
    """2 B and 6 B through 2 B/s: 1 B/s each until the first is done at 2 s; the second then has the link for its
    last 4 B: 2 s more (its last byte at 8 / 2 = 4 s, the node's bytes at the link rate)."""
    assert maxmin_finish([2, 6], [0, 0], 2.0, 10.0).tolist() == [2.0, 4.0]
    assert maxmin_finish([6, 2], [0, 0], 2.0, 10.0).tolist() == [4.0, 2.0]  # whatever the order
    # each rank's own rate binds: 0.5 B/s each, whatever the link leaves
    assert maxmin_finish([2, 6], [0, 0], 2.0, 0.5).tolist() == [4.0, 12.0]
    # three ranks: 2 B/s among 3, then 2, then 1
    assert maxmin_finish([3, 3, 6], [0, 0, 0], 3.0, 10.0) == pytest.approx([3.0, 3.0, 4.0])
    # nodes do not share: node 1's rank has its link alone; a rank without bytes is 0 and takes no share
    assert maxmin_finish([4, 4, 4, 0], [0, 0, 1, 1], 2.0, 10.0).tolist() == [4.0, 4.0, 2.0, 0.0]
    assert maxmin_finish([0, 4], [0, 0], 2.0, 10.0).tolist() == [0.0, 2.0]
    assert maxmin_finish([], [], 2.0, 10.0).tolist() == []


def test_share_keeps_each_rank_at_its_share_and_aggregate_makes_every_rank_wait_for_its_node():
    assert share_finish([2, 6], [0, 0], 2.0, 10.0).tolist() == [2.0, 6.0]  # 1 B/s each, for its whole transfer
    assert share_finish([2, 6], [0, 0], 2.0, 0.5).tolist() == [4.0, 12.0]
    assert share_finish([0, 4], [0, 0], 2.0, 10.0).tolist() == [0.0, 2.0]  # the idle rank takes no share
    assert aggregate_finish([2, 6], [0, 0], 2.0, 10.0).tolist() == [4.0, 4.0]
    assert aggregate_finish([0, 4, 1], [0, 0, 1], 2.0, 10.0).tolist() == [2.0, 2.0, 0.5]  # the idle rank waits too


def unequal() -> Messages:
    """Nodes of 2 ranks: rank 0 sends 6 rows (48 B) to rank 2, rank 1 sends 2 rows (16 B) to rank 3, across."""
    return Messages.of([0, 1], [2, 3], [6, 2])


@pytest.mark.parametrize("model, link", [("fluid", [12.8, 6.4, 12.8, 6.4]), ("maxmin", [12.8, 6.4, 12.8, 6.4]),
                                         ("share", [19.2, 6.4, 19.2, 6.4]),
                                         ("aggregate", [12.8, 12.8, 12.8, 12.8])])
def test_the_terms_of_one_stage_per_rank(model, link):
    """inter alpha 10 s, beta 0.1 s/B (10 B/s a rank); a 5 B/s link a node. Sending: ranks 0 and 1 share node 0's
    link (2.5 B/s each while both send); receiving: ranks 2 and 3 share node 1's."""
    m = replace(machine(ranks_per_node=2, link_rate=5.0), contention=model)
    t = stage_terms(unequal(), 8, m, 4)
    assert t["latency"].tolist() == [10.0, 10.0, 10.0, 10.0]
    assert t["intra"].tolist() == [0.0] * 4
    assert t["injection"] == pytest.approx([4.8, 1.6, 0.0, 0.0]) and t["ejection"] == pytest.approx([0, 0, 4.8, 1.6])
    sent, received = link[:2] + [0.0, 0.0], [0.0, 0.0] + link[2:]
    if model == "aggregate":  # every rank waits for its node's bytes, out and in
        sent, received = [12.8, 12.8, 0.0, 0.0], [0.0, 0.0, 12.8, 12.8]
    assert t["link_send"] == pytest.approx(sent) and t["link_recv"] == pytest.approx(received)
    assert t["bandwidth"] == pytest.approx(link) and t["total"] == pytest.approx(np.add(10.0, link))
    assert stage_time(unequal(), 8, m, 4) == pytest.approx(t["total"])


def test_the_terms_without_a_link_and_of_idle_ranks():
    m = replace(machine(ranks_per_node=2), contention="maxmin")  # no link: a rank's own rate only
    t = stage_terms(unequal(), 8, m, 5)
    assert t["link_send"] == pytest.approx(t["injection"]) and t["total"] == pytest.approx([14.8, 11.6, 14.8, 11.6, 0])
    assert stage_terms(Messages.of([], [], []), 8, m, 2)["total"].tolist() == [0.0, 0.0]


def test_a_machine_names_its_contention_model():
    assert machine_of("paper").contention == "fluid" and machine(link_rate=5.0).contention == "fluid"
    assert all(m.contention != "share" for m in presets().values())  # share: a named bound, never a default
    assert machine_of("ranks=48,link=12GB/s,contention=maxmin").contention == "maxmin"
    with pytest.raises(UserError, match="'contention=fair': choose a contention model from fluid, maxmin, share, aggregate"):
        machine_of("contention=fair")
    assert contention.check_model("share") == "share"
    with pytest.raises(UserError, match="contention model 'x'"):
        contention.check_model("x")


def test_the_breakdown_has_every_term_per_rank():
    """The path graph on 2 ranks of one node each (a 1 B/s link): every exchange sends one row each way. The
    breakdown's terms per rank add up as the model does: exchanges = latency + the largest bandwidth term per
    stage, summed; total = compute + comm; and its total is rank_times'."""
    m = replace(machine(ranks_per_node=1, link_rate=1.0), contention="maxmin")
    job = Job((2, 3, 2))
    b = epoch.rank_breakdown(path_cost(), job, m)
    assert list(b) == list(epoch.BREAKDOWN)
    calls = len(job.calls(False))
    widths = [w for w, _, _ in job.calls(False)]
    assert b["latency"].tolist() == [10.0 * calls] * 2  # one message out and one in per exchange
    own = np.array([0.1 * 4 * w for w in widths]).sum()  # 4-byte values at 10 B/s
    assert b["injection"] == pytest.approx([own] * 2) and b["ejection"] == pytest.approx([own] * 2)
    assert b["link_send"] == pytest.approx([4 * sum(widths)] * 2)  # the 1 B/s link binds
    assert b["exchanges"] == pytest.approx(b["latency"] + b["link_send"])
    t = epoch.rank_times(path_cost(), job, m)
    assert b["total"] == pytest.approx(t["total"]) and b["total"] == pytest.approx(b["compute"] + b["comm"])


def test_a_paths_overhead_pipelines_its_messages():
    """alpha 10 s, an overhead of 1 s: 3 messages sent in flight cost 10 + 2 x 1 s of latency, 3 sent and 2
    received 10 + 4 x 1 s (each end's processor pays for each message); without an overhead alpha for each of
    max(sent, received) (the model before issue 58); none: 0."""
    from shgcn.core.machine import Channel

    assert Channel(10.0, 0.1, "", 1.0).latency([3, 3, 1, 0], [0, 2, 0, 0]).tolist() == [12.0, 14.0, 10.0, 0.0]
    assert Channel(10.0, 0.1).latency([3, 3, 1, 0], [0, 2, 0, 0]).tolist() == [30.0, 30.0, 10.0, 0.0]
    m = replace(machine(ranks_per_node=1, link_rate=5.0), inter=Channel(10.0, 0.1, "", 1.0))
    t = stage_terms(Messages.of([0, 0, 0, 1], [1, 2, 3, 0], [1, 1, 1, 1]), 8, m, 4)
    assert t["latency"].tolist() == [13.0, 11.0, 10.0, 10.0]
    assert machine_of("inter=1us:12GB/s:0.14us").inter.overhead == pytest.approx(0.14e-6)
    assert machine_of("paper").inter.overhead == pytest.approx(143.6e-9)
    with pytest.raises(UserError, match="0.14x"):
        machine_of("inter=1us:12GB/s:0.14x")
    assert machine_of("msgrate=32.4M/s,link=12GB/s").message_rate == pytest.approx(32.4e6)
    with pytest.raises(UserError, match="message rate"):
        machine_of("msgrate=-3")
