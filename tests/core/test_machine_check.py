"""Every figure of a ``--machine`` is bounded (issue 51, item 5): a spec's malformed, zero, negative, infinite or
NaN value, a machine file that is a FIFO, a device, a JSON list or holds a count of 0, is one line naming the bad
part; and a property test over the spec grammar: any spec is a machine whose figures a machine can have, or a
UserError, never another exception."""

import json
import math
import os

import pytest
from helpers.costs import machine
from hypothesis import given, settings
from hypothesis import strategies as st

from shgcn.core.errors import UserError
from shgcn.core.machine import Machine, machine_from_json, machine_from_spec, machine_of, presets
from shgcn.core.machine_check import MAX_PER_NODE

COUNT = f"must be a whole number from 1 to {MAX_PER_NODE:,}"


@pytest.mark.parametrize("spec, line", [
    ("link=0GB/s", "machine spec: 'link=0GB/s': the rate '0GB/s' must be finite and above 0 (no link: link=none)"),
    ("link=1e400GB/s", "machine spec: 'link=1e400GB/s': the rate '1e400GB/s' must be finite and above 0 (no link: "
                       "link=none)"),
    ("inter=1us:0Gb/s", "machine spec: 'inter=1us:0Gb/s': the rate '0Gb/s' must be finite and above 0"),
    ("intra=1..5us:1GB/s", "machine spec: 'intra=1..5us:1GB/s': '1..5us' is not a time like 1.5us"),
    ("sync=1e999s", "machine spec: 'sync=1e999s': the time '1e999s' must be finite"),
    ("compute=this*-1", "machine spec: 'compute=this*-1': the compute factor -1.0 must be from 1e-06 to 1e+06"),
    ("compute=this*nan", "machine spec: 'compute=this*nan': the compute factor nan must be from 1e-06 to 1e+06"),
    ("compute=this*0", "machine spec: 'compute=this*0': the compute factor 0.0 must be from 1e-06 to 1e+06"),
    # magnitudes bounded (issue 63: 1e308 printed 310-digit epochs and a negative comm ms, rc 0)
    ("compute=this*1e308", "machine spec: 'compute=this*1e308': the compute factor 1e+308 must be from 1e-06 to "
                           "1e+06"),
    ("inter=1e308s:1GB/s", "machine spec 'inter=1e308s:1GB/s': inter.alpha 1e+308: must be finite, from 0 to 3600"),
    ("compute=this*x", "machine spec: 'compute=this*x': the factor 'x' is not a number (compute=this*1.5)"),
    ("ranks=", f"machine spec: 'ranks=': {COUNT}"),
    ("ranks=abc", f"machine spec: 'ranks=abc': {COUNT}"),
    ("ranks=1e3", f"machine spec: 'ranks=1e3': {COUNT}"),
    ("cores=99999999999", f"machine spec: 'cores=99999999999': {COUNT}"),
    ("name=", "machine spec: 'name=': name the machine"),
])
def test_a_bad_spec_value_is_one_line_naming_it(spec, line):
    with pytest.raises(UserError) as e:
        machine_from_spec(spec, base=machine())
    assert str(e.value) == line


def test_a_machine_file_is_checked_before_and_after_it_is_read(tmp_path):
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)  # read_text would block
    zero = tmp_path / "zero.json"
    zero.symlink_to("/dev/zero")  # read_text would never end
    special = "not a regular file (a directory, FIFO or device): write the machine to a file"
    for path in (fifo, zero, tmp_path):
        with pytest.raises(UserError) as e:
            machine_of(f"{path}.json" if path == tmp_path else str(path))
        want = f"--machine {tmp_path}.json: cannot read the machine file" if path == tmp_path else \
            f"--machine {path}: {special}"
        assert str(e.value).startswith(want)
    lst = tmp_path / "list.json"
    lst.write_text("[1, 2]")
    with pytest.raises(UserError) as e:
        machine_of(str(lst))
    assert str(e.value) == (f"--machine {lst}: not a machine description (a JSON list, not an object with name, "
                            "ranks_per_node, intra, inter, cores_per_node and compute)")


@pytest.mark.parametrize("change, line", [
    ({"ranks_per_node": 0}, f"ranks_per_node 0: {COUNT}"),
    ({"ranks_per_node": 1.5}, "not a machine description (ValueError: 1.5 is not a whole number)"),
    ({"cores_per_node": 1e20}, f"cores_per_node 100000000000000000000: {COUNT}"),
    ({"link": {"rate": 0}}, "link.rate 0.0: must be finite and at least 0.001 bytes/s (no link: leave it out)"),
    ({"inter": {"alpha": -1e-6, "beta": 1e-10}}, "inter.alpha -1e-06: must be finite, from 0 to 3600"),
    ({"inter": {"alpha": 1e308, "beta": 1e-10}}, "inter.alpha 1e+308: must be finite, from 0 to 3600"),  # inf, nan
    ({"intra": {"alpha": 1e-6, "beta": float("nan")}}, "intra.beta nan: must be finite, from 0 to 1000"),
    # one set of rules with the spec: a number as a string, a factor of 0 or of 1e308 refused alike
    ({"intra": {"alpha": 1e-6, "beta": "nan"}}, "not a machine description (ValueError: 'nan' is not a number)"),
    ({"intra": {"alpha": "1e-6", "beta": 1e-9}}, "not a machine description (ValueError: '1e-6' is not a number)"),
    ({"compute": {"scale_of": "this", "factor": -2}}, "compute.factor: the compute factor -2.0 must be from 1e-06"),
    ({"compute": {"scale_of": "this", "factor": 0}}, "compute.factor: the compute factor 0.0 must be from 1e-06"),
    ({"compute": {"scale_of": "this", "factor": 1e308}}, "compute.factor: the compute factor 1e+308 must be from"),
    ({"compute": {"spmm": 1e308, "dense": 1, "elem": 1, "const": 1}}, "compute.spmm 1e+308: must be finite, from 0"),
    ({"compute": {"spmm": 1, "dense": 1, "elem": 1, "const": 1, "parallel": {"spmm": 2, "dense": 1, "elem": 1,
                                                                           "const": 0}}},
     "compute.parallel.spmm 2.0: must be a fraction from 0 to 1"),
    ({"oversubscribed_sync": 3}, "not a machine description (AttributeError: 'int' object has no attribute 'get')"),
])
def test_a_machine_file_with_a_bad_figure_is_one_line_naming_the_field(tmp_path, change, line):
    d = {**_preset_json("infiniband"), **change}
    f = tmp_path / "m.json"
    f.write_text(json.dumps(d))
    with pytest.raises(UserError) as e:
        machine_of(str(f))
    assert str(e.value).startswith(f"--machine {f}: {line}") and "\n" not in str(e.value)


