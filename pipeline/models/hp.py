"""``hp``: a partition for the column-net hypergraph of Â, whose
connectivity-1 is the exact communication volume of one SpMM.

Every preset but the ``mtkahypar-*`` ones starts from other partitions and
refines them for connectivity-1, so hp's total volume is never above that of
a partition it started from (the refinements never raise it). Every preset
but Mt-KaHyPar's non-deterministic ones gives the same partition for the
same seed and versions, with any thread count. ``--hp-preset`` chooses,
along a measured curve of quality against time (benchmarks/RESULTS.md, "hp
presets"):

- ``fast``: KaMinPar's partition (its ``default`` preset, one thread,
  brought under the strict load bound: :mod:`.rebalance`), refined for
  connectivity-1 on the hypergraph (:mod:`.km1`).
- ``default``: the same for METIS's partition as well (when Â has at most
  :data:`METIS_START_NNZ` nonzeros: METIS holds about 220 bytes a nonzero),
  keeping the refined partition of lower volume: hp's total is then at most
  both graph partitioners'.
- ``quality``: ``default``'s result improved by Mt-KaHyPar V-cycles
  (multilevel FM refinement) with its ``deterministic`` preset (measured
  better than its ``quality`` preset's V-cycles on soc-slashdot0902, and
  reproducible).
- ``highest``: ``quality`` with Mt-KaHyPar's own partition from scratch
  (``deterministic`` preset) as one more start: the best found here, and
  the slowest.
- ``mtkahypar-<preset>``: Mt-KaHyPar with that preset from scratch, as it
  comes (its ``default``, ``quality``... are not reproducible with several
  threads).

When the build also computes ``gp``, its partition is one more start (it
may come from another backend or preset than hp's own starts).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import option
from .base import GRAPH_FILE, MATRIX, Assignment, Figures, Inputs, Model, Option, PartitionConfig

if TYPE_CHECKING:
    from ..sources.counts import Counts

KAHYPAR_PRESETS = ("deterministic", "default", "quality", "deterministic_quality", "highest_quality", "large_k")
SCRATCH = tuple(f"mtkahypar-{p}" for p in KAHYPAR_PRESETS)
VCYCLE_PRESETS = ("quality", "highest")  # improved by Mt-KaHyPar's V-cycles at the end
PRESETS = ("fast", "default", *VCYCLE_PRESETS, *SCRATCH)
PRESET = Option("--hp-preset", "default", "hp: fast (KaMinPar refined for connectivity), default (the better of "
                "KaMinPar and METIS, refined), quality (then Mt-KaHyPar V-cycles), highest (Mt-KaHyPar's own "
                "partition as one more start) or mtkahypar-<preset> (Mt-KaHyPar from scratch)", choices=PRESETS)
ENGINE = "deterministic"  # Mt-KaHyPar's preset behind quality and highest
# KaMinPar's preset for the start: with the work weights of the 2026-11-25 epoch model, "default" starts the
# refinement as well as "eco" or better, in 55-80% of its time (benchmarks/RESULTS.md, "hp's start")
START_PRESET = "default"
METIS_START_NNZ = 20_000_000  # METIS is a start up to this many nonzeros of Â (about 4.4 GB at its peak)
VCYCLES = 1  # Mt-KaHyPar V-cycles of quality and highest (3 of its quality preset's: 0.5% lower than 1 on soc-slashdot0902 p16)


def kahypar_preset(cfg: PartitionConfig) -> str:
    """The Mt-KaHyPar preset behind ``cfg``'s hp preset (``fast`` and
    ``default`` use none: models that need Mt-KaHyPar, such as shp, use
    :data:`ENGINE` then)."""
    preset = cfg.option(PRESET)
    return preset.removeprefix("mtkahypar-") if preset in SCRATCH else ENGINE


def refined_starts(inputs: Inputs, cfg: PartitionConfig, metis: bool, hg=None) -> tuple[np.ndarray, dict]:
    """The start of lowest total volume after connectivity-1 refinement,
    among KaMinPar's, METIS's (``metis`` and Â small enough), Mt-KaHyPar's
    on the hypergraph ``hg`` (when given) and the build's gp partition (if
    any); ties go to the earlier start.

    Returns
    -------
    part : (n,) int32
    info : dict: per start, its refinement record (``start``/``end`` volume,
        passes, moves, seconds) and the ``rebalance`` of its graph partition;
        ``best``: the start kept
    """
    from .gp import kaminpar_balanced, metis_balanced
    from .km1 import refine_km1

    w = inputs.vertex_weights()
    # auto=False: the build's eps for the start at any size (a lean start ended 3.7% higher, gp.kaminpar_eps)
    starts: dict[str, tuple[np.ndarray, dict]] = {
        f"kaminpar {START_PRESET}": kaminpar_balanced(inputs, cfg, START_PRESET, auto=False)}
    if metis and inputs.a is not None and inputs.a.nnz <= METIS_START_NNZ and cfg.parts > 1:
        starts["metis"] = metis_balanced(inputs.a, cfg.parts, cfg.eps, cfg.seed, w)
    if hg is not None:
        from .kahypar import kahypar_partition

        starts["mtkahypar"] = (kahypar_partition(hg, cfg.parts, cfg.eps, cfg.seed, cfg.threads, ENGINE), {})
    if "gp" in inputs.starts and not any(np.array_equal(inputs.starts["gp"], s) for s, _ in starts.values()):
        starts["gp"] = (np.asarray(inputs.starts["gp"], np.int32), {})
    info: dict[str, dict] = {}
    best_name, best = "", np.zeros(0, np.int32)
    for name, (start, balance) in starts.items():
        part, record = refine_km1(inputs.a, start, cfg.parts, w, cfg.eps, cfg.seed)
        info[name] = {**record, "rebalance": balance} if balance else record
        if not best_name or record["end"] < info[best_name]["end"]:
            best_name, best = name, part
    return best, {"best": best_name, "starts": info}


@dataclass(frozen=True)
class HypergraphPartition(Model):
    def needs_for(self, cfg: PartitionConfig) -> frozenset[str]:
        return frozenset({MATRIX} if cfg.option(PRESET) in SCRATCH else {MATRIX, GRAPH_FILE})

    def figures(self, counts: Counts, options: Mapping[str, Any], fitted: Collection[str]) -> Figures:
        """With METIS's start (the default preset up to :data:`METIS_START_NNZ` nonzeros), or without it
        (``<name>-fast``, where fitted: the fast preset, and every preset above that size)."""
        fast = f"{self.name}-fast"
        if f"partition:{fast}" in fitted and (counts.nnz > METIS_START_NNZ or options.get(PRESET.dest) == "fast"):
            return Figures(fast, "KaMinPar, Mt-KaHyPar")
        return Figures(self.name, "KaMinPar, METIS, Mt-KaHyPar")

    def advice(self, counts: Counts, options: Mapping[str, Any]) -> str:
        return f"use {option('--hp-preset', 'fast')} (no METIS start) or {option('--model', 'gp')}"

    def run(self, inputs: Inputs, cfg: PartitionConfig) -> Assignment:
        from ..metrics.hypergraph import column_net, connectivity_minus_one
        from .kahypar import kahypar_partition

        preset = cfg.option(PRESET)
        if preset in SCRATCH:
            hg = column_net(inputs.a, weights=inputs.vertex_weights())
            part = kahypar_partition(hg, cfg.parts, cfg.eps, cfg.seed, cfg.threads, kahypar_preset(cfg))
            return Assignment(part, {"preset": preset})
        if preset not in VCYCLE_PRESETS or cfg.parts < 2:
            part, info = refined_starts(inputs, cfg, metis=preset != "fast")
            return Assignment(part, {"preset": preset, **info})
        import time

        hg = column_net(inputs.a, weights=inputs.vertex_weights())
        part, info = refined_starts(inputs, cfg, metis=True, hg=hg if preset == "highest" else None)
        t0 = time.perf_counter()
        part = kahypar_partition(hg, cfg.parts, cfg.eps, cfg.seed, cfg.threads, ENGINE, initial=part, vcycles=VCYCLES)
        vc = {"preset": ENGINE, "count": VCYCLES, "seconds": round(time.perf_counter() - t0, 3),
              "end": connectivity_minus_one(hg, part, cfg.parts)}
        return Assignment(part, {"preset": preset, **info, "vcycles": vc})


MODEL = HypergraphPartition("hp", "the column-net hypergraph of Â (connectivity-1 = exact volume): graph partitions "
                                  "refined for connectivity (--hp-preset fast, default), then Mt-KaHyPar V-cycles "
                                  "(quality, highest), or Mt-KaHyPar from scratch",
                            options=(PRESET,), needs=frozenset({MATRIX, GRAPH_FILE}), starts_from=("gp",),
                            runs_in_child=True, layout_first=True)
