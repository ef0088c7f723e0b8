"""The partition stage: every requested model, one at a time (each
partitioner uses the cores it needs, and each wall time is its own); native
ones in child processes; imported assignments (``--partition-file``)
checked and used as they are. The stage asks each model what it needs
(:mod:`..models`) and names none."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from shgcn.core.work import vertex_weights

from ..config import BuildConfig
from ..errors import UserError, option
from ..models import Inputs, PartitionConfig, PartitionResult, build_order, get, reads_graph_file
from ..models.base import GRAPH, GRAPH_FILE, MATRIX
from ..runtime.client import Tasks
from ..runtime.monitor import Monitor
from .graphfile import write_graph_file
from .ingest import Ingested
from .normalize import Normalized


@dataclass(frozen=True)
class Partitioned:
    """Every model's result: futures (for the tasks that follow) and the
    gathered results (part vectors, O(n), and times)."""

    futures: dict[str, Any]
    results: dict[str, PartitionResult]


@dataclass(frozen=True)
class PendingInputs:
    """A model's :class:`~..models.base.Inputs` as the client holds them:
    futures for what lives on the workers (Â, the graph's pattern, the
    vertex weights, the starts' results), so that the partition task
    receives them resolved, worker to worker (:meth:`by_name`)."""

    n: int
    a: Any = None  # future of Â, or None
    graph: Any = None  # future of the pattern, or None
    starts: dict[str, Any] = field(default_factory=dict)  # futures of the starts' PartitionResults, by model
    seconds: dict[str, float] = field(default_factory=dict)
    weights: Any = None  # future of the (n,) vertex weights
    graph_file: str | None = None

    def by_name(self) -> dict[str, Any]:
        """The fields by name, in a dict: Dask resolves the futures in a dict argument (not in a dataclass)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


def graph_file_first(tasks: Tasks, cfg: BuildConfig, ing: Ingested, nrm: Normalized,
                     tmp_root: str) -> tuple[Any, str | None]:
    """The partition's vertex weights (a future) and, when a model of
    ``cfg`` reads a graph file, that file written (by the workers, into the
    partial store): what :func:`partition_stage` takes as ``prepared``, so
    that the caller may let the graph go from memory before a child runs."""
    pcfg = cfg.partition_config()
    weights = tasks.submit("partition-weights", vertex_weights, nrm.weights, cfg.balance,
                           cfg.dims(ing.node_plan.dim, ing.node_plan.classes))
    if not reads_graph_file(cfg.models, pcfg):
        return weights, None
    os.makedirs(tmp_root, exist_ok=True)
    return weights, write_graph_file(tasks, ing, weights, os.path.join(tmp_root, "graph.parhip")).path


def partition_stage(tasks: Tasks, cfg: BuildConfig, ing: Ingested, nrm: Normalized, mon: Monitor,
                    tmp_root: str, *, prepared: tuple[Any, str | None] | None = None) -> Partitioned:
    """Partition with every model of ``cfg`` (each after the models it starts
    from); ``prepared``: :func:`graph_file_first`'s weights and graph file."""
    pcfg = cfg.partition_config()
    dims = cfg.dims(ing.node_plan.dim, ing.node_plan.classes)
    weights, graph_file = prepared if prepared is not None else \
        (tasks.submit("partition-weights", vertex_weights, nrm.weights, cfg.balance, dims), None)
    futures: dict[str, Any] = {}
    results: dict[str, PartitionResult] = {}
    mon.partitioning_starts()  # the graph file is written: what the build holds beside the children is recorded apart
    for m in build_order(cfg.models):
        p = get(m)
        needs = p.needs_for(pcfg)
        starts = {s: futures[s] for s in p.starts_from if s in futures}
        seconds = {k: r.seconds for k, r in results.items()}
        a = nrm.full(tasks) if MATRIX in needs else None
        graph = nrm.pattern(tasks) if GRAPH in needs else None
        if GRAPH_FILE in needs and graph_file is None:  # written once, by the workers, into the partial store
            os.makedirs(tmp_root, exist_ok=True)
            graph_file = write_graph_file(tasks, ing, weights, os.path.join(tmp_root, "graph.parhip")).path
        inputs = PendingInputs(ing.n, a, graph, starts, seconds, weights, graph_file if GRAPH_FILE in needs else None)
        f = tasks.submit(f"partition-{m}", _partition, m, inputs.by_name(), pcfg, tmp_root)
        mon.bar([f], f"partition: {m}")
        futures[m] = f
        results[m] = f.result()
        mon.record_child(m, results[m].peak_rss_mib)
    for path, m in zip(cfg.partition_files, cfg.imported_models()):
        f = tasks.submit(f"partition-{m}", _imported, m, path, ing.n, cfg.parts)
        futures[m], results[m] = f, f.result()
    order = cfg.all_models  # tables and attributes list the models as asked
    return Partitioned({m: futures[m] for m in order}, {m: results[m] for m in order})


def _partition(model: str, inputs: dict[str, Any], cfg: PartitionConfig, tmp_root: str) -> PartitionResult:
    """The ``partition-<model>`` task: ``inputs``, :meth:`PendingInputs.by_name`
    with its futures resolved (the starts as results, of which the model gets the parts)."""
    from ..models.run import run

    starts = {k: v.part for k, v in inputs["starts"].items()}
    return run(model, Inputs(**{**inputs, "starts": starts}), cfg, tmp_root)


def _imported(model: str, path: str, n: int, parts: int) -> PartitionResult:
    """``--partition-file``: one part id per line (or a .npy vector), in the
    input's vertex order, from a distributed partitioner or an earlier build."""
    if not os.path.exists(path):
        raise UserError(f"{option('--partition-file', path)}: file not found")
    if path.endswith(".npy"):
        try:
            part = np.load(path, allow_pickle=False)
        except (ValueError, OSError) as e:
            raise UserError(f"{option('--partition-file', path)}: not a .npy array ({e})") from None
    else:
        import pyarrow as pa
        import pyarrow.csv as pacsv

        try:
            t = pacsv.read_csv(path, read_options=pacsv.ReadOptions(autogenerate_column_names=True),
                               convert_options=pacsv.ConvertOptions(column_types={"f0": pa.int64()}))
        except (pa.ArrowInvalid, OSError) as e:
            raise UserError(f"{option('--partition-file', path)}: expected one part id per line ({str(e).splitlines()[0]})") \
                from None
        if t.num_columns != 1 or t.column(0).null_count:
            raise UserError(f"{option('--partition-file', path)}: expected exactly one integer per line")
        part = t.column(0).to_numpy()
    if part.ndim != 1 or part.shape[0] != n:
        raise UserError(f"{option('--partition-file', path)}: {part.shape[0] if part.ndim == 1 else part.shape} entries for a "
                        f"graph of {n:,} vertices")
    if part.dtype.kind not in "iu" or (part.size and (part.min() < 0 or part.max() >= parts)):
        raise UserError(f"{option('--partition-file', path)}: part ids must be integers in 0..{parts - 1} "
                        f"({option('--parts', parts)})")
    return PartitionResult(model, part.astype(np.int32), 0.0, {"file": path})
