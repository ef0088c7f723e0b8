"""``pipeline build``: the stages composed on Dask.

The build is a composition of stages (:mod:`.stages`), each a function from
the previous stages' typed results (frozen dataclasses of futures and small
numbers) to its own::

    source -> Ingested -> Normalized -> Partitioned -> Placed -> Measured -> Laid -> store

The graph lives on the workers as row blocks (:mod:`.blocks`); the client
only receives what it shows or decides on: counts, partition vectors and the
quality tables, O(n) at most. Every task's key names its stage, so the
dashboard's task stream reads like the pipeline, and every task is a pure
function of its inputs, so a lost worker costs a recompute, not the build.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import replace
from pathlib import Path

from shgcn import store
from shgcn.core.tables import format_minibatch, format_table

from .config import BuildConfig, BuildResult
from .runtime.client import Tasks, check_paths
from .runtime.monitor import Monitor
from .sources.records import NodeSource
from .sources.registry import detect
from .sources.registry import get as get_reader
from .sources.resolve import is_path
from .stages.ingest import ingest_stage
from .stages.layout import layout_stage
from .stages.normalize import normalize_stage
from .stages.partition import graph_file_first, partition_stage
from .stages.place import place_stage
from .stages.quality import quality_stage
from .stages.spill import forget_pattern, forget_transpose, spill_patterns
from .stages.write import Built, write_stage


def build(cfg: BuildConfig, client, echo=print, nodes: NodeSource | None = None,
          writer: store.StoreWriter | None = None) -> BuildResult:
    """Run the whole pipeline on ``client`` and write the store atomically.

    ``nodes``: node data given in memory (the Python API). ``writer``: a
    StoreWriter the caller has entered already (holding the output's lock);
    else the build makes one."""
    cfg = cfg.resolved()
    cfg.check()
    tasks = Tasks(client)
    mon = Monitor(client, cfg.heartbeat, cfg.progress)
    own_writer = writer is None
    if writer is None:
        writer = store.StoreWriter(cfg.out, overwrite=cfg.overwrite)  # refuses an existing output at once
    try:
        with writer if own_writer else contextlib.nullcontext(writer):
            if not mon.embedded:  # the workers must see what the client sees, the partial store included
                check_paths(client, [p for p in _inputs(cfg) if os.path.isfile(p)],
                            str(Path(writer.work_dir) / "shared-file-system-check"))
            with mon.stage("ingest"):
                given = None if nodes is None else tasks.submit("ingest-nodes", _given_nodes, nodes)
                ing = ingest_stage(tasks, cfg, mon, given, writer.work_dir)
            with mon.stage("normalize"):
                nrm = normalize_stage(tasks, ing, mon)
            with mon.stage("partition"):
                prepared = graph_file_first(tasks, cfg, ing, nrm, writer.work_dir)
                if prepared[1] is not None:  # a child reads the graph file: the patterns wait on disk meanwhile
                    held = [f.key for f in (*ing.a, *ing.at)]
                    ing, nrm = spill_patterns(tasks, ing, nrm, writer.work_dir)
                    tasks.settle(held)  # the blocks in memory gone before the child starts, not beside it
                parts = partition_stage(tasks, cfg, ing, nrm, mon, writer.work_dir, prepared=prepared)
                spilled = prepared[1] is not None
                if prepared[1] is not None:  # read by the partitioners only: its disk is the spilled patterns'
                    os.remove(prepared[1])
            ing = replace(ing, at=())  # A^T's pattern: nrm holds it for the quality and the layout (not the write)
            with mon.stage("place"):
                placed = place_stage(tasks, cfg, nrm, parts, mon)
                parts = placed.parts
            with mon.stage("quality"):
                meas = quality_stage(tasks, cfg, ing, nrm, placed, mon)
            with mon.stage("layout"):
                laid = layout_stage(tasks, cfg, ing, nrm, parts, mon, root=str(writer.root))
                if spilled and ing.directed:
                    forget_transpose(writer.work_dir)
            # what the write no longer needs is freed on the workers as soon as the layout has used it
            built = Built(replace(ing, a=()), nrm.nnz, parts, meas, laid, placed.placements, a=list(ing.a))
            del nrm, ing  # A's blocks: built.a alone holds them now, and the write lets each go once it is cut
            if spilled:
                forget_pattern(writer.work_dir)
            with mon.stage("write"):
                attrs = write_stage(tasks, cfg, built, writer, mon)
    finally:
        tasks.release()
    echo(format_table(meas.table))
    if meas.minibatch is not None:
        echo("\n" + format_minibatch(meas.minibatch))
    return BuildResult(Path(cfg.out), attrs, meas.table, dict(mon.times))


def _given_nodes(nodes: NodeSource) -> NodeSource:
    return nodes


def _inputs(cfg: BuildConfig) -> list[str]:
    """The files the workers must be able to read."""
    paths = [p for p in cfg.partition_files]
    if cfg.features.endswith(".npy"):
        paths.append(cfg.features)
    if isinstance(cfg.source, str) and is_path(cfg.source) and not get_reader(detect(cfg.source)).names_files:
        paths.append(cfg.source)
    return paths
