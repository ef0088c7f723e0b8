"""How ``shp`` is built (the steps of :mod:`..shp`): the best start, the
surrogate refinements, and the stochastic hypergraph rounds, each judged by
one validation objective and kept only when it lowers it."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from shgcn.core.sample import BUILD, VALIDATION, Sampler

from ...metrics.batches import BatchSet, expected_volume_node
from ...metrics.hypergraph import BatchNets, Hypergraph, batch_nets, concat_nets, hoeffding_nets, stochastic_hypergraph
from ...runtime.child import report
from ...runtime.monitor import peak_rss_mib
from ..base import PartitionConfig
from ..kahypar import kahypar_partition, kahypar_within
from ..wkm1 import refine_weighted
from .config import SHPConfig
from .inclusion import inclusion
from .surrogate import chord_anchors, inclusion_surrogate, tangent_anchors

log = logging.getLogger(__name__)

START_ORDER = ("gp", "hp")  # the order starts are scored in (ties keep the first)


@dataclass
class SHPResult:
    """The partition and the record of how it was found."""

    part: np.ndarray
    seconds: float
    construction: str
    required_nets: int
    nets_sampled: int
    nets_kept: int
    batches_equivalent: float
    rounds: list[dict] = field(default_factory=list)
    validation: str = ""
    chosen: str = ""

    def record(self, scfg: SHPConfig) -> dict:
        """What the store's ``shp`` attribute keeps (JSON)."""
        return {"sampler": scfg.sampler, "batch_size": scfg.batch_size, "theta": scfg.theta, "delta": scfg.delta,
                "construction": self.construction, "required_nets": self.required_nets,
                "nets_sampled": self.nets_sampled, "nets_after_merging": self.nets_kept,
                "batches_equivalent": self.batches_equivalent, "batches_override": scfg.batches,
                "validation": self.validation, "validation_stream": None if scfg.closed_form else VALIDATION,
                "validation_batches": 0 if scfg.closed_form else scfg.resolved_validation_batches(),
                "build_stream": BUILD, "chosen": self.chosen,
                "rounds": self.rounds, "seconds": round(self.seconds, 3), "time_budget": scfg.time_budget}


def column_nets(a_csc: sp.csc_matrix, q: float, seed: int, rounds: range) -> BatchNets:
    """Per round, one net per column j: j plus each other row of column j
    with probability q (single-pin nets dropped, but counted in ``total``)."""
    n = a_csc.shape[0]
    cols = np.repeat(np.arange(n, dtype=np.int64), np.diff(a_csc.indptr))
    rows = a_csc.indices.astype(np.int64)
    diag = rows == cols
    parts = []
    for t in rounds:  # a loop over rounds, vectorized over all nonzeros
        keep = diag | (np.random.default_rng([seed, BUILD, 1_000_000 + t]).random(rows.size) < q)
        sizes = np.bincount(cols[keep], minlength=n)
        net_keep = sizes >= 2
        ptr = np.zeros(int(net_keep.sum()) + 1, np.int64)
        np.cumsum(sizes[net_keep], out=ptr[1:])
        parts.append(BatchNets(columns=np.flatnonzero(net_keep).astype(np.int64), ptr=ptr,
                               pins=rows[keep][np.repeat(net_keep, sizes)], total=n))
    return concat_nets(parts)


class Validation:
    """The objective shp chooses its steps by: the expected mini-batch volume
    of a partition, exact for the node sampler, else the mean over ``batches``
    batches of the VALIDATION stream (the same batches for every step; never
    the HELDOUT batches that are reported)."""

    def __init__(self, a: sp.csr_matrix, sampler: Sampler, parts: int, batches: int):
        self.a, self.sampler, self.parts = a, sampler, parts
        self.closed = sampler.cfg.spec.closed_form
        self.description = "closed form" if self.closed else f"{batches} batches of stream {VALIDATION}"
        if not self.closed:
            self.set = BatchSet(sp.csc_matrix(a), sampler.batches(range(batches), VALIDATION))

    def __call__(self, part: np.ndarray) -> float:
        if self.closed:
            return expected_volume_node(self.a, part, self.parts, self.sampler.cfg.size)[0]
        return self.set.mean_volume(part, self.parts)


