"""What every exchange shares (trainer/exchanges/base.py): counters by path and by call, peers' nodes."""

import numpy as np

from shgcn.trainer.exchanges import Counters, Peers


def test_counters_by_path_and_by_call():
    c = Counters()
    before = c.mark()
    c.to("intra", 40)
    c.to("inter", 16, 2)
    c.call_done(before)
    assert (c.bytes_sent, c.msgs_sent) == (56, 3) and c.paths == {"intra": 40, "inter": 16}
    assert c.path_msgs == {"intra": 1, "inter": 2} and c.calls == [56] and c.call_paths == [{"intra": 40, "inter": 16}]
    inner = Counters()
    inner.to("inter", 8)
    inner.bytes_recv = 8
    c.absorb(inner, "rows")
    assert c.split == {"rows": 8} and c.bytes_recv == 8 and inner.bytes_sent == 0
    out = c.reset()
    assert out["bytes_sent"] == 64 and c.bytes_sent == 0 and c.paths == {"intra": 0, "inter": 0}


def test_peers_say_the_path():
    p = Peers(np.array([0, 0, 1, 1]))
    assert p.path(0, 1) == "intra" and p.path(1, 2) == "inter" and Peers.one_node(3).path(0, 2) == "intra"
