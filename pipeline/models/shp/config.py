"""``shp``'s options (:class:`SHPConfig`, from the build's
:class:`~..base.PartitionConfig`): what the model (:mod:`..shp`) declares and
its build (:mod:`.build`) reads, below both so that neither imports the
other for them."""

from __future__ import annotations

from dataclasses import dataclass

from shgcn.core.sample import SAMPLERS

from ...errors import UserError, option, quoted
from ..base import Option, PartitionConfig
from ..hp import kahypar_preset

CONSTRUCTIONS = ("auto", "batches", "columns")
REFINERS = ("lp", "fast-vcycles", "vcycles")
FAST_ENGINE = "default"  # Mt-KaHyPar's preset behind fast-vcycles: 2-5x faster V-cycles, not reproducible

OPTIONS = (
    Option("--sampler", "node", "mini-batch sampler: node (uniform vertices), edge, rw (GraphSAINT), or a "
           "plugin's (shgcn.parts.SAMPLERS)"),
    Option("--batch-size", 0, "vertices per mini-batch (0: 10%% of n)", type=int),
    Option("--walk-length", 2, "rw sampler: steps per walk", type=int),
    Option("--theta", 0.1, "Hoeffding: tolerance of the mean connectivity", type=float),
    Option("--delta", 0.5, "Hoeffding: failure probability", type=float),
    Option("--batches", None, "use exactly this many sampled batches (overrides the Hoeffding floor and stopping "
           "rule)", type=int),
    Option("--eval-batches", 200, "held-out batches (HELDOUT stream, never used to build or choose) for the "
           "mini-batch quality", type=int),
    Option("--validation-batches", 0, "edge and rw samplers: batches of the VALIDATION stream shp chooses its steps "
           "by (0: as many as --eval-batches); the node sampler uses the exact expected volume", type=int),
    Option("--shp-construction", "auto", "nets from whole sampled batches, or per column (node sampler; auto: "
           "columns for it)", choices=CONSTRUCTIONS),
    Option("--shp-max-rounds", 6, "stopping rule: at most this many rounds", type=int),
    Option("--shp-min-gain", 0.01, "stopping rule: stop when a round improves the validation objective by less",
           type=float),
    Option("--shp-refiner", "vcycles", "how shp refines on its surrogate and sampled hypergraphs: vcycles "
           "(Mt-KaHyPar's V-cycles with its deterministic preset, and a partition of the surrogate from scratch), "
           "fast-vcycles (the same with Mt-KaHyPar's default preset: 2-5x faster, less gain, not reproducible) or lp "
           "(weighted label propagation with exact gains: within twice hp's time, but a fraction of the gain where "
           "measured)", choices=REFINERS),
    Option("--shp-time-factor", 0.0, "when hp is computed too, stop shp's steps when shp would take longer than "
           "this many times hp's partitioning time (Mt-KaHyPar then runs in a child process stopped where the "
           "budget ends); the steps then depend on the clock, so the store is no longer reproducible byte for byte "
           "(default: 0, no limit: the rounds and passes bound the work)", type=float),
)


