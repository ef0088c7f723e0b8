"""A machine spec's values (core/machine_spec.py): rates, times, counts, paths with an overhead and message rates,
each checked; a bad one names its key=value."""

import pytest

from shgcn.core import machine_spec as spec
from shgcn.core.errors import UserError


def test_the_values_by_hand():
    assert spec.rate("12GB/s") == 12e9 and spec.rate("100Gb/s") == 12.5e9
    assert spec.time("1.5us") == pytest.approx(1.5e-6) and spec.time("2ms") == pytest.approx(2e-3)
    assert spec.count("48", "ranks=48") == 48
    assert spec.path("1us:12GB/s", "inter=1us:12GB/s") == pytest.approx((1e-6, 1 / 12e9, None))
    a, b, o = spec.path("1us:12GB/s:0.14us", "inter=...")
    assert (a, o) == pytest.approx((1e-6, 0.14e-6)) and b == pytest.approx(1 / 12e9)
    assert spec.message_rate("32.4M/s", "msgrate=32.4M/s") == pytest.approx(32.4e6)
    assert spec.message_rate("32400000", "msgrate=32400000") == pytest.approx(32.4e6)
    assert spec.message_rate("none", "msgrate=none") is None


@pytest.mark.parametrize("call, match", [
    (lambda: spec.rate("12", "link=12"), "'link=12': '12' is not a rate"),
    (lambda: spec.time("1.5", "inter=1.5:1GB/s"), "is not a time like 1.5us"),
    (lambda: spec.count("0", "ranks=0"), "'ranks=0': must be a whole number"),
    (lambda: spec.path("1us:12GB/s:x", "inter=1us:12GB/s:x"), "'x' is not a time"),
    (lambda: spec.message_rate("0", "msgrate=0"), "'msgrate=0': '0' is not a message rate above 0"),
    (lambda: spec.message_rate("1e999", "msgrate=1e999"), "is not a message rate above 0"),
])
def test_a_bad_value_names_its_item(call, match):
    with pytest.raises(UserError, match=match):
        call()
