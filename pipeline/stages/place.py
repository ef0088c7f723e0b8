"""The place stage (``pipeline build --ranks-per-node k``): every model's
parts on nodes of k ranks (:mod:`..placement`), then its part ids
renumbered so that rank r of the store is on node r // k. The stored
partitions, blocks, quality tables and everything after are in that order;
the store's ``placement`` attribute records each model's rank of every part
the partitioner made, the method that won and the rows that cross between
nodes against block placement.

The rows' part sets are found by column blocks on the workers (Âᵀ's rows:
:func:`..metrics.internode.block_nets`), merged in one task per model, and
placed there; the client receives the placements (O(P)) and the renumbered
part vectors it gathers anyway.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..config import BuildConfig
from ..metrics.internode import Nets, block_nets, merge_nets
from ..metrics.volume import block_quality
from ..models import PartitionResult
from ..placement import Placement, place
from ..runtime.client import Tasks
from ..runtime.monitor import Monitor
from .normalize import Normalized
from .partition import Partitioned


@dataclass(frozen=True)
class Placed:
    """The partitions renumbered to their ranks (``parts``), and each model's :class:`Placement`."""

    parts: Partitioned
    placements: dict[str, Placement]


def place_stage(tasks: Tasks, cfg: BuildConfig, nrm: Normalized, parts: Partitioned, mon: Monitor) -> Placed:
    """Every model placed on nodes of ``cfg.ranks_per_node`` ranks (nothing to do without nodes)."""
    if not cfg.ranks_per_node:
        return Placed(parts, {})
    futures: dict[str, Any] = {}
    for m, f in parts.futures.items():
        blocks = [tasks.submit(f"place-{m}", _block, ab, tb, f, cfg.parts) for ab, tb in zip(*nrm.patterns())]
        futures[m] = tasks.submit(f"place-{m}", _place, f, (cfg.parts, cfg.ranks_per_node, cfg.placement, cfg.seed),
                                  *blocks)
    mon.bar(list(futures.values()), f"place: {cfg.placement}, {cfg.ranks_per_node} ranks a node")
    placed = {m: f.result() for m, f in futures.items()}
    results = {m: replace(r, part=p.rank_of_part[r.part].astype(np.int32)) for m, (r, p) in placed.items()}
    renumbered = {m: tasks.submit(f"place-{m}", _renumber, parts.futures[m], p) for m, (_, p) in placed.items()}
    return Placed(Partitioned(renumbered, results), {m: p for m, (_, p) in placed.items()})


def _block(a_block, at_block, result: PartitionResult, parts: int) -> tuple[Nets, np.ndarray]:
    """One column block's part sets and its share of the part volume matrix (the volume does not depend on
    the direction: the edge cut, which does, is not used here)."""
    part = np.asarray(result.part, np.int64)
    return block_nets(at_block, part, parts), block_quality(a_block, at_block, part, parts, False).volume


def _place(result: PartitionResult, how: tuple[int, int, str, int], *blocks: tuple[Nets, np.ndarray]
           ) -> tuple[PartitionResult, Placement]:
    """The ``place-<model>`` task: the blocks' nets merged, the parts placed."""
    parts, k, method, seed = how
    nets = merge_nets(*(b[0] for b in blocks))
    volume = np.sum([b[1] for b in blocks], axis=0) if blocks else np.zeros((parts, parts), np.int64)
    return result, place(nets, volume, k, method, seed)


def _renumber(result: PartitionResult, p: Placement) -> PartitionResult:
    """The result with every part id replaced by its rank."""
    return replace(result, part=p.rank_of_part[result.part].astype(np.int32))
