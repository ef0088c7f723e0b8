"""``pipeline build``: the stages composed on Dask.

Each stage is a pure function of arrays from its own module, submitted as a
Dask task whose key names the stage (``ingest-…``, ``normalize-…``,
``partition-…``, ``quality-…``, ``layout-…``, ``write-…``) so that the
dashboard's task stream reads like the pipeline.
"""

from __future__ import annotations

import logging
import platform
import sys
import time
import uuid
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import distributed
import numpy as np

from shgcn import store
from shgcn.store import sample

from . import (
    __version__,
    batch_quality,
    datasets,
    ingest,
    layout,
    nodedata,
    normalize,
    partition,
    quality,
    readers,
    stochastic,
    synthetic,
)
from ._rss import peak_rss_mib
from .errors import UserError
from .graph import Graph, RawGraph

log = logging.getLogger(__name__)

MODELS = ("rp", "gp", "hp", "shp")


@dataclass(frozen=True)
class BuildConfig:
    """Everything a build depends on. Same config (and inputs) -> same store."""

    source: str
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
    shp: stochastic.SHPConfig = field(default_factory=stochastic.SHPConfig)
    shp_time_factor: float = 2.0  # with hp in the same build: shp's time budget, in units of hp's time
    progress: bool = False  # a progress bar per stage on the terminal
    command: str = ""

    def check(self) -> None:
        """Raise :class:`UserError` for values no build can use."""
        if self.parts < 1:
            raise UserError(f"--parts {self.parts}: must be at least 1")
        if not self.eps > 0:
            raise UserError(f"--eps {self.eps}: must be > 0")
        for m in self.models:
            if m not in MODELS:
                raise UserError(f"--model {m!r}: choose from {', '.join(MODELS)} or all")
        if self.layout not in self.models:
            raise UserError(f"--layout-model {self.layout!r} is not among the computed models {', '.join(self.models)}")
        if not self.features.endswith(".npy"):
            nodedata.parse_generated(self.features, "features")
        nodedata.parse_generated(self.labels, "labels")
        if self.feature_norm not in (None, *nodedata.FEATURE_NORMS):
            raise UserError(f"--feature-norm {self.feature_norm!r}: choose from {', '.join(nodedata.FEATURE_NORMS)}")
        if "shp" in self.models:
            self.shp.check()
        if self.chunk_bytes < 1024:
            raise UserError("--chunk-bytes must be at least 1024")

    @property
    def layout(self) -> str:
        return self.layout_model or ("hp" if "hp" in self.models else self.models[0])


@dataclass
class BuildResult:
    path: Path
    attrs: dict
    table: list[dict]
    timings: dict[str, float] = field(default_factory=dict)


class _Stages:
    """Wall time per stage, measured on the client, and the peak resident
    memory at the end of each stage (a running maximum: the stage where it
    grows is the one that needed it)."""

    def __init__(self):
        self.times: dict[str, float] = {}
        self.peaks: dict[str, float] = {}
        self._t = time.perf_counter()

    def done(self, name: str) -> None:
        now = time.perf_counter()
        self.times[name] = round(now - self._t, 4)
        self.peaks[name] = peak_rss_mib()
        self._t = now
        log.info("stage %s: %.2f s, peak RSS so far %.0f MiB", name, self.times[name], self.peaks[name])


@dataclass
class Source:
    """What :func:`load_raw` found: the raw graph, its name, the direction
    and the feature preprocessing to use."""

    raw: RawGraph
    name: str
    directed: bool
    feature_norm: str


def load_raw(cfg: BuildConfig, client) -> Source:
    """Read the source: a dataset name, a generator spec or a file path."""
    norm = cfg.feature_norm or "none"
    generated = synthetic.parse_spec(cfg.source)
    if generated is not None:
        return Source(generated, cfg.source, _direction(cfg, generated, generated.directed), norm)
    if cfg.source.lower() in datasets.REGISTRY:
        ds = datasets.lookup(cfg.source)
        path = datasets.locate(ds, cfg.data_dir)
        raw = readers.read(path, ds.format if cfg.fmt is None else cfg.fmt, client, cfg.chunk_bytes, cfg.progress)
        return Source(raw, ds.name, _direction(cfg, raw, ds.directed), cfg.feature_norm or ds.feature_norm)
    path = Path(cfg.source)
    if not path.exists() and not readers.detect_format(path) == "planetoid":
        known = ", ".join(sorted(datasets.REGISTRY))
        raise UserError(f"{cfg.source}: no such file, and not a known dataset ({known}) or rmat:/sbm: spec")
    raw = readers.read(path, cfg.fmt, client, cfg.chunk_bytes, cfg.progress)
    return Source(raw, path.name, _direction(cfg, raw, True), norm)


