"""A step's phases (trainer/phases.py): marks close the running phase, repeated names add up."""

import time

from shgcn.trainer.phases import Phases


def test_marks_close_the_running_phase_and_add_up():
    p = Phases()
    time.sleep(0.01)
    p.mark("a")
    p.mark("b")
    time.sleep(0.01)
    p.mark("a")
    p.add("wait", 0.5)
    s = p.seconds
    assert list(s) == ["a", "b", "wait"] and s["a"] >= 0.02 and s["b"] < 0.01 and s["wait"] == 0.5
    assert p.rounded(2)["wait"] == 0.5
