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

The reported held-out volume (:mod:`...metrics.batches`, HELDOUT stream) is
never used to build or to choose anything, so it measures the result
without selection bias. The steps:

1. **Best start**: every partition the build gives (``gp``, and ``hp`` when
   computed; METIS when none) is scored; the best is the incumbent, so shp
   is never worse than the best of them on the validation objective.
2. **Surrogate refinement**: the starts refined (``--shp-refiner vcycles``,
   the default: Mt-KaHyPar's V-cycles; ``lp``: weighted label propagation
   with exact gains, :mod:`..wkm1`) on a deterministic hypergraph whose connectivity-1 approximates the expected
   volume, built from the sampler's inclusion probabilities
   (:mod:`.inclusion`, :mod:`.surrogate`): P(j drawn) and, per nonzero (i, j) of Â, P(i and j
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
   refinement starts from the best start (V-cycles: from ``hp`` when the
   build computed it, measured better for them). Then, while the time
   budget allows: passes whose anchors are the tangents at the incumbent's
   own c_jk (a majorizer of the concave cost when q is uniform), refinements
   from the other starts (V-cycles: and a partition of the surrogate from
   scratch), and tangent passes again if one of those won. One V-cycle
   per refinement (a second gained 0-0.3% in twice the time). Mt-KaHyPar's
   ``default`` preset (``fast-vcycles``) is 2-5x faster than its
   ``deterministic`` one and gains less; label propagation (``lp``) is
   faster still and gains least (benchmarks/RESULTS.md, "Mini-batch
   partitioning: shp vs gp and hp").
3. **Stochastic hypergraph rounds**: sampled nets (BUILD stream), the
   Hoeffding count ``(p-1)^2 / (2 theta^2) ln(2/delta)`` in the first round,
   doubling each round; each round refines the incumbent on the merged
   stochastic hypergraph. Sampling stops by the validation curve: when a
   round's candidate is not at least ``min_gain`` (1%) better than the
   previous round's (more nets no longer help), after ``max_rounds``, or
   before a round that would overrun ``time_budget`` (a round takes about
   twice the previous one).

``--shp-time-factor F`` (a build that also computes ``hp``) gives shp a time
budget of F times hp's time: the steps above are skipped when they would
overrun it, and with a budget Mt-KaHyPar runs in a child process that is
stopped where the budget ends (its step is recorded as stopped and the
incumbent stays), so the budget binds every step, the first refinement
included.

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

import math
from dataclasses import dataclass

from ...errors import UserError, option
from ..base import GRAPH, MATRIX, Assignment, Inputs, Model, PartitionConfig
from ..hp import MODEL as HP
from ..hp import PRESET
from .config import OPTIONS, SHPConfig

__all__ = ["MODEL", "OPTIONS", "SHPConfig", "StochasticHypergraph"]  # SHPConfig: its options, in .config

@dataclass(frozen=True)
class StochasticHypergraph(Model):
    def check(self, cfg: PartitionConfig) -> None:
        super().check(cfg)
        factor = cfg.options.get("shp_time_factor", 0.0)
        if not (isinstance(factor, (int, float)) and math.isfinite(factor) and factor >= 0):
            raise UserError(f"{option('--shp-time-factor', factor)}: must be a finite number >= 0")
        SHPConfig.of(cfg).check()

    def check_models(self, models: tuple[str, ...], cfg: PartitionConfig) -> None:
        """``--shp-time-factor``: a budget of that many times hp's time, only beside the hp it is a factor of
        (without hp the factor was dropped without a word)."""
        factor = cfg.options.get("shp_time_factor") or 0
        if factor and HP.name not in models:
            raise UserError(f"{option('--shp-time-factor', factor)}: a budget of that many times hp's time, and the "
                            f"build computes no hp: add hp to {option('--model')}, or leave the factor out")

    def run(self, inputs: Inputs, cfg: PartitionConfig) -> Assignment:
        from .build import build_shp

        if inputs.graph is None:
            raise ValueError("shp needs the graph's pattern")
        scfg = SHPConfig.of(cfg, inputs.seconds)
        res = build_shp(inputs.a, inputs.graph, cfg, scfg, starts=inputs.starts, weights=inputs.vertex_weights())
        return Assignment(res.part, res.record(scfg))

    def extra_quality(self, cfg: PartitionConfig, n: int):
        """The held-out mini-batch volume of every model of the build."""
        from ...metrics.batches import MinibatchReport

        scfg = SHPConfig.of(cfg)
        return MinibatchReport(scfg.sampler_config(n, cfg.seed), scfg.eval_batches, scfg.theta, scfg.delta,
                               convergence_model=self.name)


MODEL = StochasticHypergraph(
    "shp", "mini-batch training: the expected volume of a random mini-batch (stochastic hypergraph, refined from "
    "the best of gp and hp)", options=(*OPTIONS, PRESET), needs=frozenset({MATRIX, GRAPH}), starts_from=("gp", "hp"),
    record="attribute", runs_in_child=True, resembles=HP.name)