def _direction(cfg: BuildConfig, raw: RawGraph, default: bool | None) -> bool:
    if cfg.directed is not None:
        return cfg.directed
    if raw.directed is not None:
        return raw.directed
    return True if default is None else default


@dataclass
class _Run:
    """State shared by the stages of one build: the client, the config, the
    futures of the arrays that stay on the cluster, and the results so far."""

    cfg: BuildConfig
    client: Any
    token: str = field(default_factory=lambda: uuid.uuid4().hex[:8])
    st: _Stages = field(default_factory=_Stages)
    src: Any = None
    g: Any = None
    g_f: object = None
    a_f: object = None
    a_hat: object = None
    nodes_f: object = None
    nodes: Any = None
    parts: dict = field(default_factory=dict)
    shp: stochastic.SHPResult | None = None
    qds: object = None
    minibatch: object = None

    def submit(self, fn, *args, stage: str, index: int | None = None):
        key = f"{stage}-{self.token}"
        return self.client.submit(fn, *args, key=key if index is None else (key, index))


def build(cfg: BuildConfig, client, echo=print) -> BuildResult:
    """Run the whole pipeline and write the store atomically."""
    cfg.check()
    run = _Run(cfg, client)
    writer = store.StoreWriter(cfg.out, overwrite=cfg.overwrite)  # refuse an existing output early
    _ingest(run)
    _normalize_stage(run)
    _partition(run)
    _quality(run)
    lay, futures = _layout(run)
    attrs = _write(run, writer, lay, futures)
    table = quality.table_from_dataset(run.qds)
    echo(quality.format_table(table))
    if run.minibatch is not None:
        echo("\n" + batch_quality.format_minibatch(run.minibatch))
    return BuildResult(Path(cfg.out), attrs, table, run.st.times)


def _ingest(run: _Run) -> None:
    """Read and clean the graph; node data (features, labels, split)."""
    cfg = run.cfg
    run.src = load_raw(cfg, run.client)
    raw_f = run.client.scatter(run.src.raw, hash=False)
    run.src.raw = None
    run.g = _result(run.submit(ingest.to_graph, raw_f, run.src.directed, stage="ingest-csr"), cfg)
    del raw_f
    run.g_f = run.client.scatter(run.g, hash=False)
    if cfg.parts > run.g.n:
        raise UserError(f"--parts {cfg.parts}: more parts than the {run.g.n} vertices of {run.src.name}")
    run.nodes_f = run.submit(nodedata.node_data, run.g_f, cfg.features, cfg.labels, cfg.split, cfg.seed,
                             run.src.feature_norm, stage="ingest-nodes")
    run.st.done("ingest")


def _normalize_stage(run: _Run) -> None:
    run.a_f = run.submit(_normalize, run.g_f, stage="normalize")
    run.a_hat = _result(run.a_f, run.cfg)
    run.nodes = _result(run.nodes_f, run.cfg)
    run.st.done("normalize")


def _partition(run: _Run) -> None:
    """Every requested model, one at a time: each partitioner uses the cores
    it needs (Mt-KaHyPar is multi-threaded and holds the GIL), and each wall
    time is its own. ``shp`` starts from ``gp`` when it was computed."""
    cfg = run.cfg
    pcfg = partition.PartitionConfig(parts=cfg.parts, eps=cfg.eps, seed=cfg.seed, threads=cfg.threads,
                                     hp_preset=cfg.hp_preset)
    for m in cfg.models:
        if m == "shp":
            start = run.parts["gp"].part if "gp" in run.parts else None
            scfg = cfg.shp
            if "hp" in run.parts and cfg.shp_time_factor > 0:
                scfg = replace(scfg, time_budget=cfg.shp_time_factor * run.parts["hp"].seconds)
            run.shp = _result(run.submit(_shp, run.a_f, run.g_f, pcfg, scfg, start, stage="partition-shp"), cfg)
            run.parts[m] = partition.PartitionResult("shp", run.shp.part, run.shp.seconds)
        else:
            run.parts[m] = _result(run.submit(partition.run, m, run.a_f, pcfg, stage=f"partition-{m}"), cfg)
    run.st.done("partition")


