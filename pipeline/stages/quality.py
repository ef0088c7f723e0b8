"""The quality stage: the full-batch communication of every model's
partition, by row blocks on the workers (:mod:`..metrics.volume`); and any
extra report a model of the build asks for (the held-out mini-batch volume
of every model, for ``shp``: :mod:`..metrics.batches`)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from shgcn.core.tables import table_from_dataset

from ..config import BuildConfig
from ..metrics import internode, volume
from ..models import PartitionResult, get
from ..placement import Placement
from ..runtime.client import Tasks
from ..runtime.monitor import Monitor
from .ingest import Ingested
from .normalize import Normalized
from .place import Placed


@dataclass(frozen=True)
class Measured:
    """The ``quality`` dataset, the extra ``minibatch`` dataset (or None), and
    the quality table (one row per model)."""

    quality: Any
    minibatch: Any
    table: list[dict]


def quality_stage(tasks: Tasks, cfg: BuildConfig, ing: Ingested, nrm: Normalized, placed: Placed,
                  mon: Monitor) -> Measured:
    """Full-batch quality of every model by blocks (and between its nodes, when they are placed); the extra
    report a model asks for."""
    q_f = []
    parts = placed.parts
    dims = cfg.dims(ing.node_plan.dim, ing.node_plan.classes)
    for m, f in parts.futures.items():
        partials = [tasks.submit(f"quality-{m}", _block_quality, ab, tb, f, cfg.parts, ing.directed)
                    for ab, tb in zip(*nrm.patterns())]
        q = tasks.submit(f"quality-{m}", _merge_quality, m, cfg.parts, nrm.weights, f, dims, *partials)
        if m in placed.placements:
            p = placed.placements[m]
            nodes = -(-cfg.parts // p.ranks_per_node)
            nv = [tasks.submit(f"quality-{m}", _block_nodes, tb, f, p.ranks_per_node, nodes) for tb in nrm.patterns()[1]]
            q = tasks.submit(f"quality-{m}", _with_nodes, q, p, *nv)
        q_f.append(q)
    mon.bar(q_f, "quality")
    qds = volume.to_dataset(tasks.gather(q_f))
    report = _extra_report(cfg, ing.n)
    minibatch = None
    if report is not None:
        mb = tasks.submit("quality-minibatch", _minibatch, report, nrm.full(tasks), nrm.pattern(tasks),
                          parts.futures, cfg.parts)
        mon.bar([mb], "quality: mini-batch")
        minibatch = mb.result()
    return Measured(qds, minibatch, table_from_dataset(qds))


def _extra_report(cfg: BuildConfig, n: int):
    """The first extra report a model of the build asks for, or None."""
    pcfg = cfg.partition_config()
    for m in cfg.models:
        report = get(m).extra_quality(pcfg, n)
        if report is not None:
            return report
    return None


def _block_quality(ab, tb, res: PartitionResult, parts: int, directed: bool) -> volume.Partial:
    return volume.block_quality(ab, tb, res.part, parts, directed)


def _merge_quality(model: str, parts: int, weights: np.ndarray, res: PartitionResult, dims: list[int],
                   *partials: volume.Partial) -> volume.Quality:
    return volume.merge_quality(model, parts, weights, res.part, res.seconds, *partials, dims=dims)


def _block_nodes(tb, res: PartitionResult, k: int, nodes: int) -> np.ndarray:
    return internode.block_node_volume(tb, res.part, k, nodes)


def _with_nodes(q: volume.Quality, p: Placement, *node_volumes: np.ndarray) -> volume.Quality:
    """The quality with its node-level measures (the node volume matrix summed over the blocks)."""
    nv = np.sum(node_volumes, axis=0)
    return replace(q, nodes=internode.NodeQuality(p.ranks_per_node, nv, internode.flat_inter(q.volume, p.ranks_per_node),
                                                  p.block_rows, p.how))


def _minibatch(report, a, graph, results: dict, parts: int):
    return report.compute(a, graph, {m: r.part for m, r in results.items()}, parts)
