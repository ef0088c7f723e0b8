"""``shp``: partitioning for mini-batch training (the stochastic hypergraph model).

The paper's model: sample mini-batches, take the nets of every batch's
submatrix Â[V', V'] (one net per column of the batch, pins = the batch's
rows with a nonzero in it), merge them into one hypergraph, and partition it
with the connectivity-1 objective, whose value is then proportional to the
mean volume of the sampled batches: an estimate of the expected volume of a
random batch. Measured here, that alone needs hundreds of batches to beat
``hp`` and ``gp`` (benchmarks/RESULTS.md), so the build goes in steps, each
judged by one **validation objective** and kept only if it lowers it:

- node sampler: the exact expected volume (closed form, no sampling);
- edge and rw samplers: the mean volume over ``validation_batches`` batches
  of the VALIDATION seed stream, fixed for the whole build (every step is
  compared on the same batches).

The reported held-out volume (:mod:`.batch_quality`, HELDOUT stream) is
never used to build or to choose anything, so it measures the result
without selection bias. The steps:

1. **Best start**: every partition the build gives (``gp``, and ``hp`` when
   computed; METIS when none) is scored; the best is the incumbent, so shp
   is never worse than the best of them on the validation objective.
2. **Surrogate refinement**: Mt-KaHyPar V-cycles from the incumbent on a
   deterministic hypergraph whose connectivity-1 approximates the expected
   volume, built from the sampler's inclusion probabilities
   (:mod:`.inclusion`): P(j drawn) and, per nonzero (i, j) of Â, P(i and j
   drawn). Part k receives row j when j and one of the c_jk rows of
   column j in part k are drawn: ``P(j) (1 - prod_i (1 - q_ij))`` with
   q_ij = P(i, j) / P(j), a concave function of the rows' "hazard"
   x = sum -ln(1 - q_ij): linear (an edge cut weighted by P(i, j)) for
   columns with few rows in a part, saturated (connectivity) for hubs. Per
   column j with d_j other rows, one net {j} ∪ rows of j weighted alpha_j and
   d_j two-pin nets {j, i} weighted beta_ij give the cost alpha_j [c > 0] +
   sum beta_ij: the chord of the cost through one typical row and through
   ceil(d_j / 4) of them. For the node sampler the curve is exact (drawing
   without replacement) and q is the same for every row. The first
   refinement starts from ``hp`` when the build computed it (measured on
   ca-astroph and soc-slashdot0902: the surrogate refined from hp beats the
   surrogate refined from gp even where gp is the better start), else from
   the best start. Then, while the time budget allows: passes whose anchors
   are the tangents at the incumbent's own c_jk (a majorizer of the concave
   cost when q is uniform), refinements from the other starts, a partition
   of the surrogate from scratch, and tangent passes again if one of those
   won.
3. **Stochastic hypergraph rounds**: sampled nets (BUILD stream), the
   Hoeffding count ``(p-1)^2 / (2 theta^2) ln(2/delta)`` in the first round,
   doubling each round; each round refines the incumbent on the merged
   stochastic hypergraph. Sampling stops by the validation curve: when a
   round's candidate is not at least ``min_gain`` (1%) better than the
   previous round's (more nets no longer help), after ``max_rounds``, or
   before a round that would overrun ``time_budget`` (a round takes about
   twice the previous one; a build that also computes ``hp`` gives shp
   twice hp's time).

Net constructions for step 3: ``batches`` (the paper's: nets of whole sampled
batches) or ``columns`` (node sampler only, its default: for the node
sampler the rows of a batch are drawn independently of whether column j is
in it, so the net of column j in a batch that contains j is a draw of "j plus
each row of column j with probability (B-1)/(n-1)"; this draws that net for
every column in each round: the batch nets' distribution, with every column
represented equally often). Identical nets are merged into weighted nets.
With ``--batches N`` the paper's model is used as is: N batches, one
partition from scratch, no start, refinement or stopping rule (its result is
scored, not chosen).

Vertices that no net touches are isolated in the hypergraphs; the
partitioner places them by weight (nonzeros of the row, as ``hp``) under
the balance constraint.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from shgcn.store.sample import BUILD, VALIDATION, Sampler, SamplerConfig

from . import batch_quality
from ._rss import peak_rss_mib
from .errors import UserError
from .hypergraph import (
    BatchNets,
    Hypergraph,
    batch_nets,
    concat_nets,
    hoeffding_nets,
    merge_identical,
    stochastic_hypergraph,
)
from .inclusion import Inclusion, inclusion
from .partition import Inputs, PartitionConfig, Partitioner, kahypar_partition, register

log = logging.getLogger(__name__)

CONSTRUCTIONS = ("auto", "batches", "columns")
SURROGATE_SCALE = 1000  # integer net weights: expected rows x 1000 (relative to the mean P(j))
CHORD_DIVISOR = 4  # the surrogate is exact at c = 1 and c = ceil(d / CHORD_DIVISOR)
START_ORDER = ("gp", "hp")  # the order starts are scored in (ties keep the first)


@dataclass(frozen=True)
class SHPConfig:
    """Attributes: sampler; batch_size (0: 10% of n); walk_length (rw);
    theta, delta (Hoeffding); batches (override: exactly this many batches,
    one partition from scratch, no stopping rule); eval_batches (held-out
    batches, reported); validation_batches (edge, rw: batches of the
    VALIDATION stream shp chooses its steps with; 0: as many as
    eval_batches); construction (of the sampled nets); min_gain (stop the
    rounds when the validation curve gains less than this); max_rounds (of
    sampling); vcycles (per refinement); tangent_passes (at most, after the
    surrogate); scratch (also partition the surrogate from scratch);
    time_budget (seconds for the whole shp build; None: none)."""

    sampler: str = "node"
    batch_size: int = 0
    walk_length: int = 2
    theta: float = 0.1
    delta: float = 0.5
    batches: int | None = None
    eval_batches: int = 200
    construction: str = "auto"
    min_gain: float = 0.01
    max_rounds: int = 4
    vcycles: int = 2
    time_budget: float | None = None
    validation_batches: int = 0
    tangent_passes: int = 2
    scratch: bool = True

    def sampler_config(self, n: int, seed: int) -> SamplerConfig:
        size = self.batch_size or max(1, n // 10)
        return SamplerConfig(kind=self.sampler, size=size, walk_length=self.walk_length, seed=seed)

    def resolved_construction(self) -> str:
        if self.construction not in CONSTRUCTIONS:
            raise UserError(f"--shp-construction {self.construction!r}: choose from {', '.join(CONSTRUCTIONS)}")
        if self.construction == "auto":
            return "columns" if self.sampler == "node" and self.batches is None else "batches"
        if self.construction == "columns" and self.sampler != "node":
            raise UserError("--shp-construction columns needs --sampler node")
        return self.construction

    def resolved_validation_batches(self) -> int:
        return self.validation_batches or self.eval_batches

    def check(self) -> None:
        hoeffding_nets(2, self.theta, self.delta)  # validates theta, delta
        if self.batches is not None and self.batches < 1:
            raise UserError(f"--batches {self.batches}: must be >= 1")
        if self.eval_batches < 2:
            raise UserError(f"--eval-batches {self.eval_batches}: must be >= 2")
        if self.validation_batches < 0 or self.validation_batches == 1:
            raise UserError(f"--validation-batches {self.validation_batches}: must be >= 2 (0: --eval-batches)")
        if self.max_rounds < 1 or self.min_gain < 0:
            raise UserError("--shp-max-rounds must be >= 1 and --shp-min-gain >= 0")
        if self.tangent_passes < 0:
            raise UserError("--shp-tangent-passes must be >= 0")
        self.resolved_construction()


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
                "validation": self.validation, "validation_stream": VALIDATION if scfg.sampler != "node" else None,
                "validation_batches": scfg.resolved_validation_batches() if scfg.sampler != "node" else 0,
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
        self.closed = sampler.cfg.kind == "node"
        self.description = "closed form" if self.closed else f"{batches} batches of stream {VALIDATION}"
        if not self.closed:
            self.set = batch_quality.BatchSet(sp.csc_matrix(a), sampler.batches(range(batches), VALIDATION))

    def __call__(self, part: np.ndarray) -> float:
        if self.closed:
            return batch_quality.expected_volume_node(self.a, part, self.parts, self.sampler.cfg.size)[0]
        return self.set.mean_volume(part, self.parts)


# ------------------------------------------------------------- the surrogate

def _hazards(inc: Inclusion) -> tuple[np.ndarray, np.ndarray]:
    """Per off-diagonal nonzero: q_ij = P(i | j) and its hazard -ln(1 - q_ij)."""
    if inc.uniform:
        q = np.full(inc.rows.size, inc.q)
    else:
        q = np.clip(inc.pair / np.maximum(inc.vertex[inc.cols], 1e-300), 0.0, 1.0 - 1e-12)
    return q, -np.log1p(-q)


def chord_anchors(inc: Inclusion, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per column j: (alpha_j (n,), gamma_j (n,), d_j (n,)) of the chord of
    the cost given j drawn through one typical row of j (c = 1) and through
    c* = ceil(d_j / 4) of them; a row i then costs gamma_j h_ij / mean h."""
    d = np.bincount(inc.cols, minlength=n)
    cstar = np.minimum(d, np.maximum(2, -(-d // CHORD_DIVISOR)))
    if inc.q is not None and inc.curve is not None:  # exact (node): every row has the same q
        y1 = np.full(n, inc.q)
        ystar = inc.curve[np.minimum(cstar, inc.curve.size - 1)]
    else:
        _, h = _hazards(inc)
        hbar = np.bincount(inc.cols, weights=h, minlength=n) / np.maximum(d, 1)
        y1, ystar = -np.expm1(-hbar), -np.expm1(-cstar * hbar)
    gamma = np.where(d > 1, (ystar - y1) / np.maximum(cstar - 1, 1), y1)  # concave: alpha >= 0
    alpha = np.where(d > 1, y1 - gamma, 0.0)
    return alpha, gamma, d


def tangent_anchors(inc: Inclusion, n: int, part: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """As :func:`chord_anchors`, but the tangent of the cost at the mean
    hazard of the column's rows in the parts that receive it under ``part``
    (the chord where no part does). For the node sampler (one q) the tangent
    lies above the concave cost and touches it at that count, so a partition
    that lowers the surrogate lowers the exact cost of those columns."""
    alpha, gamma, d = chord_anchors(inc, n)
    _, h = _hazards(inc)
    hbar = np.bincount(inc.cols, weights=h, minlength=n) / np.maximum(d, 1)
    other = part[inc.rows] != part[inc.cols]
    parts = int(part.max(initial=0)) + 1
    keys, inv = np.unique(inc.cols[other] * parts + part[inc.rows[other]], return_inverse=True)
    x_jk = np.bincount(inv.ravel(), weights=h[other], minlength=keys.size)  # hazard of part k's rows of column j
    col = keys // parts
    cut = np.bincount(col, minlength=n)
    xbar = np.bincount(col, weights=x_jk, minlength=n) / np.maximum(cut, 1)
    use = (cut > 0) & (d > 1)
    slope = np.exp(-xbar)  # d/dx (1 - e^-x)
    t_alpha = -np.expm1(-xbar) - xbar * slope  # >= 0: the tangent of a concave function through 0
    # per typical row (hazard hbar): gamma = slope * hbar
    return np.where(use, t_alpha, alpha), np.where(use, slope * hbar, gamma), d


def inclusion_surrogate(inc: Inclusion, weights: np.ndarray, anchors: tuple[np.ndarray, np.ndarray, np.ndarray]
                        ) -> Hypergraph:
    """Deterministic hypergraph whose connectivity-1 approximates the
    expected mini-batch volume: per column j, a net {j} ∪ rows of j weighted
    P(j) alpha_j, and per row i a two-pin net {j, i} weighted P(j) gamma_j
    h_ij / mean h (``anchors`` = (alpha, gamma, d) per column; a column with
    one row costs exactly P(i, j)); {j, i} and {i, j} merge. Weights are
    integers: ``SURROGATE_SCALE`` x the cost relative to the mean P(j)."""
    n = weights.size
    alpha, gamma, d = anchors
    j, i = inc.cols, inc.rows
    q, h = _hazards(inc)
    if inc.uniform:
        scale = np.full(n, float(SURROGATE_SCALE))
        rel = np.ones(j.size)
    else:
        scale = SURROGATE_SCALE * inc.vertex / max(float(inc.vertex.mean()), 1e-300)
        hbar = np.bincount(j, weights=h, minlength=n) / np.maximum(d, 1)
        rel = np.where(hbar[j] > 0, h / np.maximum(hbar[j], 1e-300), 1.0)
    beta = np.where(d[j] > 1, gamma[j] * rel, q) * scale[j]
    full = np.flatnonzero((d >= 2) & (alpha * scale >= 0.5))
    in_full = np.zeros(n, bool)
    in_full[full] = True
    # the full net of column j: j and its other rows, in row order (as the column of Â)
    sel = in_full[j]
    fc, fr = np.concatenate([full, j[sel]]), np.concatenate([full, i[sel]])
    order = np.lexsort((fr, fc))
    full_ptr = np.zeros(full.size + 1, np.int64)
    np.cumsum(d[full] + 1, out=full_ptr[1:])
    two = np.stack([np.minimum(j, i), np.maximum(j, i)], 1).ravel()  # {j, i} and {i, j} merge below
    nets = BatchNets(columns=np.concatenate([full, j]),
                     ptr=np.concatenate([full_ptr, full_ptr[-1] + np.arange(2, 2 * j.size + 1, 2)]),
                     pins=np.concatenate([fr[order], two]), total=0)
    w = np.concatenate([alpha[full] * scale[full], beta])
    ptr, pins, nw, first = merge_identical(nets, n, weights=w)
    keep = nw >= 1
    kept_sizes = np.diff(ptr)[keep]
    new_ptr = np.zeros(kept_sizes.size + 1, np.int64)
    np.cumsum(kept_sizes, out=new_ptr[1:])
    return Hypergraph(n_vertices=n, net_ptr=new_ptr, pins=pins[np.repeat(keep, np.diff(ptr))],
                      vertex_weights=weights.astype(np.int64), net_weights=nw[keep], net_ids=nets.columns[first[keep]])


def expected_surrogate(a: sp.csr_matrix, batch: int, weights: np.ndarray) -> Hypergraph:
    """The node sampler's surrogate (B = ``batch`` of n vertices): the chord
    surrogate of :func:`inclusion_surrogate` with its exact probabilities."""
    n = a.shape[0]
    sampler = Sampler(sp.csr_matrix((n, n)), SamplerConfig(kind="node", size=batch))
    inc = inclusion(a, sampler)
    return inclusion_surrogate(inc, weights, chord_anchors(inc, n))


# ------------------------------------------------------------------- the build

class _Steps:
    """The incumbent and the record of every step (each judged by the
    validation objective, kept only when it lowers it)."""

    def __init__(self, objective: Validation, t0: float):
        self.objective, self.t0 = objective, t0
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
        return vol

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
              starts: Mapping[str, np.ndarray] | None = None,
              sample_map: Callable[[Callable, list], list] | None = None) -> SHPResult:
    """Partition Â for mini-batch training (see the module doc).

    Parameters
    ----------
    a : (n, n) csr_matrix, Â
    adj : (n, n) csr_matrix, the graph the sampler walks on
    starts : partitions by model name, (n,) int each (``gp`` and ``hp`` when
        the build computed them); METIS is run when there are none
    sample_map : callable, optional
        ``sample_map(fn, arglists)`` returns ``[fn(*args) for args in
        arglists]``; a build passes one that runs them as Dask tasks.
    """
    t0 = time.perf_counter()
    scfg.check()
    n, p = a.shape[0], pcfg.parts
    sampler = Sampler(adj, scfg.sampler_config(n, pcfg.seed))
    construction = scfg.resolved_construction()
    required = hoeffding_nets(p, scfg.theta, scfg.delta)
    a_csc = sp.csc_matrix(a)
    weights = np.diff(a.indptr).astype(np.int64)
    steps = _Steps(Validation(a, sampler, p, scfg.resolved_validation_batches()), t0)
    smap = sample_map or (lambda fn, arglists: [fn(*args) for args in arglists])
    B = sampler.cfg.size

    def draw(lo: int, hi: int) -> BatchNets:
        """Nets of round units lo..hi-1, in groups (one task each)."""
        size = max(1, -(-(hi - lo) // 8))
        groups = [range(k, min(k + size, hi)) for k in range(lo, hi, size)]
        if construction == "columns":
            q = (B - 1) / max(n - 1, 1)
            return concat_nets(smap(column_nets, [(a_csc, q, pcfg.seed, g) for g in groups]))
        return concat_nets(smap(_sampled_batch_nets, [(a_csc, sampler, g) for g in groups]))

    def result(nets_sampled: int, nets_kept: int, equiv: float) -> SHPResult:
        return SHPResult(steps.part(), time.perf_counter() - t0, construction, required, nets_sampled, nets_kept,
                         equiv, steps.rounds, steps.objective.description, steps.best_step)

    if scfg.batches is not None:  # the paper's model as is (scored, not chosen)
        tr = time.perf_counter()
        nets = draw(0, scfg.batches)
        hg = stochastic_hypergraph(nets, weights)
        steps.offer("batches", kahypar_partition(hg, pcfg), tr, batches=scfg.batches, nets_sampled=nets.total,
                    nets_kept=hg.n_nets)
        return result(nets.total, hg.n_nets, float(scfg.batches))

    # 1. the best start
    given = dict(starts or {})
    if not given:
        tr = time.perf_counter()
        given["gp"] = kahypar_start(a, pcfg)
        log.info("shp: no start given, METIS took %.1f s", time.perf_counter() - tr)
    names = [m for m in START_ORDER if m in given] + sorted(m for m in given if m not in START_ORDER)
    for name in names:
        steps.offer("start", np.asarray(given[name]), time.perf_counter(), model=name)

    # 2. the surrogate: refine the first start, tangent passes; then (time allowing) the other starts and a
    #    partition from scratch, and tangent passes again if one of them won
    tr = time.perf_counter()
    inc = inclusion(a, sampler)
    hg = inclusion_surrogate(inc, weights, chord_anchors(inc, n))
    start_vol = {r["model"]: r["validation_volume"] for r in steps.rounds}
    order = sorted(names, key=lambda m: (m != "hp", start_vol[m]))
    cand = kahypar_partition(hg, pcfg, initial=np.asarray(given[order[0]]), vcycles=scfg.vcycles)
    steps.offer(f"surrogate from {order[0]}", cand, tr, nets=hg.n_nets, pins=int(hg.pins.size))
    refine_s = time.perf_counter() - tr

    def tangent_passes(label: str) -> None:
        for t in range(scfg.tangent_passes):
            if not _fits(scfg.time_budget, steps.elapsed(), refine_s):
                log.info("shp: no time left for a tangent pass")
                return
            tr = time.perf_counter()
            before, incumbent = steps.best_vol, steps.part()
            thg = inclusion_surrogate(inc, weights, tangent_anchors(inc, n, incumbent))
            steps.offer(f"tangent {label}{t}", kahypar_partition(thg, pcfg, initial=incumbent, vcycles=scfg.vcycles),
                        tr, nets=thg.n_nets, pins=int(thg.pins.size))
            if steps.best_vol > before * (1 - scfg.min_gain / 10):  # below 0.1%: the next pass will not pay
                return

    tangent_passes("")
    incumbent_step = steps.best_step
    for name in order[1:]:
        if not _fits(scfg.time_budget, steps.elapsed(), refine_s):
            log.info("shp: no time left to refine from %s", name)
            break
        tr = time.perf_counter()
        cand = kahypar_partition(hg, pcfg, initial=np.asarray(given[name]), vcycles=scfg.vcycles)
        steps.offer(f"surrogate from {name}", cand, tr, nets=hg.n_nets, pins=int(hg.pins.size))
    if scfg.scratch and _fits(scfg.time_budget, steps.elapsed(), 2 * refine_s):  # measured: about twice a refinement
        tr = time.perf_counter()
        steps.offer("surrogate from scratch", kahypar_partition(hg, pcfg), tr, nets=hg.n_nets)
    if steps.best_step != incumbent_step:
        tangent_passes("again ")

    # 3. stochastic hypergraph rounds, stopped by the validation curve
    unit = n if construction == "columns" else B
    first = max(1, -(-required // max(unit, 1)))
    nets_list: list[BatchNets] = []
    drawn, sampled, kept = 0, 0, 0
    last_round, previous = 0.0, float("inf")
    for r in range(scfg.max_rounds):
        if not _fits(scfg.time_budget, steps.elapsed(), 2 * last_round):
            log.info("shp: stopping before round %d, which would overrun the time budget of %.1f s", r,
                     scfg.time_budget)
            break
        tr = time.perf_counter()
        target = first * 2**r
        nets_list.append(draw(drawn, target))
        drawn = target
        nets = concat_nets(nets_list)
        nets_list = [nets]
        shg = stochastic_hypergraph(nets, weights)
        cand = kahypar_partition(shg, pcfg, initial=steps.part(), vcycles=scfg.vcycles)
        sampled, kept = nets.total, shg.n_nets
        vol = steps.offer(f"round {r}", cand, tr, units=target, nets_sampled=nets.total, nets_kept=shg.n_nets,
                          pins=int(shg.pins.size))
        last_round = time.perf_counter() - tr
        gain = previous - vol  # what the last doubling of the nets bought
        if gain < scfg.min_gain * vol or vol - steps.best_vol > gain * (scfg.max_rounds - 1 - r):
            log.info("shp: the validation curve stops at round %d (gain %.1f, %.1f above the incumbent)", r,
                     gain, vol - steps.best_vol)
            break  # flat, or too far above the incumbent to reach it at this rate in the rounds left
        previous = vol
    equiv = drawn * (n / B) if construction == "columns" else float(drawn)
    return result(sampled, kept, equiv)


def kahypar_start(a: sp.csr_matrix, pcfg: PartitionConfig) -> np.ndarray:
    """The default start: METIS on the symmetrized graph."""
    from .partition import metis_partition
    return metis_partition(a, pcfg) if pcfg.parts > 1 else np.zeros(a.shape[0], np.int32)


def _sampled_batch_nets(a_csc: sp.csc_matrix, sampler: Sampler, ks: range) -> BatchNets:
    return batch_nets(a_csc, sampler.batches(ks, BUILD))


def _shp(inputs: Inputs, cfg: PartitionConfig) -> tuple[np.ndarray, dict]:
    """The registered ``shp`` model: options ``shp`` (an :class:`SHPConfig` as
    a dict); starts from the best of the partitions the build computed
    (``gp``, ``hp``)."""
    scfg = SHPConfig(**inputs.options.get("shp", {}))
    if inputs.adj is None:
        raise ValueError("shp needs the graph's pattern")
    res = build_shp(inputs.a, inputs.adj, cfg, scfg, starts=inputs.starts)
    return res.part, res.record(scfg)


register(Partitioner("shp", _shp, "mini-batch training: the expected volume of a random mini-batch (stochastic "
                                  "hypergraph, refined from the best of gp and hp)", child=True,
                     starts_from=("gp", "hp"), needs_graph=True))