def _quality(run: _Run) -> None:
    """Full-batch quality of every model; with shp, mini-batch quality and
    GraphSAINT's normalization counts."""
    cfg, parts = run.cfg, run.parts
    q_f = [run.submit(quality.partition_quality, run.a_f, run.client.scatter(parts[m].part, hash=False), cfg.parts,
                      m, parts[m].seconds, stage=f"quality-{m}") for m in cfg.models]
    _track(q_f, cfg)
    run.qds = quality.to_dataset(run.client.gather(q_f))
    if run.shp is not None:
        scfg = cfg.shp.sampler_config(run.g.n, cfg.seed)
        mb_f = run.submit(_minibatch, run.a_f, run.g_f, scfg, {m: r.part for m, r in parts.items()}, cfg,
                          stage="quality-minibatch")
        run.minibatch = _result(mb_f, cfg)
    run.st.done("quality")


def _layout(run: _Run):
    """Permutation by the layout model, permuted Â (and Â^T), halos."""
    lay = layout.make_layout(run.parts[run.cfg.layout].part, run.cfg.parts)
    lay_f = run.client.scatter(lay)
    anew_f = run.submit(layout.permute, run.a_f, lay_f, stage="layout-permute")
    halo_f = run.submit(layout.halos, anew_f, lay.offsets, stage="layout-halos")
    at_f = ht_f = None
    if run.g.directed:
        at_f = run.submit(_transpose, anew_f, stage="layout-transpose")
        ht_f = run.submit(layout.halos, at_f, lay.offsets, stage="layout-halos-t")
    run.st.done("layout")
    return lay, (lay_f, anew_f, halo_f, at_f, ht_f)


def _write(run: _Run, writer: store.StoreWriter, lay: layout.Layout, futures) -> dict:
    """Rank blocks as parallel tasks, then the global arrays and datasets;
    the store appears only at the final rename."""
    cfg, g = run.cfg, run.g
    with writer:
        write_f = [run.submit(_write_rank, writer.root, r, *futures[:3], run.nodes_f, *futures[3:],
                              stage="write-rank", index=r) for r in range(cfg.parts)]
        _track(write_f, cfg)
        distributed.wait(write_f)  # all settled, failed or not, before the writer may clean up
        sums = run.client.gather(write_f)
        writer.write_permutation(lay.perm, lay.offsets)
        writer.write_graph(g.adj.indptr, g.adj.indices)
        for m in cfg.models:
            writer.write_partition(m, run.parts[m].part)
        writer.write_nodes(_nodes_dataset(g, run.nodes, run.parts[cfg.layout].part))
        writer.write_quality(run.qds)
        if run.minibatch is not None:
            writer.write_minibatch(run.minibatch)
        run.st.done("write")
        attrs = _attrs(cfg, run.src.name, g, run.a_hat, run.nodes, sums, run.st.times, run.st.peaks)
        attrs["feature_norm"] = run.src.feature_norm
        if run.shp is not None:
            attrs["shp"] = _shp_record(run.shp, cfg)
        writer.commit(attrs)
    return attrs


def _shp(a, g: Graph, pcfg, scfg, start):
    """The ``partition-shp`` task; its sampling runs as ``shp-sample`` tasks."""
    return stochastic.build_shp(a, g.adj, pcfg, scfg, start=start, sample_map=_dask_map)


