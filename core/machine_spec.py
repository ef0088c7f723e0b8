"""The values of a machine's spec string (``pipeline simulate --machine ranks=48,inter=1.5us:12GB/s,link=12.5GB/s``,
:func:`shgcn.core.machine.machine_from_spec`): rates, times, counts and paths, each checked, a bad one a
:class:`~.errors.UserError` naming its ``key=value``."""

from __future__ import annotations

import math
import re

from .errors import UserError
from .machine_check import MAX_PER_NODE

_UNIT = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}
_TIME = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


_NUMBER = r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"


def rate(text: str, item: str = "") -> float:
    """``12GB/s`` -> bytes per second; ``100Gb/s`` -> bits / 8; finite and above 0."""
    m = re.fullmatch(rf"({_NUMBER})\s*([kKmMgGtT]?)([bB])/s", text.strip())
    if m is None:
        raise UserError(f"machine spec: {item or text!r}: {text!r} is not a rate like 12GB/s or 100Gb/s")
    rate = float(m.group(1)) * _UNIT[m.group(2).lower()] / (8 if m.group(3) == "b" else 1)
    if not (math.isfinite(rate) and rate > 0):
        none = " (no link: link=none)" if item.startswith("link") else ""
        raise UserError(f"machine spec: {item or text!r}: the rate {text!r} must be finite and above 0{none}")
    return rate


def time(text: str, item: str = "") -> float:
    """``1.5us`` -> seconds; finite and >= 0."""
    m = re.fullmatch(rf"({_NUMBER})\s*(s|ms|us|µs|ns)", text.strip())
    if m is None:
        raise UserError(f"machine spec: {item or text!r}: {text!r} is not a time like 1.5us")
    t = float(m.group(1)) * _TIME[m.group(2)]
    if not math.isfinite(t):
        raise UserError(f"machine spec: {item or text!r}: the time {text!r} must be finite")
    return t


def count(value: str, item: str) -> int:
    if re.fullmatch(r"[0-9]{1,8}", value.strip()) is None or not 1 <= int(value) <= MAX_PER_NODE:
        raise UserError(f"machine spec: {item!r}: must be a whole number from 1 to {MAX_PER_NODE:,}")
    return int(value)


def path(text: str, item: str) -> tuple[float, float, float | None]:
    """``LATENCY:RATE[:OVERHEAD]`` (``1us:12GB/s:0.14us``) -> (alpha s, beta s/byte, overhead s or None: without
    one every message a full latency)."""
    lat, _, rest = text.partition(":")
    r, _, over = rest.partition(":")
    return time(lat, item), 1.0 / rate(r, item), time(over, item) if over else None


def message_rate(value: str, item: str) -> float | None:
    """``32.4M/s`` (or ``32.4e6``) -> messages/s, finite and above 0; ``none`` -> None."""
    if value == "none":
        return None
    m = re.fullmatch(rf"({_NUMBER})\s*([kKmMgG]?)(?:/s)?", value)
    r = float(m.group(1)) * _UNIT[m.group(2).lower()] if m else math.nan
    if not (math.isfinite(r) and r > 0):
        raise UserError(f"machine spec: {item!r}: {value!r} is not a message rate above 0 like 32.4M/s (or none)")
    return r
