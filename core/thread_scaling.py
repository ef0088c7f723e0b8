"""How a rank's compute terms speed up with its threads (``shgcn-train --threads T``): measured per kernel, or
Amdahl's law from assumed fractions.

The compute model (:class:`.machine.ComputeModel`) has four terms (spmm, dense, elem, const). Without
measurements each term's time on T threads is its time on one times ``(1 - f) + f / T`` (Amdahl, ``f`` the
term's parallel fraction): every thread a full core's worth. Issue 52 measured that wrong on a 16-core machine
(the dense products slower at every T above 2, the SpMM and elementwise kernels flat), so a compute-model file
may carry the measured figure instead::

    "threads": {"source": "...", "speedup": {"spmm": {"2": 1.8, "4": 3.1, "8": 4.9, "16": 6.0},
                                            "dense": {...}, "elem": {...}}}

each term's speedup over T = 1 at the thread counts measured, written by
``python -m benchmarks.training.threads_sweep STORE --fit FILE`` (the geometric mean over GCN, GIN, SAGE and
GAT, full batch and mini-batch). A term's speedup at T is interpolated linearly in log T between the measured
counts, and held at the last measured value beyond the largest (no extrapolated gain: more threads than were
measured are assumed to give nothing more); a term the figure does not list keeps Amdahl's law. Parallel
efficiency is speedup / T. Fit it on a machine with the cores to spare (at least the T the predictions are for).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import UserError

TERMS = ("spmm", "dense", "elem", "const")


@dataclass(frozen=True)
class ThreadScaling:
    """Measured speedups over one thread, per compute term: ``points[i]`` the (T, speedup) pairs of term
    ``TERMS[i]``, T ascending (T = 1, speedup 1, implied); empty: Amdahl's law for that term."""

    points: tuple[tuple[tuple[int, float], ...], ...] = ((), (), (), ())
    source: str = ""

    def speedup(self, term: int, threads: int, fraction: float) -> float:
        """Term ``term``'s speedup on ``threads`` threads: the measured curve, else Amdahl with ``fraction``."""
        t = max(1, int(threads))
        pts = self.points[term]
        if not pts:
            return 1.0 / ((1 - fraction) + fraction / t)
        ts = np.log([1.0, *(float(p[0]) for p in pts)])
        ss = np.array([1.0, *(float(p[1]) for p in pts)])
        return float(np.interp(np.log(t), ts, ss))  # np.interp holds the end values beyond the range

    def slowdown(self, threads: int, fractions: tuple[float, ...]) -> np.ndarray:
        """(4,) each term's time on ``threads`` threads over its time on one."""
        return np.array([1.0 / self.speedup(i, threads, fractions[i]) for i in range(len(TERMS))])

    def to_json(self) -> dict:
        speed = {TERMS[i]: {str(t): s for t, s in pts} for i, pts in enumerate(self.points) if pts}
        return {"source": self.source, "speedup": speed}


def amdahl_slowdown(threads: int, fractions: tuple[float, ...]) -> np.ndarray:
    """(4,) Amdahl's ``(1 - f) + f / T`` per term (no measured figure)."""
    f = np.asarray(fractions, float)
    return (1 - f) + f / max(1, int(threads))


def scaling_from_json(d: object, where: str = "compute model") -> ThreadScaling:
    """A :class:`ThreadScaling` from a compute-model file's ``threads`` entry, every figure checked: a term of
    :data:`TERMS`, thread counts whole numbers above 1, speedups finite and above 0."""
    speed = d.get("speedup") if isinstance(d, dict) else None
    if not isinstance(speed, dict):
        raise UserError(f"{where}: 'threads' must be an object with 'speedup': {{term: {{T: speedup}}}}")
    points: list[tuple[tuple[int, float], ...]] = [(), (), (), ()]
    for term, curve in speed.items():
        if term not in TERMS or not isinstance(curve, dict):
            raise UserError(f"{where}: threads speedup of {term!r}: a term is one of {', '.join(TERMS)}, "
                            "its curve an object {T: speedup}")
        pts = []
        for t, s in curve.items():
            try:
                t_, s_ = int(t), float(s)
            except (TypeError, ValueError):
                t_, s_ = 0, float("nan")
            if str(t).strip() != str(t_) or t_ < 2 or not np.isfinite(s_) or s_ <= 0:
                raise UserError(f"{where}: threads speedup of {term!r} at {t!r}: {s!r}; T a whole number above 1, "
                                "the speedup finite and above 0")
            pts.append((t_, s_))
        points[TERMS.index(term)] = tuple(sorted(pts))
    return ThreadScaling(tuple(points), str(d.get("source", "")) if isinstance(d, dict) else "")
