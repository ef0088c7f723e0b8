"""The write stage: rank blocks, graph blocks and node rows written by the
workers, in parallel; then the O(n) arrays, the tables and the root
attributes by the client; the store appears only at the final swap
(:class:`shgcn.store.StoreWriter`)."""

from __future__ import annotations

import platform
import sys
from dataclasses import asdict, dataclass, field

import numpy as np

from shgcn import store

from .. import blocks, nodes
from .._version import __version__
from ..config import BuildConfig
from ..models import get
from ..placement import Placement
from ..runtime.client import Tasks
from ..runtime.monitor import Monitor
from . import rankwrite
from .ingest import Ingested
from .layout import Laid
from .partition import Partitioned
from .quality import Measured


@dataclass(frozen=True)
class Built:
    """What the write stage writes: the earlier stages' results (``ing``
    without its A^T blocks, which only the layout needed), and Â's nonzeros."""

    ing: Ingested
    nnz: int
    parts: Partitioned
    meas: Measured
    laid: Laid
    placements: dict[str, Placement] = field(default_factory=dict)  # each model's parts on nodes (--ranks-per-node)
    # A's pattern blocks (futures) when ``ing`` no longer holds them: the write lets go of them once it has cut
    # them into the store's graph chunks, so each block (its spilled file's disk too) goes before the write ends
    a: list = field(default_factory=list)


def write_stage(tasks: Tasks, cfg: BuildConfig, built: Built, writer: store.StoreWriter, mon: Monitor) -> dict:
    """Rank blocks, graph blocks and node rows written by the workers, in
    parallel; then the O(n) arrays, the tables and the root attributes by the
    client; the store appears only at the final swap."""
    import distributed

    ing, parts, meas, laid = built.ing, built.parts, built.meas, built.laid
    root = writer.root
    layout_part = parts.results[cfg.layout].part
    file_ids = ing.file_ids.result()
    rows = blocks.STORE_ROWS
    multi = ing.node_plan.classes if ing.node_plan.label_kind == "multi" else None
    writer.create_nodes(ing.n, ing.node_plan.dim, rows, file_ids, layout_part, feature_dtype=cfg.feature_dtype,
                        multi_label_classes=multi)
    none = [None] * len(laid.halos)
    rank_f = [tasks.submit("write-rank", rankwrite.write_rank, root, (r, laid.offsets), (h, th), (s, t), *laid.cuts)
              for r, (h, th, s, t) in enumerate(zip(laid.halos, laid.t_halos or none, laid.sends, laid.t_sends or none))]
    store_bounds = np.append(np.arange(0, ing.n, rows, dtype=np.int64), ing.n)
    graph_f, node_f = [], []
    a_blocks = built.a or list(ing.a)
    for k, (lo, hi) in enumerate(zip(store_bounds[:-1].tolist(), store_bounds[1:].tolist())):
        # the store's fixed row chunks, each from the slices of the blocks that cover it
        spans = blocks.pieces_of_range(ing.bounds, lo, hi)
        g = [tasks.submit("write-slice", blocks.slice_rows, a_blocks[b], a, z) for b, a, z in spans]
        graph_f.append(tasks.submit("write-graph", _write_graph, root, k, *g))
        node_f.append(tasks.submit("write-nodes", _write_nodes, root, (lo, hi), ing.node_recipe))
    built.a.clear()
    del a_blocks, g
    everything = rank_f + graph_f + node_f
    mon.bar(everything, "write")
    distributed.wait(everything)  # all settled, failed or not, before the writer may clean up
    sums = tasks.gather(rank_f)
    graph_sums = tasks.gather(graph_f)
    writer.record_node_sums({k: v for piece in tasks.gather(node_f) for k, v in piece.items()})
    writer.write_permutation(laid.perm, laid.offsets)
    writer.write_graph_bounds(store_bounds, graph_sums)
    for m, res in parts.results.items():
        writer.write_partition(m, res.part)
    writer.write_quality(meas.quality)
    if meas.minibatch is not None:
        writer.write_minibatch(meas.minibatch)
    mon.snapshot()  # the write stage's time and memory so far, for the attributes
    attrs = _attrs(cfg, built, sums, mon)
    writer.commit(attrs)
    return attrs