class _Steps:
    """The incumbent and the record of every step (each judged by the
    validation objective, kept only when it lowers it)."""

    def __init__(self, objective: Validation, t0: float, budget: float | None = None):
        self.objective, self.t0, self.budget = objective, t0, budget
        self.rounds: list[dict] = []
        self.best: np.ndarray | None = None
        self.best_vol = float("inf")
        self.best_step = ""

    def offer(self, step: str, part: np.ndarray, tr: float, **extra: Any) -> float:
        vol = self.objective(part)
        kept = vol < self.best_vol
        if kept:
            self.best, self.best_vol = part.astype(np.int32), vol
            self.best_step = f"{step} {extra['model']}" if "model" in extra else step
        self.rounds.append({"step": step, **extra, "seconds": round(time.perf_counter() - tr, 3),
                            "validation_volume": vol, "kept": kept, "peak_rss_mib": peak_rss_mib()})
        log.info("shp %s: validation volume %.1f%s", step, vol, " (kept)" if kept else "")
        self.tell(f"{step}: {vol:,.0f}")
        return vol

    def stopped(self, step: str, tr: float, **extra: Any) -> None:
        """Record a step the time budget stopped before it finished (nothing to score)."""
        self.rounds.append({"step": step, **extra, "seconds": round(time.perf_counter() - tr, 3),
                            "validation_volume": None, "kept": False, "stopped": "time budget",
                            "peak_rss_mib": peak_rss_mib()})
        log.info("shp %s: stopped at the time budget of %.1f s", step, self.budget or 0.0)
        self.tell(f"{step}: stopped at the time budget")

    def deadline(self) -> float | None:
        """The :func:`time.monotonic` time the budget ends (None: no budget)."""
        return None if self.budget is None else time.monotonic() + self.budget - self.elapsed()

    def tell(self, doing: str, next_s: float | None = None) -> None:
        """The build's progress line (:func:`...runtime.child.report`): what shp does or did, the best
        validation volume so far and where it came from, the time spent and, when known, the next step's and
        the budget's time left."""
        best = f"best {self.best_vol:,.0f} ({self.best_step})" if self.best is not None else "no partition yet"
        left = [f"about {next_s:.0f} s for this step"] if next_s is not None else []
        if self.budget is not None:
            left.append(f"at most {max(0.0, self.budget - self.elapsed()):.0f} s left")
        report("; ".join([doing, f"validation volume {best}", f"{self.elapsed():.0f} s", *left]))

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def part(self) -> np.ndarray:
        """The incumbent."""
        if self.best is None:
            raise RuntimeError("shp: no step was scored")
        return self.best


def _fits(budget: float | None, elapsed: float, predicted: float) -> bool:
    return budget is None or elapsed + predicted <= budget


def build_shp(a: sp.csr_matrix, adj: sp.csr_matrix, pcfg: PartitionConfig, scfg: SHPConfig,
              starts: Mapping[str, np.ndarray] | None = None, weights: np.ndarray | None = None) -> SHPResult:
    """Partition Â for mini-batch training (see :mod:`..shp`).

    Parameters
    ----------
    a : (n, n) csr_matrix, Â
    adj : (n, n) csr_matrix, the graph the sampler walks on
    pcfg : parts, eps, seed, threads
    scfg : shp's options
    starts : partitions by model name, (n,) int each (``gp`` and ``hp`` when
        the build computed them); METIS is run when there are none
    weights : (n,) int vertex weights to balance (default: nonzeros of the row of Â)
    """
    b = _Build(a, adj, pcfg, scfg, weights)
    if scfg.batches is not None:  # the paper's model as is (scored, not chosen)
        return b.paper_model()
    names, given = b.score_starts(dict(starts or {}))
    b.surrogate(names, given)
    return b.rounds()


