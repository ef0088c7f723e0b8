"""``pipeline build``: the stages composed on Dask.

The build is a composition of stages, each a function from the previous
stages' typed results (frozen dataclasses of futures and small numbers) to
its own::

    source -> Ingested -> Normalized -> Partitioned -> Measured -> Laid -> store

The graph lives on the workers as row blocks (:mod:`.blocks`); the client
only receives what it shows or decides on: counts, partition vectors and the
quality tables, O(n) at most. Every task's key names its stage, so the
dashboard's task stream reads like the pipeline, and every task is a pure
function of its inputs, so a lost worker costs a recompute, not the build.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import platform
import sys
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from shgcn import store

from . import (
    __version__,
    batch_quality,
    blocks,
    datasets,
    ingest,
    layout,
    nodedata,
    partition,
    quality,
    readers,
    stochastic,
    synthetic,
)
from .cluster import Tasks, check_paths
from .errors import UserError
from .graph import NodeSource, ParsedChunk
from .monitor import Monitor

log = logging.getLogger(__name__)

BLOCK_NNZ = 1 << 22  # nonzeros per row block (the unit of parallel work)


def model_names() -> tuple[str, ...]:
    """Every registered partition model (the CLI's ``--model`` choices)."""
    return tuple(partition.load_models())


@dataclass(frozen=True)
class BuildConfig:
    """Everything a build depends on. Same config (and inputs) -> same store.

    ``source`` is a dataset name, a file path, a generator spec (``rmat:...``,
    ``sbm:...``), or in memory (the Python API): a scipy.sparse matrix or a
    (2, E) edge_index array. ``partition_files`` import assignments made
    elsewhere (one part per line, or .npy) as models named by their stems.
    """

    source: Any
    out: str
    parts: int
    models: tuple[str, ...] = ("hp",)
    layout_model: str | None = None
    eps: float = 0.03
    seed: int = 0
    threads: int = 0
    hp_preset: str = "deterministic"
    fmt: str | None = None
    data_dir: str | None = None
    directed: bool | None = None
    features: str = "auto"
    labels: str = "auto"
    feature_norm: str | None = None  # None: the dataset's default
    split: tuple[float, float, float] = (0.6, 0.2, 0.2)
    overwrite: bool = False
    chunk_bytes: int = ingest.DEFAULT_CHUNK_BYTES
    max_line: int = ingest.MAX_LINE_BYTES
    header: str = "auto"
    block_nnz: int = BLOCK_NNZ
    shp: stochastic.SHPConfig = field(default_factory=stochastic.SHPConfig)
    shp_time_factor: float = 0.0  # > 0 with hp in the same build: shp's time budget in units of hp's time (clock-dependent)
    max_total_increase: float = 0.02  # the -vb refinements' budget on the total volume
    partition_files: tuple[str, ...] = ()
    progress: bool = False  # a progress bar per stage on the terminal
    heartbeat: float = 30.0  # seconds between "still running" log lines
    command: str = ""

    @property
    def source_name(self) -> str:
        return self.source if isinstance(self.source, str) else type(self.source).__name__

    def imported_models(self) -> tuple[str, ...]:
        return tuple(Path(p).name.split(".")[0] for p in self.partition_files)

    @property
    def all_models(self) -> tuple[str, ...]:
        return (*self.models, *self.imported_models())

    @property
    def layout(self) -> str:
        models = self.all_models
        return self.layout_model or ("hp" if "hp" in models else models[0])

    def resolved(self) -> BuildConfig:
        """Paths made absolute, here, before they travel to the workers."""
        if self.out.strip() in ("", ".", "..", "/") or Path(self.out).name in ("", ".", ".."):
            raise UserError(f"--out {self.out!r}: name a new directory for the store, e.g. stores/graph.zarr")

        def absolute(p: str | None) -> str | None:
            return None if p is None else os.path.abspath(os.path.expanduser(p))

        source = self.source
        if isinstance(source, str) and _is_path(source):
            source = absolute(source)
        return replace(self, source=source, out=absolute(self.out) or self.out, data_dir=absolute(self.data_dir),
                       features=os.path.abspath(self.features) if self.features.endswith(".npy") else self.features,
                       partition_files=tuple(absolute(p) or p for p in self.partition_files))

    def check(self) -> None:
        """Raise :class:`UserError` for values no build can use."""
        if self.parts < 1:
            raise UserError(f"--parts {self.parts}: must be at least 1")
        if not (math.isfinite(self.eps) and 0 < self.eps < 100):
            raise UserError(f"--eps {self.eps}: must be a finite number above 0 (e.g. 0.03)")
        known = model_names()
        if not self.all_models:
            raise UserError("no model: give --model or --partition-file")
        for m in self.models:
            if m not in known:
                raise UserError(f"--model {m!r}: choose from {', '.join(known)} or all")
        for p, m in zip(self.partition_files, self.imported_models()):
            if m in known or not m or self.imported_models().count(m) > 1:
                raise UserError(f"--partition-file {p}: its name {m!r} must differ from the models "
                                f"({', '.join(known)}) and from the other files")
        if len(set(self.models)) != len(self.models):
            raise UserError("--model: a model is listed twice")
        if self.layout not in self.all_models:
            raise UserError(f"--layout-model {self.layout!r} is not among the models {', '.join(self.all_models)}")
        nodedata.NodeSpec(self.features, self.labels, self.split, self.seed, self.feature_norm or "none").check()
        if "shp" in self.models:
            self.shp.check()
        if self.chunk_bytes < 1024:
            raise UserError("--chunk-bytes must be at least 1024")
        if self.max_line < 64:
            raise UserError("--max-line must be at least 64")
        if self.header not in readers.HEADERS:
            raise UserError(f"--header {self.header!r}: choose from {', '.join(readers.HEADERS)}")
        if not (math.isfinite(self.max_total_increase) and 0 <= self.max_total_increase < 10):
            raise UserError(f"--max-total-increase {self.max_total_increase}: a finite fraction >= 0 (e.g. 0.02)")
        if not (math.isfinite(self.shp_time_factor) and self.shp_time_factor >= 0):
            raise UserError(f"--shp-time-factor {self.shp_time_factor}: must be a finite number >= 0")


def _is_path(source: str) -> bool:
    return synthetic.parse_spec_kind(source) is None and source.lower() not in datasets.REGISTRY


@dataclass
class BuildResult:
    path: Path
    attrs: dict
    table: list[dict]
    timings: dict[str, float] = field(default_factory=dict)


# ---------------------------------------------------------------- stage results

@dataclass(frozen=True)
class Ingested:
    """The clean graph on the workers: row blocks of A's pattern (and of
    A^T's for a directed graph), node data per block, and what the client
    needs to know (n, bounds, counts)."""

    name: str
    n: int
    directed: bool
    bounds: np.ndarray
    a: tuple  # futures: RowBlock patterns of A, no self loops
    at: tuple  # futures: the same rows of A^T (the same futures when undirected)
    file_ids: Any  # future: (n,) int64 label of each vertex in the input
    nodes: tuple  # futures: NodeBlock per row block
    node_plan: nodedata.NodePlan
    feature_norm: str
    stats: dict
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Normalized:
    """Â (and Â^T) by row blocks and the row weights; the whole Â (for the
    partitioners) and A's pattern (for the samplers) are assembled on a
    worker only when a stage asks for them (a build that imports its
    partition never puts the whole graph on one worker)."""

    a: tuple
    at: tuple
    pattern_blocks: tuple  # futures: A's pattern by row blocks
    weights: Any  # future: (n,) int64 nonzeros per row of Â
    nnz: int
    _whole: dict = field(default_factory=dict, compare=False)

    def full(self, tasks: Tasks):
        """Future of Â as one csr_matrix."""
        if "full" not in self._whole:
            self._whole["full"] = tasks.submit("normalize-assemble", blocks.full_matrix, *self.a)
        return self._whole["full"]

    def pattern(self, tasks: Tasks):
        """Future of A's pattern as one csr_matrix."""
        if "pattern" not in self._whole:
            self._whole["pattern"] = tasks.submit("normalize-pattern", blocks.full_matrix, *self.pattern_blocks)
        return self._whole["pattern"]


@dataclass(frozen=True)
class Partitioned:
    """Every model's result: futures (for the tasks that follow) and the
    gathered results (part vectors, O(n), and times)."""

    futures: dict[str, Any]
    results: dict[str, partition.PartitionResult]


@dataclass(frozen=True)
class Measured:
    quality: Any  # xarray Dataset
    minibatch: Any  # xarray Dataset or None
    table: list[dict]


@dataclass(frozen=True)
class Laid:
    layout: Any  # future: Layout
    offsets: np.ndarray
    perm: np.ndarray
    ranks: tuple  # futures: RankRows per rank
    sends: tuple  # futures: (send_ptr, send_rows) per rank
    t_sends: tuple | None


# ------------------------------------------------------------------------ build

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
    if not mon.embedded:  # the workers must see what the client sees
        check_paths(client, [p for p in _inputs(cfg) if os.path.exists(p)],
                    str(Path(cfg.out).parent) if Path(cfg.out).parent.exists() else "")
    try:
        with writer if own_writer else contextlib.nullcontext(writer):
            with mon.stage("ingest"):
                given = None if nodes is None else tasks.submit("ingest-nodes", _given_nodes, nodes)
                ing = ingest_stage(tasks, cfg, mon, given)
            with mon.stage("normalize"):
                nrm = normalize_stage(tasks, ing, mon)
            with mon.stage("partition"):
                parts = partition_stage(tasks, cfg, ing, nrm, mon, writer.work_dir)
            with mon.stage("quality"):
                meas = quality_stage(tasks, cfg, ing, nrm, parts, mon)
            with mon.stage("layout"):
                laid = layout_stage(tasks, cfg, ing, nrm, parts, mon)
            with mon.stage("write"):
                attrs = write_stage(tasks, cfg, ing, nrm, parts, meas, laid, writer, mon)
    finally:
        tasks.release()
    echo(quality.format_table(meas.table))
    if meas.minibatch is not None:
        echo("\n" + batch_quality.format_minibatch(meas.minibatch))
    return BuildResult(Path(cfg.out), attrs, meas.table, dict(mon.times))


def _given_nodes(nodes: NodeSource) -> NodeSource:
    return nodes


def _inputs(cfg: BuildConfig) -> list[str]:
    paths = [p for p in cfg.partition_files]
    if cfg.features.endswith(".npy"):
        paths.append(cfg.features)
    if isinstance(cfg.source, str) and _is_path(cfg.source) and not readers.detect_format(cfg.source) == "planetoid":
        paths.append(cfg.source)
    return paths


# ------------------------------------------------------------------------ ingest

@dataclass
class _Source:
    raw: readers.RawSource
    name: str
    directed_default: bool | None
    feature_norm: str
    kind: str  # "dataset", "file", "generator", "memory"


def _read_source(tasks: Tasks, cfg: BuildConfig) -> _Source:
    """A dataset name, a generator spec, a file path, or an in-memory graph."""
    norm = cfg.feature_norm or "none"
    opts = readers.ReadOptions(cfg.chunk_bytes, cfg.max_line, cfg.header)
    if not isinstance(cfg.source, str):
        return _Source(_memory_source(tasks, cfg.source), "in-memory graph", None, norm, "memory")
    gen = synthetic.submit(tasks, cfg.source)
    if gen is not None:
        return _Source(gen, cfg.source, gen.directed, norm, "generator")
    if cfg.source.lower() in datasets.REGISTRY:
        ds = datasets.lookup(cfg.source)
        path = str(datasets.locate(ds, cfg.data_dir))
        return _Source(readers.submit_read(tasks, path, cfg.fmt or ds.format, opts), ds.name, ds.directed,
                       cfg.feature_norm or ds.feature_norm, "dataset")
    try:
        raw = readers.submit_read(tasks, cfg.source, cfg.fmt, opts)
    except UserError as e:
        if str(e) == f"{cfg.source}: file not found":
            known = ", ".join(sorted(datasets.REGISTRY))
            raise UserError(f"{cfg.source}: no such file, and not a known dataset ({known}) or rmat:/sbm: spec") \
                from None
        raise
    return _Source(raw, Path(cfg.source).name, None, norm, "file")


def _memory_source(tasks: Tasks, obj) -> readers.RawSource:
    """A scipy.sparse matrix or a (2, E) edge_index array from the Python API
    (the data starts on the client, so it travels once, as one task's input)."""
    import scipy.sparse as sp

    if sp.issparse(obj):
        m = sp.coo_matrix(obj)
        if m.shape[0] != m.shape[1]:
            raise UserError(f"the matrix is {m.shape[0]} x {m.shape[1]}; an adjacency matrix must be square")
        src, dst, n = m.row.astype(np.int64), m.col.astype(np.int64), m.shape[0]
    else:
        e = np.asarray(obj)
        if e.ndim != 2 or e.shape[0] != 2 or e.dtype.kind not in "iu":
            raise UserError(f"source: expected a scipy.sparse matrix or a (2, E) integer edge_index, got {e.shape}")
        if e.size and e.min() < 0:
            raise UserError("edge_index: negative vertex id")
        src, dst = e[0].astype(np.int64), e[1].astype(np.int64)
        n = int(e.max()) + 1 if e.size else 0
    if n == 0:
        raise UserError("the graph has no vertices")
    chunk = tasks.submit("ingest-memory", ParsedChunk, src, dst, int(src.size))
    return readers.RawSource("in-memory graph", [chunk], [ingest.ChunkMeta(src.size, 0, src.size, None)], n)


def ingest_stage(tasks: Tasks, cfg: BuildConfig, mon: Monitor, node_source: Any = None) -> Ingested:
    """Read, relabel, cut into row blocks (deduplicated, no self loops), and
    make the node data of every block."""
    src = _read_source(tasks, cfg)
    raw = src.raw
    directed = cfg.directed if cfg.directed is not None else (
        raw.directed if raw.directed is not None else (src.directed_default if src.directed_default is not None
                                                       else True))
    _say_direction(cfg, src, raw, directed)
    chunks, n, file_ids = _relabel(tasks, raw, mon)
    if cfg.parts > n:
        raise UserError(f"--parts {cfg.parts}: more parts than the {n:,} vertices of {src.name}")
    edges = raw.lines * (1 if directed else 2)
    bounds = blocks.block_bounds(n, max(1, -(-edges // cfg.block_nnz)))
    a, loops = _shuffle(tasks, chunks, bounds, directed, transpose=False, mon=mon)
    at = _shuffle(tasks, chunks, bounds, directed, transpose=True, mon=mon)[0] if directed else a
    nnz = sum(tasks.gather([tasks.submit("ingest-count", _nnz, b) for b in a]))
    kept = nnz if directed else nnz // 2
    stats = {"lines": int(raw.lines), "self_loops": int(loops), "nodes": int(n), "edges": int(kept),
             "duplicates": int(raw.lines - loops - kept) if directed else None, "row_blocks": int(bounds.size - 1)}
    if directed and src.kind == "file" and cfg.directed is None:
        recip = sum(tasks.gather([tasks.submit("ingest-reciprocal", _reciprocal, x, y) for x, y in zip(a, at)]))
        if recip == 0 and kept:
            log.warning("%s: read as directed, and no edge has its reverse: if the file lists each undirected "
                        "edge once, pass --undirected", src.name)
    log.info("%s: %d nodes, %d %s edges (%d self loops removed)", src.name, n, kept,
             "directed" if directed else "undirected", loops)
    nodes_source = node_source if node_source is not None else raw.nodes
    spec = nodedata.NodeSpec(cfg.features, cfg.labels, cfg.split, cfg.seed, src.feature_norm)
    node_plan, node_blocks = _node_blocks(tasks, spec, n, bounds, nodes_source, src.name, raw.notes, mon)
    return Ingested(src.name, n, directed, bounds, tuple(a), tuple(at), file_ids, tuple(node_blocks), node_plan,
                    src.feature_norm, stats, tuple(raw.notes))


def _say_direction(cfg: BuildConfig, src: _Source, raw: readers.RawSource, directed: bool) -> None:
    how = "directed" if directed else "undirected"
    if cfg.directed is not None:
        why = "as asked"
    elif raw.directed is not None:
        why = "as the file declares"
    elif src.directed_default is not None:
        why = f"as the dataset {src.name} is"
    else:
        why = "the default for edge lists"
    other = "--undirected" if directed else "--directed"
    log.info("reading %s as %s (%s; %s changes it)", src.name, how, why, other)


def _relabel(tasks: Tasks, raw: readers.RawSource, mon: Monitor) -> tuple[list, int, Any]:
    """File labels -> 0..n-1 when the file declares no size (the labels that
    occur, in increasing order); returns (chunks, n, file ids future)."""
    if raw.n is not None:
        return raw.chunks, raw.n, tasks.submit("ingest-ids", _arange, raw.n, raw.base)
    if any(m.edges and m.first is not None and min(m.first) < 0 for m in raw.metas):
        raise UserError(f"{raw.name}: negative vertex id")
    level = [tasks.submit("ingest-ids", ingest.chunk_ids, c) for c in raw.chunks]
    mon.bar(level, "ingest: vertex ids")
    while len(level) > 1:  # a tree of unions, 8 at a time
        level = [tasks.submit("ingest-ids", ingest.union, *level[i:i + 8]) for i in range(0, len(level), 8)]
    node_ids = level[0]
    n = int(tasks.submit("ingest-ids", len, node_ids).result())
    chunks = [tasks.submit("ingest-relabel", ingest.relabel, c, node_ids) for c in raw.chunks]
    return chunks, n, node_ids


def _arange(n: int, base: int) -> np.ndarray:
    return np.arange(n, dtype=np.int64) + base


def _shuffle(tasks: Tasks, chunks: list, bounds: np.ndarray, directed: bool, transpose: bool,
             mon: Monitor) -> tuple[list, int]:
    """Every chunk's edges to the row block that owns them (worker to worker):
    the blocks of A (or A^T), deduplicated, without self loops."""
    name = "ingest-csr-t" if transpose else "ingest-csr"
    split = [tasks.submit(f"{name}-split", blocks.split_edges, c, bounds, not directed, transpose) for c in chunks]
    loops = sum(tasks.gather([tasks.submit(f"{name}-loops", blocks.pieces_loops, s) for s in split]))
    nb = bounds.size - 1
    n = int(bounds[-1])
    out = []
    for b in range(nb):  # a loop over blocks: each takes its piece of every chunk
        pieces = [tasks.submit(f"{name}-piece", blocks.piece, s, b) for s in split]
        out.append(tasks.submit(name, blocks.assemble, int(bounds[b]), int(bounds[b + 1]), n, *pieces))
    mon.bar(out, f"ingest: row blocks{' of A^T' if transpose else ''}")
    return out, int(loops)


def _nnz(b: blocks.RowBlock) -> int:
    return b.nnz


def _reciprocal(ab: blocks.RowBlock, tb: blocks.RowBlock) -> int:
    """Edges of these rows whose reverse exists too (directed graphs)."""
    ka = ab.row_ids() * ab.n + ab.indices
    kt = tb.row_ids() * tb.n + tb.indices
    return int(np.intersect1d(ka, kt, assume_unique=True).size)


def _node_blocks(tasks: Tasks, spec: nodedata.NodeSpec, n: int, bounds: np.ndarray, source, name: str,
                 notes: list[str], mon: Monitor) -> tuple[nodedata.NodePlan, list]:
    facts = tasks.submit("nodes-facts", nodedata.source_facts, source).result() if source is not None \
        else (None, None, False, None)
    npy = tasks.submit("nodes-probe", nodedata.npy_shape, spec.features).result() \
        if spec.features.endswith(".npy") else None
    plan = nodedata.plan(spec, n, name, facts, npy, notes)
    codes = tasks.submit("nodes-split", nodedata.split_codes, n, spec.split, spec.seed) \
        if plan.split_from == "random" else None
    out = [tasks.submit("nodes", nodedata.node_block, int(lo), int(hi), spec, plan, source, codes)
           for lo, hi in zip(bounds[:-1], bounds[1:])]
    mon.bar(out, "nodes")
    for bad in tasks.gather([tasks.submit("nodes-check", nodedata.bad_feature, b) for b in out]):
        if bad is not None:
            where = spec.features if plan.features_from == "file" else name
            raise UserError(f"{where}: non-finite feature at vertex {bad[0]}, column {bad[1]} (NaN or infinity)")
    return plan, out


# --------------------------------------------------------------------- normalize

def normalize_stage(tasks: Tasks, ing: Ingested, mon: Monitor) -> Normalized:
    """Â = D^-1/2 (A + I) D^-1/2 by row blocks (directed: out-degrees for the
    rows, in-degrees for the columns, and Â^T's blocks as well)."""
    out_deg = tasks.submit("normalize-degrees", _degrees, *[tasks.submit("normalize-count", blocks.row_counts, b)
                                                            for b in ing.a])
    in_deg = out_deg if not ing.directed else tasks.submit(
        "normalize-degrees", _degrees, *[tasks.submit("normalize-count", blocks.row_counts, b) for b in ing.at])
    a = [tasks.submit("normalize", blocks.normalize, b, out_deg, in_deg) for b in ing.a]
    at = [tasks.submit("normalize-t", blocks.normalize, b, out_deg, in_deg, True) for b in ing.at] \
        if ing.directed else a
    mon.bar(a + (at if ing.directed else []), "normalize")
    nnz = ing.stats["edges"] * (1 if ing.directed else 2) + ing.n
    return Normalized(tuple(a), tuple(at), tuple(ing.a), out_deg, nnz)


def _degrees(*counts: np.ndarray) -> np.ndarray:
    """(n,) degrees of A + I from the blocks' row counts."""
    return np.concatenate(counts) + 1


# --------------------------------------------------------------------- partition

def partition_stage(tasks: Tasks, cfg: BuildConfig, ing: Ingested, nrm: Normalized, mon: Monitor,
                    tmp_root: str) -> Partitioned:
    """Every requested model, one at a time (each partitioner uses the cores
    it needs, and each wall time is its own); native ones in child processes;
    imported assignments (``--partition-file``) checked and used as they are."""
    reg = partition.load_models()
    pcfg = partition.PartitionConfig(parts=cfg.parts, eps=cfg.eps, seed=cfg.seed, threads=cfg.threads,
                                     hp_preset=cfg.hp_preset, max_total_increase=cfg.max_total_increase)
    futures: dict[str, Any] = {}
    results: dict[str, partition.PartitionResult] = {}
    for m in _base_first(cfg.models, reg):
        p = reg[m]
        options: dict[str, Any] = {}
        if "shp" in (m, *p.starts_from):
            scfg = cfg.shp
            if "hp" in results and cfg.shp_time_factor > 0:
                scfg = replace(scfg, time_budget=cfg.shp_time_factor * results["hp"].seconds)
            options["shp"] = asdict(scfg)
        starts = {s: futures[s] for s in p.starts_from if s in futures}
        a = nrm.full(tasks) if m != "rp" else tasks.submit("partition-rp", _identity_of_size, ing.n)
        f = tasks.submit(f"partition-{m}", _partition, m, a, nrm.pattern(tasks) if p.needs_graph else None, starts,
                         options, pcfg, tmp_root)
        mon.bar([f], f"partition: {m}")
        futures[m] = f
        results[m] = f.result()
        mon.child_peak(m, results[m].child_peak_mib)
    for path, m in zip(cfg.partition_files, cfg.imported_models()):
        f = tasks.submit(f"partition-{m}", _imported, m, path, ing.n, cfg.parts)
        futures[m], results[m] = f, f.result()
    order = cfg.all_models  # tables and attributes list the models as asked
    return Partitioned({m: futures[m] for m in order}, {m: results[m] for m in order})


def _identity_of_size(n: int):
    """rp needs only n: an n x n identity stands in for Â (no need to assemble the graph)."""
    import scipy.sparse as sp

    return sp.identity(n, dtype=np.float32, format="csr")


def _base_first(models: tuple[str, ...], reg: dict) -> list[str]:
    """The requested models, each after the requested models it starts from."""
    order: list[str] = []

    def visit(m: str) -> None:
        if m in order:
            return
        for s in reg[m].starts_from:
            if s in models:
                visit(s)
        order.append(m)

    for m in models:
        visit(m)
    return order


def _partition(model: str, a, adj, starts: dict, options: dict, cfg: partition.PartitionConfig,
               tmp_root: str) -> partition.PartitionResult:
    starts = {k: v.part for k, v in starts.items()}
    return partition.run(model, partition.Inputs(a, adj, starts, options), cfg, tmp_root)


def _imported(model: str, path: str, n: int, parts: int) -> partition.PartitionResult:
    """``--partition-file``: one part id per line (or a .npy vector), in the
    input's vertex order, from a distributed partitioner or an earlier build."""
    if not os.path.exists(path):
        raise UserError(f"--partition-file {path}: file not found")
    if path.endswith(".npy"):
        try:
            part = np.load(path, allow_pickle=False)
        except (ValueError, OSError) as e:
            raise UserError(f"--partition-file {path}: not a .npy array ({e})") from None
    else:
        import pyarrow as pa
        import pyarrow.csv as pacsv

        try:
            t = pacsv.read_csv(path, read_options=pacsv.ReadOptions(autogenerate_column_names=True),
                               convert_options=pacsv.ConvertOptions(column_types={"f0": pa.int64()}))
        except (pa.ArrowInvalid, OSError) as e:
            raise UserError(f"--partition-file {path}: expected one part id per line ({str(e).splitlines()[0]})") \
                from None
        if t.num_columns != 1 or t.column(0).null_count:
            raise UserError(f"--partition-file {path}: expected exactly one integer per line")
        part = t.column(0).to_numpy()
    if part.ndim != 1 or part.shape[0] != n:
        raise UserError(f"--partition-file {path}: {part.shape[0] if part.ndim == 1 else part.shape} entries for a "
                        f"graph of {n:,} vertices")
    if part.dtype.kind not in "iu" or (part.size and (part.min() < 0 or part.max() >= parts)):
        raise UserError(f"--partition-file {path}: part ids must be integers in 0..{parts - 1} (--parts {parts})")
    return partition.PartitionResult(model, part.astype(np.int32), 0.0, {"file": path})


# ----------------------------------------------------------------------- quality

def quality_stage(tasks: Tasks, cfg: BuildConfig, ing: Ingested, nrm: Normalized, parts: Partitioned,
                  mon: Monitor) -> Measured:
    """Full-batch quality of every model by blocks; with shp, the held-out
    mini-batch quality of every model."""
    q_f = []
    for m, f in parts.futures.items():
        partials = [tasks.submit(f"quality-{m}", _block_quality, ab, tb, f, cfg.parts, ing.directed)
                    for ab, tb in zip(nrm.a, nrm.at)]
        q_f.append(tasks.submit(f"quality-{m}", _merge_quality, m, cfg.parts, nrm.weights, f, *partials))
    mon.bar(q_f, "quality")
    qds = quality.to_dataset(tasks.gather(q_f))
    minibatch = None
    if "shp" in parts.futures:
        scfg = cfg.shp.sampler_config(ing.n, cfg.seed)
        mb = tasks.submit("quality-minibatch", _minibatch, nrm.full(tasks), nrm.pattern(tasks), scfg, parts.futures,
                          cfg.parts,
                          cfg.shp.eval_batches, cfg.shp.theta, cfg.shp.delta)
        mon.bar([mb], "quality: mini-batch")
        minibatch = mb.result()
    return Measured(qds, minibatch, quality.table_from_dataset(qds))


def _block_quality(ab, tb, res: partition.PartitionResult, parts: int, directed: bool) -> quality.Partial:
    return quality.block_quality(ab, tb, res.part, parts, directed)


def _merge_quality(model: str, parts: int, weights: np.ndarray, res: partition.PartitionResult,
                   *partials: quality.Partial) -> quality.Quality:
    return quality.merge_quality(model, parts, weights, res.part, res.seconds, *partials)


def _minibatch(a, adj, scfg, results: dict, parts: int, eval_batches: int, theta: float, delta: float):
    from shgcn.store.sample import Sampler

    return batch_quality.minibatch_dataset(a, Sampler(adj, scfg), {m: r.part for m, r in results.items()}, parts,
                                           eval_batches, theta, delta, convergence_model="shp")


# ------------------------------------------------------------------------ layout

def layout_stage(tasks: Tasks, cfg: BuildConfig, ing: Ingested, nrm: Normalized, parts: Partitioned,
                 mon: Monitor) -> Laid:
    """Permutation by the layout model; every block cut by rank, every rank's
    rows joined, halos turned into send lists; nothing goes through the client."""
    lay = tasks.submit("layout", _make_layout, parts.futures[cfg.layout], cfg.parts)
    offsets = tasks.submit("layout", layout.offsets_of, lay).result()
    perm = tasks.submit("layout", layout.perm_of, lay).result()
    cut = [tasks.submit("layout-cut", layout.rank_pieces, ab, tb if ing.directed else None, nb, lay)
           for ab, tb, nb in zip(nrm.a, nrm.at, ing.nodes)]
    ranks = []
    for r in range(cfg.parts):  # a loop over ranks: each takes its piece of every block
        pieces = [tasks.submit("layout-piece", layout.piece, c, r) for c in cut]
        ranks.append(tasks.submit("layout-rank", layout.rank_rows, r, int(offsets[r]), int(offsets[r + 1]), *pieces))
    mon.bar(ranks, "layout")
    sends = _sends(tasks, offsets, ranks, False)
    t_sends = _sends(tasks, offsets, ranks, True) if ing.directed else None
    return Laid(lay, offsets, perm, tuple(ranks), sends, t_sends)


def _make_layout(res: partition.PartitionResult, parts: int) -> layout.Layout:
    return layout.make_layout(res.part, parts)


def _sends(tasks: Tasks, offsets: np.ndarray, ranks: list, transpose: bool) -> tuple:
    halos = [tasks.submit("layout-halo", layout.halo_of, x, transpose) for x in ranks]
    lists = tasks.submit("layout-plans", layout.send_lists, offsets, *halos)
    return tuple(tasks.submit("layout-plan", layout.nth, lists, r) for r in range(offsets.size - 1))


# ------------------------------------------------------------------------- write

def write_stage(tasks: Tasks, cfg: BuildConfig, ing: Ingested, nrm: Normalized, parts: Partitioned,
                meas: Measured, laid: Laid, writer: store.StoreWriter, mon: Monitor) -> dict:
    """Rank blocks, graph blocks and node rows written by the workers, in
    parallel; then the O(n) arrays, the tables and the root attributes by the
    client; the store appears only at the final swap."""
    import distributed

    root = writer.root
    layout_part = parts.results[cfg.layout].part
    file_ids = ing.file_ids.result()
    rows = blocks.STORE_ROWS
    writer.create_nodes(ing.n, ing.node_plan.dim, rows, file_ids, layout_part)
    rank_f = [tasks.submit("write-rank", _write_rank, root, x, laid.offsets, s, t)
              for x, s, t in zip(laid.ranks, laid.sends, laid.t_sends or [None] * len(laid.ranks))]
    store_bounds = np.append(np.arange(0, ing.n, rows, dtype=np.int64), ing.n)
    graph_f, node_f = [], []
    for k, (lo, hi) in enumerate(zip(store_bounds[:-1].tolist(), store_bounds[1:].tolist())):
        # the store's fixed row chunks, each from the slices of the blocks that cover it
        spans = blocks.pieces_of_range(ing.bounds, lo, hi)
        g = [tasks.submit("write-slice", blocks.slice_rows, ing.a[b], a, z) for b, a, z in spans]
        v = [tasks.submit("write-slice", nodedata.slice_nodes, ing.nodes[b], a, z) for b, a, z in spans]
        graph_f.append(tasks.submit("write-graph", _write_graph, root, k, *g))
        node_f.append(tasks.submit("write-nodes", _write_nodes, root, *v))
    everything = rank_f + graph_f + node_f
    mon.bar(everything, "write")
    distributed.wait(everything)  # all settled, failed or not, before the writer may clean up
    sums = tasks.gather(rank_f)
    graph_sums = tasks.gather(graph_f)
    tasks.gather(node_f)
    writer.write_permutation(laid.perm, laid.offsets)
    writer.write_graph_bounds(store_bounds, graph_sums)
    for m, res in parts.results.items():
        writer.write_partition(m, res.part)
    writer.write_quality(meas.quality)
    if meas.minibatch is not None:
        writer.write_minibatch(meas.minibatch)
    mon.snapshot()  # the write stage's time and memory so far, for the attributes
    attrs = _attrs(cfg, ing, nrm, parts, sums, mon)
    writer.commit(attrs)
    return attrs


def _write_rank(root: str, x: layout.RankRows, offsets: np.ndarray, sends, t_sends) -> str:
    return store.write_rank(root, layout.rank_block(x, offsets, sends, t_sends))


def _write_graph(root: str, k: int, *parts: blocks.RowBlock) -> str:
    blk = blocks.join_rows(*parts)
    return store.write_graph_block(root, k, blk.indptr, blk.indices)


def _write_nodes(root: str, *parts: nodedata.NodeBlock) -> None:
    nb = nodedata.join_nodes(*parts)
    store.write_node_rows(root, nb.lo, {"features": nb.features, "labels": nb.labels, "train_mask": nb.train,
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


def _attrs(cfg: BuildConfig, ing: Ingested, nrm: Normalized, parts: Partitioned, sums: list[str],
           mon: Monitor) -> dict:
    config = {k: v for k, v in asdict(cfg).items() if k not in ("out", "command", "progress", "source")}
    attrs = {
        "dataset": ing.name,
        "source": cfg.source_name,
        "n": int(ing.n),
        "nnz": int(nrm.nnz),
        "edges": int(ing.stats["edges"]),
        "directed": bool(ing.directed),
        "parts": int(cfg.parts),
        "model": cfg.layout,
        "models": list(cfg.all_models),
        "eps": cfg.eps,
        "seed": cfg.seed,
        "hp_preset": cfg.hp_preset,
        "feature_dim": int(ing.node_plan.dim),
        "classes": int(ing.node_plan.classes),
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
        "partitions": {m: {"seconds": round(r.seconds, 3),
                           **({"child_peak_mib": r.child_peak_mib} if r.child_peak_mib else {}),
                           **({} if m == "shp" else r.info)}  # shp's long record is attribute "shp"
                       for m, r in parts.results.items()},
    }
    if "shp" in parts.results:
        attrs["shp"] = parts.results["shp"].info
    return attrs