def _write_graph(root: str, k: int, *parts: blocks.RowBlock) -> str:
    blk = blocks.join_rows(*parts)
    store.release_pages(*[p.indices for p in parts])  # a spilled pattern's pages, read for this chunk
    return store.write_graph_block(root, k, blk.indptr, blk.indices)


def _write_nodes(root: str, rows: tuple[int, int], recipe: tuple) -> dict[str, str]:
    """The node data of rows lo..hi-1 (a chunk of the store's), made here
    (:func:`nodes.node_block`, from :attr:`Ingested.node_recipe <.ingest.Ingested>`) and written."""
    nb = nodes.node_block(*rows, *recipe)
    return store.write_node_rows(root, nb.lo, {"features": nb.features, "labels": nb.labels, "train_mask": nb.train,
                                        "val_mask": nb.val, "test_mask": nb.test})


def _versions() -> dict[str, str]:
    import importlib.metadata as md

    out = {"shgcn": __version__, "python": platform.python_version()}
    for pkg in ("numpy", "scipy", "dask", "distributed", "zarr", "xarray", "pyarrow", "pymetis", "mtkahypar"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = "absent"
    return out


def _attrs(cfg: BuildConfig, built: Built, sums: list[str], mon: Monitor) -> dict:
    ing, nnz, parts = built.ing, built.nnz, built.parts
    config = {k: v for k, v in asdict(cfg).items() if k not in ("out", "command", "progress", "source")}
    config["options"] = dict(cfg.partition_config().options)
    attrs = {
        "dataset": ing.name,
        "source": cfg.source_name,
        "n": int(ing.n),
        "nnz": int(nnz),
        "edges": int(ing.stats["edges"]),
        "directed": bool(ing.directed),
        "parts": int(cfg.parts),
        "model": cfg.layout,
        "models": list(cfg.all_models),
        "eps": cfg.eps,
        "seed": cfg.seed,
        "balance": cfg.balance,
        "work_dims": cfg.dims(ing.node_plan.dim, ing.node_plan.classes),
        "feature_dim": int(ing.node_plan.dim),
        "classes": int(ing.node_plan.classes),
        "label_kind": ing.node_plan.label_kind,
        "feature_dtype": cfg.feature_dtype,
        "feature_norm": ing.feature_norm,
        "split": list(cfg.split),
        "stats": ing.stats,
        "notes": list(ing.notes),
        "command": cfg.command or " ".join(sys.argv),
        "config": config,
        "versions": _versions(),
        "checksums": {str(r): s for r, s in enumerate(sums)},
        "timings": dict(mon.times),
        "peak_rss_mib_by_stage": {k: dict(v) for k, v in mon.peaks.items()},
        "peak_rss_mib": mon.peak_overall(),
        "peak_rss_mib_while_partitioning": {k: dict(v) for k, v in mon.while_partitioning.items()},
        "partitions": {m: _partition_record(m, r) for m, r in parts.results.items()},
    }
    if built.placements:  # the rank order: rank of every part the partitioner made, by model
        attrs["ranks_per_node"] = int(cfg.ranks_per_node)
        attrs["placement"] = {m: {"how": p.how, "rank_of_part": p.rank_of_part.tolist(), "inter_rows": p.inter_rows,
                                  "block_rows": p.block_rows} for m, p in built.placements.items()}
    for m, r in parts.results.items():
        if m in cfg.models and get(m).record == "attribute":  # a long record: its own attribute
            attrs[m] = r.info
    return attrs


def _partition_record(model: str, r) -> dict:
    """What the ``partitions`` attribute keeps of a model's result."""
    from ..models import REGISTRY

    long = model in REGISTRY and get(model).record == "attribute"
    return {"seconds": round(r.seconds, 3), **({"peak_rss_mib": r.peak_rss_mib} if r.peak_rss_mib else {}),
            **({} if long else r.info)}