class _Build:
    """The state the steps share: Â, the sampler, the weights, the incumbent."""

    def __init__(self, a: sp.csr_matrix, adj: sp.csr_matrix, pcfg: PartitionConfig, scfg: SHPConfig,
                 weights: np.ndarray | None = None):
        self.t0 = time.perf_counter()
        scfg.check()
        self.a, self.pcfg, self.scfg = a, pcfg, scfg
        self.n, self.p = a.shape[0], pcfg.parts
        self.sampler = Sampler(adj, scfg.sampler_config(self.n, pcfg.seed))
        self.construction = scfg.resolved_construction()
        self.required = hoeffding_nets(self.p, scfg.theta, scfg.delta)
        self.a_csc = sp.csc_matrix(a)
        self.weights = np.diff(a.indptr).astype(np.int64) if weights is None else np.asarray(weights, np.int64)
        self.steps = _Steps(Validation(a, self.sampler, self.p, scfg.resolved_validation_batches()), self.t0,
                            scfg.time_budget)
        self.B = self.sampler.cfg.size
        self.refine_s = 0.0

    def partition_here(self, hg: Hypergraph, initial: np.ndarray | None = None) -> np.ndarray:
        """Mt-KaHyPar on ``hg`` in this process (V-cycles from ``initial``, else from scratch)."""
        c, s = self.pcfg, self.scfg
        return kahypar_partition(hg, c.parts, c.eps, c.seed, c.threads, s.engine, initial=initial, vcycles=s.vcycles)

    def partition(self, hg: Hypergraph, initial: np.ndarray | None = None) -> np.ndarray | None:
        """:meth:`partition_here`, or with a time budget in a child process stopped where the budget ends
        (None then)."""
        c, s = self.pcfg, self.scfg
        if s.time_budget is None:
            return self.partition_here(hg, initial)
        return kahypar_within(hg, c.parts, c.eps, c.seed, c.threads, s.engine, initial=initial, vcycles=s.vcycles,
                              deadline=self.steps.deadline(), limit=c.memory_limit)

    def refine(self, hg: Hypergraph, start: np.ndarray, pass_seed: int = 0) -> np.ndarray | None:
        """``start`` refined on ``hg``: weighted label propagation (``--shp-refiner lp``, :mod:`..wkm1`) or
        Mt-KaHyPar's V-cycles (``vcycles``, ``fast-vcycles``; None when the time budget stopped them);
        ``pass_seed`` varies the order of lp's passes between calls."""
        if self.scfg.refiner != "lp":
            return self.partition(hg, start)
        part, info = refine_weighted(hg, start, self.p, self.pcfg.eps, self.pcfg.seed * 1009 + pass_seed)
        log.debug("shp: lp %s", info)
        return part

    def draw(self, lo: int, hi: int) -> BatchNets:
        """Nets of round units lo..hi-1, in groups."""
        size = max(1, -(-(hi - lo) // 8))
        groups = [range(k, min(k + size, hi)) for k in range(lo, hi, size)]
        if self.construction == "columns":
            q = (self.B - 1) / max(self.n - 1, 1)
            return concat_nets([column_nets(self.a_csc, q, self.pcfg.seed, g) for g in groups])
        return concat_nets([batch_nets(self.a_csc, self.sampler.batches(g, BUILD)) for g in groups])

    def result(self, nets_sampled: int, nets_kept: int, equiv: float) -> SHPResult:
        st = self.steps
        return SHPResult(st.part(), time.perf_counter() - self.t0, self.construction, self.required, nets_sampled,
                         nets_kept, equiv, st.rounds, st.objective.description, st.best_step)

    def paper_model(self) -> SHPResult:
        """``--batches N``: N batches, one partition from scratch."""
        tr = time.perf_counter()
        batches = int(self.scfg.batches or 0)
        nets = self.draw(0, batches)
        hg = stochastic_hypergraph(nets, self.weights)
        part = self.partition_here(hg)  # the paper's model as it is: one partition, whatever the budget
        self.steps.offer("batches", part, tr, batches=batches, nets_sampled=nets.total, nets_kept=hg.n_nets)
        return self.result(nets.total, hg.n_nets, float(batches))

    def score_starts(self, given: dict) -> tuple[list[str], dict]:
        """1. every start scored; the best is the incumbent (METIS when none is given)."""
        if not given:
            from ..gp import metis_partition

            tr = time.perf_counter()
            given["gp"] = metis_partition(self.a, self.p, self.pcfg.eps, self.pcfg.seed, self.weights) if self.p > 1 \
                else np.zeros(self.n, np.int32)
            log.info("shp: no start given, METIS took %.1f s", time.perf_counter() - tr)
        names = [m for m in START_ORDER if m in given] + sorted(m for m in given if m not in START_ORDER)
        for name in names:
            self.steps.offer("start", np.asarray(given[name]), time.perf_counter(), model=name)
        return names, given

    def surrogate(self, names: list[str], given: dict) -> None:
        """2. refine the first start on the surrogate, tangent passes; then (time allowing) the other
        starts and a partition from scratch, and tangent passes again if one of them won."""
        steps, scfg = self.steps, self.scfg
        tr = time.perf_counter()
        steps.tell("the inclusion surrogate: sampling inclusion probabilities, then refining the starts")
        self.inc = inclusion(self.a, self.sampler)
        hg = inclusion_surrogate(self.inc, self.weights, chord_anchors(self.inc, self.n))
        start_vol = {r["model"]: r["validation_volume"] for r in steps.rounds}
        vcycles = scfg.refiner != "lp"  # V-cycles: from hp first (measured), lp: from the best start
        order = sorted(names, key=lambda m: (vcycles and m != "hp", start_vol[m]))
        if self.offer(f"surrogate from {order[0]}", self.refine(hg, np.asarray(given[order[0]])), tr,
                      nets=hg.n_nets, pins=int(hg.pins.size)) is None:
            return
        self.refine_s = time.perf_counter() - tr
        self.tangent_passes("")
        incumbent_step = steps.best_step
        for name in order[1:]:
            if not _fits(scfg.time_budget, steps.elapsed(), self.refine_s):
                log.info("shp: no time left to refine from %s", name)
                break
            tr = time.perf_counter()
            if self.offer(f"surrogate from {name}", self.refine(hg, np.asarray(given[name])), tr,
                          nets=hg.n_nets, pins=int(hg.pins.size)) is None:
                return
        if scfg.scratch and vcycles and _fits(scfg.time_budget, steps.elapsed(), 2 * self.refine_s):  # about twice a refinement
            tr = time.perf_counter()
            if self.offer("surrogate from scratch", self.partition(hg), tr, nets=hg.n_nets) is None:
                return
        if steps.best_step != incumbent_step:
            self.tangent_passes("again ")

    def offer(self, step: str, cand: np.ndarray | None, tr: float, **extra: Any) -> float | None:
        """Score ``cand`` as ``step`` (:meth:`_Steps.offer`): its validation volume, or None when the time
        budget stopped it (``cand`` None)."""
        if cand is None:
            self.steps.stopped(step, tr, **extra)
            return None
        return self.steps.offer(step, cand, tr, **extra)

    def tangent_passes(self, label: str) -> None:
        steps, scfg = self.steps, self.scfg
        for t in range(scfg.tangent_passes):
            if not _fits(scfg.time_budget, steps.elapsed(), self.refine_s):
                log.info("shp: no time left for a tangent pass")
                return
            tr = time.perf_counter()
            before, incumbent = steps.best_vol, steps.part()
            thg = inclusion_surrogate(self.inc, self.weights, tangent_anchors(self.inc, self.n, incumbent))
            if self.offer(f"tangent {label}{t}", self.refine(thg, incumbent, 1 + t), tr, nets=thg.n_nets,
                          pins=int(thg.pins.size)) is None:
                return
            if steps.best_vol > before * (1 - scfg.min_gain / 10):  # below 0.1%: the next pass will not pay
                return

    def rounds(self) -> SHPResult:
        """3. stochastic hypergraph rounds, stopped by the validation curve."""
        steps, scfg = self.steps, self.scfg
        unit = self.n if self.construction == "columns" else self.B
        first = max(1, -(-self.required // max(unit, 1)))
        nets_list: list[BatchNets] = []
        drawn, sampled, kept = 0, 0, 0
        last_round, previous = 0.0, float("inf")
        for r in range(scfg.max_rounds):
            # round 0 is predicted by the surrogate's refinement (no round has run yet); a round doubles the nets
            if not _fits(scfg.time_budget, steps.elapsed(), 2 * last_round if r else self.refine_s):
                log.info("shp: stopping before round %d, which would overrun the time budget of %.1f s", r,
                         scfg.time_budget)
                break
            tr = time.perf_counter()
            target = first * 2**r
            steps.tell(f"round {r} of at most {scfg.max_rounds} ({target:,} sampled units)",
                       2 * last_round if r else None)
            nets_list.append(self.draw(drawn, target))
            drawn = target
            nets = concat_nets(nets_list)
            nets_list = [nets]
            shg = stochastic_hypergraph(nets, self.weights)
            cand = self.refine(shg, steps.part(), 100 + r)
            sampled, kept = nets.total, shg.n_nets
            extra = {"units": target, "nets_sampled": nets.total, "nets_kept": shg.n_nets, "pins": int(shg.pins.size)}
            vol = self.offer(f"round {r}", cand, tr, **extra)
            if vol is None:
                break
            last_round = time.perf_counter() - tr
            gain = previous - vol  # what the last doubling of the nets bought
            if gain < scfg.min_gain * vol or vol - steps.best_vol > gain * (scfg.max_rounds - 1 - r):
                log.info("shp: the validation curve stops at round %d (gain %.1f, %.1f above the incumbent)", r,
                         gain, vol - steps.best_vol)
                break  # flat, or too far above the incumbent to reach it at this rate in the rounds left
            previous = vol
        equiv = drawn * (self.n / self.B) if self.construction == "columns" else float(drawn)
        return self.result(sampled, kept, equiv)
