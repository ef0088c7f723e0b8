"""The checks of a :class:`~.machine.Machine`'s figures (issue 51): whatever gave them (a preset, a machine
file, a ``--machine`` spec), every count, time, rate and compute coefficient is one a machine can have, or one
line names the field."""

from __future__ import annotations

import math
from typing import Any, TypeVar

from .errors import UserError

M = TypeVar("M", bound=Any)  # a shgcn.core.machine.Machine (not imported: machine imports this module)


def whole(x) -> int:
    """A JSON count: an integer (or an integral number), nothing else."""
    if isinstance(x, bool) or not isinstance(x, (int, float)) or x != int(x):
        raise ValueError(f"{x!r} is not a whole number")
    return int(x)


def number(x) -> float:
    """A JSON number (an integer or a float), nothing else: ``"1e-6"`` as a string is refused as the command
    line's spec would refuse it (one set of rules for both forms)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise ValueError(f"{x!r} is not a number")
    return float(x)


MAX_PER_NODE = 1 << 20  # ranks or cores of one node: beyond any machine, within what the model's arrays can count
MAX_SECONDS = 3600.0  # a latency, an overhead, a compute coefficient: an hour at most (1e308 printed 310 digits)
MAX_FACTOR = 1e6  # a fitted compute model scaled by at most a million, at least a millionth


def check_factor(f: float, where: str) -> float:
    """A compute model's scale factor (``compute=this*F``, or a machine file's ``compute.factor``): finite and
    from 1e-6 to 1e6, else one line."""
    if not (math.isfinite(f) and 1 / MAX_FACTOR <= f <= MAX_FACTOR):
        raise UserError(f"{where}: the compute factor {f!r} must be from 1e-06 to 1e+06")
    return f


def check_machine(m: M, where: str) -> M:
    """``m`` when every figure is one a machine can have - counts from 1 to :data:`MAX_PER_NODE`, latencies and
    per-byte costs finite and >= 0, a link rate finite and above 0, compute coefficients finite and >= 0,
    fractions in [0, 1] - else a :class:`UserError` naming ``where`` and the field."""
    def bad(field: str, value, want: str) -> UserError:
        return UserError(f"{where}: {field} {value!r}: must be {want}")

    for field, n in (("ranks_per_node", m.ranks_per_node), ("cores_per_node", m.cores_per_node)):
        if not 1 <= n <= MAX_PER_NODE:
            raise bad(field, n, f"a whole number from 1 to {MAX_PER_NODE:,}")
    c = m.compute
    figures = {"intra.alpha": m.intra.alpha, "intra.beta": m.intra.beta, "inter.alpha": m.inter.alpha,
               "inter.beta": m.inter.beta, "oversubscribed_sync.seconds": m.oversubscribed_sync,
               "compute.spmm": c.spmm, "compute.dense": c.dense, "compute.elem": c.elem, "compute.const": c.const}
    for field, x in figures.items():
        top = 1e3 if field.endswith("beta") else MAX_SECONDS  # beta: seconds a byte, 0.001 B/s the slowest path
        if not (math.isfinite(x) and 0 <= x <= top):
            raise bad(field, x, f"finite, from 0 to {top:g}")
    for field, ch in (("intra.overhead", m.intra), ("inter.overhead", m.inter)):
        o = getattr(ch, "overhead", None)
        if o is not None and not (math.isfinite(o) and 0 <= o <= MAX_SECONDS):
            raise bad(field, o, f"finite, from 0 to {MAX_SECONDS:g} seconds (every message a full alpha: leave it out)")
    if m.link_rate is not None and not (math.isfinite(m.link_rate) and m.link_rate >= 1e-3):
        raise bad("link.rate", m.link_rate, "finite and at least 0.001 bytes/s (no link: leave it out)")
    rate = getattr(m, "message_rate", None)
    if rate is not None and not (math.isfinite(rate) and rate >= 1e-3):
        raise bad("link.message_rate", rate, "finite and at least 0.001 messages/s (not modelled: leave it out)")
    from .contention import MODELS

    if getattr(m, "contention", MODELS[-1]) not in MODELS:
        raise bad("link.contention", m.contention, f"one of {', '.join(MODELS)}")
    for field, f in zip(("spmm", "dense", "elem", "const"), c.parallel):
        if not 0 <= f <= 1:
            raise bad(f"compute.parallel.{field}", f, "a fraction from 0 to 1")
    return m