@dataclass(frozen=True)
class SHPConfig:
    """shp's options. Attributes: sampler; batch_size (0: 10% of n);
    walk_length (rw); theta, delta (Hoeffding); batches (override: exactly
    this many batches, one partition from scratch, no stopping rule);
    eval_batches (held-out batches, reported); validation_batches (edge, rw:
    batches of the VALIDATION stream shp chooses its steps with; 0: as many
    as eval_batches); construction (of the sampled nets); min_gain (stop the
    rounds when the validation curve gains less than this); max_rounds (of
    sampling); vcycles (per refinement); tangent_passes (at most, after the
    surrogate); scratch (also partition the surrogate from scratch);
    time_budget (seconds for the whole shp build; None: none); preset
    (Mt-KaHyPar's, as hp's; :attr:`engine` is the one used); refiner
    (``vcycles``, ``fast-vcycles``: Mt-KaHyPar's; ``lp``: :mod:`..wkm1`'s
    weighted label propagation)."""

    sampler: str = "node"
    batch_size: int = 0
    walk_length: int = 2
    theta: float = 0.1
    delta: float = 0.5
    batches: int | None = None
    eval_batches: int = 200
    construction: str = "auto"
    min_gain: float = 0.01
    max_rounds: int = 6
    vcycles: int = 1  # a second one gained 0.0-0.3% in twice the time (benchmarks/RESULTS.md, "shp's V-cycles")
    time_budget: float | None = None
    validation_batches: int = 0
    tangent_passes: int = 2
    scratch: bool = True
    preset: str = "deterministic"
    refiner: str = "vcycles"

    @classmethod
    def of(cls, cfg: PartitionConfig, seconds: dict[str, float] | None = None) -> SHPConfig:
        """shp's options in ``cfg``; with ``--shp-time-factor F`` > 0 and hp's
        time in ``seconds``, a time budget of F times hp's time."""
        o = {opt.dest: cfg.option(opt) for opt in OPTIONS}
        factor = float(o["shp_time_factor"])
        hp_seconds = (seconds or {}).get("hp")
        budget = factor * hp_seconds if factor > 0 and hp_seconds is not None else None
        return cls(sampler=o["sampler"], batch_size=o["batch_size"], walk_length=o["walk_length"], theta=o["theta"],
                   delta=o["delta"], batches=o["batches"], eval_batches=o["eval_batches"],
                   construction=o["shp_construction"], min_gain=o["shp_min_gain"], max_rounds=o["shp_max_rounds"],
                   validation_batches=o["validation_batches"], time_budget=budget, preset=kahypar_preset(cfg),
                   refiner=o["shp_refiner"])

    @property
    def engine(self) -> str:
        """The Mt-KaHyPar preset shp's V-cycles and partitions use: :data:`FAST_ENGINE` for
        ``fast-vcycles``, else ``preset``."""
        return FAST_ENGINE if self.refiner == "fast-vcycles" else self.preset

    def sampler_config(self, n: int, seed: int):
        from shgcn.core.sample import SamplerConfig

        size = self.batch_size or max(1, n // 10)
        return SamplerConfig(kind=self.sampler, size=size, walk_length=self.walk_length, seed=seed)

    def resolved_construction(self) -> str:
        if self.construction not in CONSTRUCTIONS:
            raise UserError(f"{quoted('--shp-construction', self.construction)}: choose from {', '.join(CONSTRUCTIONS)}")
        if self.construction == "auto":
            return "columns" if self.closed_form and self.batches is None else "batches"
        if self.construction == "columns" and not self.closed_form:
            raise UserError(f"{option('--shp-construction')} columns needs {option('--sampler')} node (or another "
                            f"sampler with closed-form inclusion probabilities)")
        return self.construction

    @property
    def closed_form(self) -> bool:
        """Its sampler's inclusion probabilities have a closed form (the node sampler's): no validation batches."""
        return SAMPLERS.get_spec(self.sampler).closed_form

    def resolved_validation_batches(self) -> int:
        return self.validation_batches or self.eval_batches

    def check(self) -> None:
        if self.sampler not in SAMPLERS:
            raise UserError(f"{quoted('--sampler', self.sampler)}: choose one of {', '.join(SAMPLERS.names())}")
        if not (self.theta > 0 and 0 < self.delta < 1):
            raise UserError(f"need theta > 0 and 0 < delta < 1 (got theta={self.theta}, delta={self.delta})")
        if self.batches is not None and self.batches < 1:
            raise UserError(f"{option('--batches', self.batches)}: must be >= 1")
        if self.eval_batches < 2:
            raise UserError(f"{option('--eval-batches', self.eval_batches)}: must be >= 2")
        if self.validation_batches < 0 or self.validation_batches == 1:
            raise UserError(f"{option('--validation-batches', self.validation_batches)}: must be >= 2 "
                            f"(0: {option('--eval-batches')})")
        if self.max_rounds < 1 or self.min_gain < 0:
            raise UserError(f"{option('--shp-max-rounds')} must be >= 1 and {option('--shp-min-gain')} >= 0")
        if self.refiner not in REFINERS:
            raise UserError(f"{quoted('--shp-refiner', self.refiner)}: choose from {', '.join(REFINERS)}")
        if self.tangent_passes < 0:
            raise UserError(f"{option('--shp-tangent-passes')} must be >= 0")
        if self.batch_size < 0 or self.walk_length < 1:
            raise UserError(f"{option('--batch-size')} must be >= 0 and {option('--walk-length')} >= 1")
        self.resolved_construction()
