"""``hp``: a partition for the column-net hypergraph of Â, whose
connectivity-1 is the exact communication volume of one SpMM.

``--hp-preset`` chooses how:

- ``fast`` (the default): KaMinPar's graph partition (its ``default`` preset,
  one thread) from the ParHIP file the workers write, brought under the
  strict load bound (:mod:`.rebalance`), refined for
  connectivity-1 on the hypergraph (:mod:`.km1`): 0.84x-0.92x METIS's total
  volume in 2x-5x METIS's CPU time on the shared graphs (benchmarks/RESULTS.md,
  "hp's start"), and deterministic (the same partition for the same seed and
  versions).
- ``deterministic``, ``default``, ``quality``, ``deterministic_quality``,
  ``highest_quality``, ``large_k``: Mt-KaHyPar with that preset, from
  scratch (slower: 13x-33x METIS's time here). Only the deterministic ones
  give the same partition for the same seed with several threads.
"""

from __future__ import annotations

from dataclasses import dataclass

from .base import GRAPH_FILE, MATRIX, Assignment, Inputs, Model, Option, PartitionConfig

KAHYPAR_PRESETS = ("deterministic", "default", "quality", "deterministic_quality", "highest_quality", "large_k")
PRESET = Option("--hp-preset", "fast", "hp: fast (KaMinPar + connectivity refinement, deterministic) or a "
                "Mt-KaHyPar preset (deterministic is reproducible with threads; default, quality are not)",
                choices=("fast", *KAHYPAR_PRESETS))
# KaMinPar's preset for the start: with the work weights of the 2026-11-25 epoch model, "default" starts the
# refinement as well as "eco" or better, in 55-80% of its time (benchmarks/RESULTS.md, "hp's start")
START_PRESET = "default"


def kahypar_preset(cfg: PartitionConfig) -> str:
    """The Mt-KaHyPar preset of ``cfg`` (``fast`` is no Mt-KaHyPar preset:
    models that need Mt-KaHyPar, such as shp, use ``deterministic`` then)."""
    preset = cfg.option(PRESET)
    return preset if preset in KAHYPAR_PRESETS else "deterministic"


@dataclass(frozen=True)
class HypergraphPartition(Model):
    def needs_for(self, cfg: PartitionConfig) -> frozenset[str]:
        return frozenset({MATRIX, GRAPH_FILE} if cfg.option(PRESET) == "fast" else {MATRIX})

    def in_child(self, inputs: Inputs, cfg: PartitionConfig) -> bool:
        return True

    def run(self, inputs: Inputs, cfg: PartitionConfig) -> Assignment:
        if cfg.option(PRESET) != "fast":
            from ..metrics.hypergraph import column_net
            from .kahypar import kahypar_partition

            hg = column_net(inputs.a, weights=inputs.vertex_weights())
            return Assignment(kahypar_partition(hg, cfg.parts, cfg.eps, cfg.seed, cfg.threads, cfg.option(PRESET)))
        return self._fast(inputs, cfg)

    def _fast(self, inputs: Inputs, cfg: PartitionConfig) -> Assignment:
        from .gp import kaminpar_balanced
        from .km1 import refine_km1

        start, balance = kaminpar_balanced(inputs, cfg, START_PRESET)
        part, info = refine_km1(inputs.a, start, cfg.parts, inputs.vertex_weights(), cfg.eps, cfg.seed)
        return Assignment(part, {"preset": "fast", "start": f"kaminpar {START_PRESET}", "rebalance": balance,
                                 "refine": info})

MODEL = HypergraphPartition("hp", "the column-net hypergraph of Â (connectivity-1 = exact volume): KaMinPar refined "
                                  "for connectivity (--hp-preset fast) or Mt-KaHyPar",
                            options=(PRESET,), needs=frozenset({MATRIX, GRAPH_FILE}))