def _dask_map(fn, arglists: list[tuple]) -> list:
    """Run ``fn`` over ``arglists`` as tasks from inside a task."""
    try:
        from distributed import worker_client
        ctx = worker_client()
        c = ctx.__enter__()
    except ValueError:  # not inside a Dask task
        return [fn(*args) for args in arglists]
    try:
        token = uuid.uuid4().hex[:8]
        shared = {}  # scatter each large argument once
        args2 = []
        for args in arglists:
            row = []
            for x in args:
                if hasattr(x, "nnz") or hasattr(x, "cfg"):
                    if id(x) not in shared:
                        shared[id(x)] = c.scatter(x, hash=False)
                    x = shared[id(x)]
                row.append(x)
            args2.append(row)
        futs = [c.submit(fn, *row, key=(f"shp-sample-{token}", i)) for i, row in enumerate(args2)]
        return c.gather(futs)
    finally:
        ctx.__exit__(None, None, None)


def _minibatch(a, g: Graph, scfg, parts_by_model, cfg: BuildConfig):
    sampler = sample.Sampler(g.adj, scfg)
    return batch_quality.minibatch_dataset(a, sampler, parts_by_model, cfg.parts, cfg.shp.eval_batches, cfg.shp.theta,
                                     cfg.shp.delta, convergence_model="shp")


def _shp_record(r: stochastic.SHPResult, cfg: BuildConfig) -> dict:
    return {"sampler": cfg.shp.sampler, "batch_size": cfg.shp.batch_size, "theta": cfg.shp.theta,
            "delta": cfg.shp.delta, "construction": r.construction, "required_nets": r.required_nets,
            "nets_sampled": r.nets_sampled, "nets_after_merging": r.nets_kept,
            "batches_equivalent": r.batches_equivalent, "batches_override": cfg.shp.batches,
            "rounds": r.rounds, "seconds": round(r.seconds, 3), "time_factor": cfg.shp_time_factor}


def _track(futures, cfg: BuildConfig) -> None:
    """A terminal progress bar for a stage's tasks (when asked for)."""
    if cfg.progress:
        distributed.progress(futures, notebook=False)
        print(flush=True)


def _result(future, cfg: BuildConfig):
    _track([future], cfg)
    return future.result()


def _normalize(g: Graph):
    return normalize.normalized_adjacency(g.adj, g.directed)


def _transpose(a):
    t = a.T.tocsr()
    t.sort_indices()
    return t


def _write_rank(root, r, lay, a_new, h, nodes, at_new, ht) -> str:
    block = layout.rank_block(r, lay, a_new, h, nodes, at_new, ht)
    return store.write_rank(root, block)


def _nodes_dataset(g: Graph, nodes: nodedata.NodeData, part: np.ndarray):
    import xarray as xr

    return xr.Dataset(
        {
            "features": (("node", "feature"), nodes.features),
            "labels": (("node",), nodes.labels),
            "train_mask": (("node",), nodes.train),
            "val_mask": (("node",), nodes.val),
            "test_mask": (("node",), nodes.test),
            "file_id": (("node",), g.node_ids),
            "part": (("node",), part),
        },
        coords={"node": np.arange(g.n, dtype=np.int64)},
        attrs={"description": "node data in original vertex order; file_id is the id in the input file"},
    )


def _versions() -> dict[str, str]:
    import importlib.metadata as md

    out = {"shgcn": __version__, "python": platform.python_version()}
    for pkg in ("numpy", "scipy", "dask", "distributed", "zarr", "xarray", "pymetis", "mtkahypar"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = "absent"
    return out


def _attrs(cfg, name, g, a_hat, nodes, sums, timings, peaks) -> dict:
    return {
        "dataset": name,
        "source": cfg.source,
        "n": int(g.n),
        "nnz": int(a_hat.nnz),
        "edges": int(g.edges),
        "directed": bool(g.directed),
        "parts": int(cfg.parts),
        "model": cfg.layout,
        "models": list(cfg.models),
        "eps": cfg.eps,
        "seed": cfg.seed,
        "hp_preset": cfg.hp_preset,
        "feature_dim": int(nodes.features.shape[1]),
        "classes": nodes.classes,
        "split": list(cfg.split),
        "stats": g.stats,
        "notes": g.notes,
        "command": cfg.command or " ".join(sys.argv),
        "config": {k: v for k, v in asdict(cfg).items() if k not in ("out", "command", "progress")},
        "versions": _versions(),
        "checksums": {str(r): s for r, s in enumerate(sums)},
        "timings": timings,
        "peak_rss_mib": peak_rss_mib(),
        "peak_rss_mib_by_stage": peaks,
    }
