"""``hp``: Mt-KaHyPar on the column-net hypergraph of Â, whose
connectivity-1 is the exact communication volume of one SpMM."""

from __future__ import annotations

from dataclasses import dataclass

from .base import Assignment, Inputs, Model, Option, PartitionConfig

PRESET = Option("--hp-preset", "deterministic", "Mt-KaHyPar preset (deterministic is reproducible)",
                choices=("deterministic", "default", "quality", "deterministic_quality"))


@dataclass(frozen=True)
class HypergraphPartition(Model):
    def in_child(self, inputs: Inputs, cfg: PartitionConfig) -> bool:
        return True

    def run(self, inputs: Inputs, cfg: PartitionConfig) -> Assignment:
        from ..metrics.hypergraph import column_net
        from .kahypar import kahypar_partition

        hg = column_net(inputs.a, weights=inputs.vertex_weights())
        part = kahypar_partition(hg, cfg.parts, cfg.eps, cfg.seed, cfg.threads, cfg.option(PRESET))
        return Assignment(part)


MODEL = HypergraphPartition("hp", "Mt-KaHyPar on the column-net hypergraph of Â: connectivity-1 = exact volume",
                            options=(PRESET,))