def _preset_json(name: str) -> dict:
    from shgcn.core.machine import _DIR

    return json.loads((_DIR / f"{name}.json").read_text())


def _sound(m: Machine) -> bool:
    c = m.compute
    times = (m.intra.alpha, m.intra.beta, m.inter.alpha, m.inter.beta, m.oversubscribed_sync, c.spmm, c.dense,
             c.elem, c.const)
    return (1 <= m.ranks_per_node <= MAX_PER_NODE and 1 <= m.cores_per_node <= MAX_PER_NODE
            and all(math.isfinite(x) and x >= 0 for x in times)
            and (m.link_rate is None or (math.isfinite(m.link_rate) and m.link_rate > 0)))


NUMBERS = st.one_of(st.integers(-5, 10**12).map(str), st.floats(allow_nan=True, allow_infinity=True).map(repr),
                    st.sampled_from(["", ".", "1..5", "1e3", "-0", "nan", "inf", "1e400", ".5", "5."]),
                    st.text(max_size=6))
RATES = st.builds(lambda x, u, b: f"{x}{u}{b}/s", NUMBERS, st.sampled_from(["", "k", "M", "G", "T", "x"]),
                  st.sampled_from(["B", "b"])) | st.text(max_size=8)
TIMES = st.builds(lambda x, u: f"{x}{u}", NUMBERS, st.sampled_from(["s", "ms", "us", "µs", "ns", "", "h"]))
VALUES = {"ranks": NUMBERS, "cores": NUMBERS, "link": RATES | st.just("none"),
          "intra": st.builds(lambda t, r: f"{t}:{r}", TIMES, RATES), "inter": st.builds(lambda t, r: f"{t}:{r}", TIMES, RATES),
          "sync": TIMES, "compute": st.builds(lambda n, f: f"{n}*{f}", st.sampled_from(["this", "vax", ""]), NUMBERS),
          "name": st.text(max_size=5)}
GOOD_RATE = st.builds(lambda x, u: f"{x}{u}B/s", st.floats(1e-3, 1e6).map(repr), st.sampled_from(["", "k", "M", "G"]))
GOOD_TIME = st.builds(lambda x, u: f"{x}{u}", st.floats(0, 1e3).map(repr), st.sampled_from(["s", "ms", "us", "ns"]))
GOOD = st.one_of(st.integers(1, 10**6).map(lambda k: f"ranks={k}"), st.integers(1, 10**6).map(lambda k: f"cores={k}"),
                 GOOD_RATE.map(lambda r: f"link={r}"), st.builds(lambda t, r: f"inter={t}:{r}", GOOD_TIME, GOOD_RATE),
                 GOOD_TIME.map(lambda t: f"sync={t}"), st.floats(1e-3, 1e3).map(lambda f: f"compute=this*{f!r}"))
ITEMS = st.one_of(GOOD, *(st.builds(lambda k, v: f"{k}={v}", st.just(k), s) for k, s in VALUES.items()),
                  st.text(max_size=10))


@settings(max_examples=300, deadline=None)
@given(st.lists(GOOD, max_size=3), st.lists(ITEMS, max_size=3))
def test_any_spec_is_a_sound_machine_or_one_line(good, items):
    spec = ",".join(good + items)
    try:
        m = machine_from_spec(spec, base=machine())
    except UserError as e:
        assert "\n" not in str(e)
        return
    assert _sound(m), m


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(["ranks_per_node", "cores_per_node", "link", "inter", "intra", "compute",
                                        "oversubscribed_sync", "name"]),
                       st.one_of(st.none(), st.integers(-3, 2**70), st.floats(), st.text(max_size=4),
                                 st.lists(st.integers(), max_size=2),
                                 st.dictionaries(st.sampled_from(["rate", "alpha", "beta", "seconds", "scale_of",
                                                                  "factor"]),
                                                 st.one_of(st.floats(), st.integers(-2, 5), st.just("this")),
                                                 max_size=3)),
                       max_size=4))
def test_any_machine_json_is_a_sound_machine_or_one_line(change):
    try:
        m = machine_from_json({**_preset_json("paper"), **change}, "--machine m.json")
    except UserError as e:
        assert "\n" not in str(e)
        return
    assert _sound(m), m


def test_the_presets_are_sound():
    assert all(_sound(m) for m in presets().values())
