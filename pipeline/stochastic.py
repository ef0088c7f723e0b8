"""``shp``: partitioning for mini-batch training (the stochastic hypergraph model).

The paper's model: sample mini-batches, take the nets of every batch's
submatrix Â[V', V'] (one net per column of the batch, pins = the batch's
rows with a nonzero in it), merge them into one hypergraph, and partition it
with the connectivity-1 objective, whose value is then proportional to the
mean volume of the sampled batches: an estimate of the expected volume of a
random batch. Measured here, that alone needs hundreds of batches to beat
``hp`` and still loses on soc-slashdot0902 (see benchmarks/RESULTS.md), so
the build goes in three steps, each kept only if it lowers the expected
volume on held-out batches:

1. **Start** from METIS's partition (``gp``): for small batches the expected
   volume behaves like an edge cut (see 2), so it is a good and cheap start.
2. **Expected-volume refinement** (node sampler): with B of n vertices drawn,
   the expected volume of a batch is exactly
   ``(B/n) sum_j sum_{k != owner(j)} f(c_jk)``, ``f(c) = 1 - P(none of c rows
   drawn)``, where c_jk is the number of rows of part k with a nonzero in
   column j. f is concave: linear (an edge cut) for columns with few rows,
   saturated (connectivity) for hubs. Per column j with d_j other rows, one
   net {j} ∪ rows of j weighted alpha_j and d_j two-pin nets {j, i} weighted
   beta_j give the cost alpha_j [c > 0] + beta_j c: the chord of f through
   c = 1 and c = ceil(d_j / 4) (below f between them, above beyond);
   Mt-KaHyPar refines the start on this deterministic hypergraph with
   V-cycles.
3. **Stochastic hypergraph rounds**: sampled nets, at least the Hoeffding
   count ``(p-1)^2 / (2 theta^2) ln(2/delta)`` in the first round, doubling
   each round; each round refines the best partition so far on the merged
   stochastic hypergraph. Sampling stops when a round improves the held-out
   volume by less than ``min_gain`` (1%), after ``max_rounds``, or before a
   round that would overrun ``time_budget`` (a round takes about twice the
   previous one; a build that also computes ``hp`` gives shp twice hp's time).

Held-out volume: exact closed form for the node sampler, otherwise the mean
over ``eval_batches`` batches of the HELDOUT seed stream (never used to build).

Net constructions for step 3: ``batches`` (the paper's: nets of whole sampled
batches) or ``columns`` (node sampler only, its default: for the node
sampler the rows of a batch are drawn independently of whether column j is
in it, so the net of column j in a batch that contains j is a draw of "j plus
each row of column j with probability (B-1)/(n-1)"; this draws that net for
every column in each round: the batch nets' distribution, with every column
represented equally often). Identical nets are merged into weighted nets.
With ``--batches N`` the paper's model is used as is: N batches, one
partition from scratch, no start, refinement or stopping rule.

Vertices that no net touches are isolated in the hypergraphs; the
partitioner places them by weight (nonzeros of the row, as ``hp``) under
the balance constraint.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from shgcn.store.sample import BUILD, HELDOUT, Sampler, SamplerConfig

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
from .partition import Inputs, PartitionConfig, Partitioner, kahypar_partition, register

log = logging.getLogger(__name__)

CONSTRUCTIONS = ("auto", "batches", "columns")
SURROGATE_SCALE = 1000  # integer net weights: expected rows x 1000
CHORD_DIVISOR = 4  # the surrogate is exact at c = 1 and c = ceil(d / CHORD_DIVISOR)


@dataclass(frozen=True)
class SHPConfig:
    """Attributes: sampler; batch_size (0: 10% of n); walk_length (rw);
    theta, delta (Hoeffding); batches (override: exactly this many batches,
    one partition from scratch, no stopping rule); eval_batches (held-out
    batches); construction (of the sampled nets); min_gain (stop below this
    relative improvement); max_rounds (of sampling); vcycles (per refinement)."""

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
    time_budget: float | None = None  # seconds for the whole shp build; None: no limit

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

    def check(self) -> None:
        hoeffding_nets(2, self.theta, self.delta)  # validates theta, delta
        if self.batches is not None and self.batches < 1:
            raise UserError(f"--batches {self.batches}: must be >= 1")
        if self.eval_batches < 2:
            raise UserError(f"--eval-batches {self.eval_batches}: must be >= 2")
        if self.max_rounds < 1 or self.min_gain < 0:
            raise UserError("--shp-max-rounds must be >= 1 and --shp-min-gain >= 0")
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

    def record(self, scfg: SHPConfig) -> dict:
        """What the store's ``shp`` attribute keeps (JSON)."""
        return {"sampler": scfg.sampler, "batch_size": scfg.batch_size, "theta": scfg.theta, "delta": scfg.delta,
                "construction": self.construction, "required_nets": self.required_nets,
                "nets_sampled": self.nets_sampled, "nets_after_merging": self.nets_kept,
                "batches_equivalent": self.batches_equivalent, "batches_override": scfg.batches,
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


class HeldOut:
    """Expected mini-batch volume of a partition, on batches that were not
    used to build it: in closed form for the node sampler, else the mean over
    ``eval_batches`` batches of the HELDOUT stream."""

    def __init__(self, a: sp.csr_matrix, sampler: Sampler, parts: int, eval_batches: int):
        self.a, self.sampler, self.parts = a, sampler, parts
        self.closed = sampler.cfg.kind == "node"
        if not self.closed:
            self.a_csc = sp.csc_matrix(a)
            self.batches = sampler.batches(range(eval_batches), HELDOUT)

    def __call__(self, part: np.ndarray) -> float:
        if self.closed:
            return batch_quality.expected_volume_node(self.a, part, self.parts, self.sampler.cfg.size)[0]
        return float(batch_quality.batch_volumes(self.a_csc, self.batches, part, self.parts)[0].mean())


def expected_surrogate(a: sp.csr_matrix, batch: int, weights: np.ndarray) -> Hypergraph:
    """Deterministic hypergraph whose connectivity-1 approximates the
    expected node-sampled mini-batch volume (step 2 of the module doc)."""
    n = a.shape[0]
    q = (batch - 1) / max(n - 1, 1)
    csc = sp.csc_matrix(a)
    cols = np.repeat(np.arange(n, dtype=np.int64), np.diff(csc.indptr))
    rows = csc.indices.astype(np.int64)
    off = rows != cols
    d = np.bincount(cols[off], minlength=n)
    f = 1.0 - batch_quality.none_drawn(n, batch, int(d.max(initial=0)))  # f[c], exact for drawing without replacement
    # the chord of f from c = 1 to c* = ceil(d/4): a column's rows in another part are usually few, so the
    # fit matters there (measured: better than c* = d or d/10 on soc-slashdot0902 and ca-astroph)
    cstar = np.minimum(d, np.maximum(2, -(-d // CHORD_DIVISOR)))
    beta = np.where(d > 1, (f[cstar] - q) / np.maximum(cstar - 1, 1), q)  # concave f keeps alpha >= 0
    alpha = np.where(d > 1, q - beta, 0.0)
    full = np.flatnonzero((d >= 2) & (alpha * SURROGATE_SCALE >= 0.5))
    in_full = np.zeros(n, bool)
    in_full[full] = True
    full_ptr = np.zeros(full.size + 1, np.int64)
    np.cumsum(np.diff(csc.indptr)[full], out=full_ptr[1:])
    j, i = cols[off], rows[off]
    two = np.stack([np.minimum(j, i), np.maximum(j, i)], 1).ravel()  # {j, i} and {i, j} merge below
    nets = BatchNets(columns=np.concatenate([full, j]),
                     ptr=np.concatenate([full_ptr, full_ptr[-1] + np.arange(2, 2 * j.size + 1, 2)]),
                     pins=np.concatenate([rows[in_full[cols]], two]), total=0)
    w = np.concatenate([alpha[full], beta[j]]) * SURROGATE_SCALE
    ptr, pins, nw, first = merge_identical(nets, n, weights=w)
    keep = nw >= 1
    sizes = np.diff(ptr)[keep]
    new_ptr = np.zeros(sizes.size + 1, np.int64)
    np.cumsum(sizes, out=new_ptr[1:])
    return Hypergraph(n_vertices=n, net_ptr=new_ptr, pins=pins[np.repeat(keep, np.diff(ptr))],
                      vertex_weights=weights.astype(np.int64), net_weights=nw[keep], net_ids=nets.columns[first[keep]])


def build_shp(a: sp.csr_matrix, adj: sp.csr_matrix, pcfg: PartitionConfig, scfg: SHPConfig,
              start: np.ndarray | None = None, sample_map=None) -> SHPResult:
    """Partition Â for mini-batch training (see the module doc).

    Parameters
    ----------
    a : (n, n) csr_matrix, Â
    adj : (n, n) csr_matrix, the graph the sampler walks on
    start : (n,) int32, optional
        The starting partition (``gp``'s when the build computed it; METIS
        is run otherwise).
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
    heldout = HeldOut(a, sampler, p, scfg.eval_batches)
    smap = sample_map or (lambda fn, arglists: [fn(*args) for args in arglists])
    B = sampler.cfg.size
    rounds: list[dict] = []

    def record(step: str, part: np.ndarray, tr: float, **extra) -> float:
        vol = heldout(part)
        rounds.append({"step": step, **extra, "seconds": round(time.perf_counter() - tr, 3), "heldout_volume": vol,
                       "peak_rss_mib": peak_rss_mib()})
        log.info("shp %s: held-out volume %.1f", step, vol)
        return vol

    def draw(lo: int, hi: int) -> BatchNets:
        """Nets of round units lo..hi-1, in groups (one task each)."""
        step = max(1, -(-(hi - lo) // 8))
        groups = [range(k, min(k + step, hi)) for k in range(lo, hi, step)]
        if construction == "columns":
            q = (B - 1) / max(n - 1, 1)
            return concat_nets(smap(column_nets, [(a_csc, q, pcfg.seed, g) for g in groups]))
        return concat_nets(smap(_sampled_batch_nets, [(a_csc, sampler, g) for g in groups]))

    if scfg.batches is not None:  # the paper's model as is
        tr = time.perf_counter()
        nets = draw(0, scfg.batches)
        hg = stochastic_hypergraph(nets, weights)
        best = kahypar_partition(hg, pcfg)
        record("batches", best, tr, batches=scfg.batches, nets_sampled=nets.total, nets_kept=hg.n_nets)
        return SHPResult(best, time.perf_counter() - t0, "batches", required, nets.total, hg.n_nets,
                         float(scfg.batches), rounds)

    tr = time.perf_counter()
    best = start if start is not None else kahypar_start(a, pcfg)
    best_vol = record("start", best, tr)
    if sampler.cfg.kind == "node":
        tr = time.perf_counter()
        hg = expected_surrogate(a, B, weights)
        cand = kahypar_partition(hg, pcfg, initial=best, vcycles=scfg.vcycles)
        vol = record("expected", cand, tr, nets=hg.n_nets, pins=int(hg.pins.size))
        if vol < best_vol:
            best, best_vol = cand, vol

    unit = n if construction == "columns" else B
    first = max(1, -(-required // max(unit, 1)))
    nets_list, drawn, sampled, kept = [], 0, 0, 0
    last_round = 0.0
    for r in range(scfg.max_rounds):
        if scfg.time_budget is not None and time.perf_counter() - t0 + 2 * last_round > scfg.time_budget:
            log.info("shp: stopping before round %d, which would overrun the time budget of %.1f s", r,
                     scfg.time_budget)
            break
        tr = time.perf_counter()
        target = first * 2**r
        nets_list.append(draw(drawn, target))
        drawn = target
        nets = concat_nets(nets_list)
        nets_list = [nets]
        hg = stochastic_hypergraph(nets, weights)
        cand = kahypar_partition(hg, pcfg, initial=best, vcycles=scfg.vcycles)
        sampled, kept = nets.total, hg.n_nets
        vol = record(f"round {r}", cand, tr, units=target, nets_sampled=nets.total, nets_kept=hg.n_nets,
                     pins=int(hg.pins.size))
        last_round = time.perf_counter() - tr
        gain = (best_vol - vol) / best_vol if best_vol > 0 else 0.0
        if vol < best_vol:
            best, best_vol = cand, vol
        if gain < scfg.min_gain:
            break
    equiv = drawn * (n / B) if construction == "columns" else float(drawn)
    return SHPResult(part=best.astype(np.int32), seconds=time.perf_counter() - t0, construction=construction,
                     required_nets=required, nets_sampled=sampled, nets_kept=kept, batches_equivalent=equiv,
                     rounds=rounds)


def kahypar_start(a: sp.csr_matrix, pcfg: PartitionConfig) -> np.ndarray:
    """The default start: METIS on the symmetrized graph."""
    from .partition import metis_partition
    return metis_partition(a, pcfg) if pcfg.parts > 1 else np.zeros(a.shape[0], np.int32)


def _sampled_batch_nets(a_csc: sp.csc_matrix, sampler: Sampler, ks: range) -> BatchNets:
    return batch_nets(a_csc, sampler.batches(ks, BUILD))


def _shp(inputs: Inputs, cfg: PartitionConfig) -> tuple[np.ndarray, dict]:
    """The registered ``shp`` model: options ``shp`` (an :class:`SHPConfig` as
    a dict); starts from ``gp``'s partition when the build computed it."""
    scfg = SHPConfig(**inputs.options.get("shp", {}))
    if inputs.adj is None:
        raise ValueError("shp needs the graph's pattern")
    res = build_shp(inputs.a, inputs.adj, cfg, scfg, start=inputs.starts.get("gp"))
    return res.part, res.record(scfg)


register(Partitioner("shp", _shp, "mini-batch training: the expected volume of a random mini-batch (stochastic "
                                  "hypergraph, refined from gp)", child=True, starts_from=("gp", "hp"),
                     needs_graph=True))
