"""A part's command-line option (core/options.py): its dest, its value in a mapping, its bounds and choices
checked in one line, and its flag on a parser."""

import argparse

import pytest

from shgcn.core.errors import UserError
from shgcn.core.options import Option, check_options, own_values

RATE = Option("--attn-rate", None, "a rate", type=float, low=0, below=1)
COUNT = Option("--count", 2, "a count", type=int, low=1, metavar="N")
MODE = Option("--mode-x", "a", "a mode", choices=("a", "b"))


def test_dest_and_value():
    assert RATE.dest == "attn_rate" and COUNT.value({}) == 2 and COUNT.value({"count": 5}) == 5
    assert own_values([RATE, COUNT], {"count": 3, "other": 1}) == {"attn_rate": None, "count": 3}


@pytest.mark.parametrize("opt,value,message", [
    (RATE, 1.0, "--attn-rate 1.0: must be below 1"), (RATE, -0.5, "--attn-rate -0.5: must be >= 0"),
    (RATE, float("nan"), "--attn-rate nan: must be a finite number"), (COUNT, 0, "--count 0: must be >= 1"),
    (COUNT, True, "--count True: must be a finite number"), (MODE, "c", "--mode-x 'c': choose from a, b")])
def test_a_value_out_of_bounds_is_one_line(opt, value, message):
    with pytest.raises(UserError) as e:
        opt.check(value)
    assert str(e.value) == message


def test_allowed_values_pass():
    RATE.check(None)  # its default: "as another option says"
    RATE.check(0.0)
    COUNT.check(10**9)
    MODE.check("b")
    check_options([RATE, COUNT, MODE], {"count": 4})


def test_add_to_gives_the_flag_its_type_default_and_choices():
    p = argparse.ArgumentParser()
    for opt in (RATE, COUNT, MODE):
        opt.add_to(p)
    args = p.parse_args(["--count", "7", "--mode-x", "b"])
    assert (args.attn_rate, args.count, args.mode_x) == (None, 7, "b")
    with pytest.raises(SystemExit):
        p.parse_args(["--mode-x", "c"])
