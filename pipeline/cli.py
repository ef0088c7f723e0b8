"""The ``pipeline`` command: ``build``, ``info``, ``datasets``."""

from __future__ import annotations

import argparse
import json
import logging
import shlex
import sys
import time

from shgcn import store

from . import __version__, batch_quality, datasets, quality, readers
from .errors import UserError

log = logging.getLogger("shgcn.pipeline")


def _split(text: str) -> tuple[float, float, float]:
    try:
        parts = tuple(float(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected three fractions like 0.6,0.2,0.2, got {text!r}") from None
    if len(parts) != 3:
        raise argparse.ArgumentTypeError(f"expected three fractions, got {len(parts)}")
    return parts[0], parts[1], parts[2]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="pipeline", description="Partition a graph into a training-ready Zarr store.")
    p.add_argument("--version", action="version", version=f"shgcn {__version__}")
    p.add_argument("-v", "--verbose", action="count", default=0, help="more log output (-vv for debug)")
    p.add_argument("--quiet", action="store_true", help="only warnings and errors")
    p.add_argument("--log-format", choices=("text", "json"), default="text", help="log lines as text or JSON objects")
    # the same options after the sub-command; SUPPRESS keeps them from resetting the global ones
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-v", "--verbose", action="count", default=argparse.SUPPRESS, help="more log output")
    common.add_argument("--quiet", action="store_true", default=argparse.SUPPRESS, help="only warnings and errors")
    common.add_argument("--log-format", choices=("text", "json"), default=argparse.SUPPRESS, help="text or JSON logs")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    b = sub.add_parser("build", parents=[common], help="build a partitioned store from a dataset, a file or a generator",
                       description="Build a partitioned store. SOURCE is a dataset name (see 'pipeline datasets'), "
                                   "a file (edge list .txt[.gz], .mtx, METIS .graph, .npz, Planetoid ind.NAME), "
                                   "or a generator: rmat:scale=S,edge_factor=E,seed=K or sbm:n=N,classes=C,...")
    b.add_argument("source", metavar="SOURCE")
    b.add_argument("--out", "-o", required=True, help="store directory to create (e.g. stores/cora-p4.zarr)")
    b.add_argument("--parts", "-p", type=int, required=True, help="number of parts (MPI ranks)")
    b.add_argument("--model", default="hp", help="rp, gp, hp, a comma list, or all (default: hp)")
    b.add_argument("--layout-model", default=None,
                   help="model whose partition lays out the rank blocks (default: hp if computed)")
    b.add_argument("--eps", type=float, default=0.03, help="allowed load imbalance (default 0.03)")
    b.add_argument("--seed", type=int, default=0, help="seed of every random choice (default 0)")
    b.add_argument("--threads", type=int, default=0, help="partitioner threads (default: all cores)")
    b.add_argument("--hp-preset", default="deterministic",
                   help="Mt-KaHyPar preset: deterministic (default, reproducible), default, quality, deterministic_quality")
    b.add_argument("--format", dest="fmt", choices=readers.FORMATS, help="input format (default: from the file name)")
    b.add_argument("--data-dir", help=f"where dataset files are (default: ${datasets.ENV_VAR}, then {datasets.cache_dir()})")
    d = b.add_mutually_exclusive_group()
    d.add_argument("--undirected", dest="directed", action="store_false", default=None, help="symmetrize the graph")
    d.add_argument("--directed", dest="directed", action="store_true", help="keep edge direction")
    b.add_argument("--features", default="auto", help="auto (the dataset's own), random:D, or an (n, D) .npy file")
    b.add_argument("--feature-norm", choices=("none", "row"), default=None,
                   help="feature preprocessing: row-normalize (default for Planetoid datasets) or none")
    b.add_argument("--labels", default="auto", help="auto (the dataset's own) or random:C")
    b.add_argument("--split", type=_split, default=(0.6, 0.2, 0.2),
                   help="train,val,test fractions for graphs without a split (default 0.6,0.2,0.2)")
    b.add_argument("--overwrite", action="store_true", help="replace an existing store")
    b.add_argument("--chunk-bytes", type=int, default=16 * 2**20, help="bytes of text per parse task (default 16 MiB)")
    m = b.add_argument_group("mini-batch model (shp)")
    m.add_argument("--sampler", choices=("node", "edge", "rw"), default="node",
                   help="mini-batch sampler: node (uniform vertices), edge, rw (GraphSAINT) (default node)")
    m.add_argument("--batch-size", type=int, default=0, help="vertices per mini-batch (default: 10%% of n)")
    m.add_argument("--walk-length", type=int, default=2, help="rw sampler: steps per walk (default 2)")
    m.add_argument("--theta", type=float, default=0.1, help="Hoeffding: tolerance of the mean connectivity (default 0.1)")
    m.add_argument("--delta", type=float, default=0.5, help="Hoeffding: failure probability (default 0.5)")
    m.add_argument("--batches", type=int, default=None,
                   help="use exactly this many sampled batches (overrides the Hoeffding floor and stopping rule)")
    m.add_argument("--eval-batches", type=int, default=200, help="held-out batches for the mini-batch quality (default 200)")
    m.add_argument("--shp-construction", choices=("auto", "batches", "columns"), default="auto",
                   help="nets from whole sampled batches, or per column (node sampler; default for it)")
    m.add_argument("--shp-max-rounds", type=int, default=6, help="stopping rule: at most this many rounds (default 6)")
    m.add_argument("--shp-min-gain", type=float, default=0.01,
                   help="stopping rule: stop when a round improves the held-out volume by less (default 0.01)")
    m.add_argument("--shp-time-factor", type=float, default=2.0,
                   help="when hp is computed too, stop sampling rounds before shp would take longer than this "
                        "many times hp's partitioning time (default 2; 0: no limit)")
    c = b.add_argument_group("Dask")
    c.add_argument("--scheduler", help="address of an existing Dask scheduler (default: an embedded LocalCluster)")
    c.add_argument("--workers", type=int, default=0, help="embedded cluster: threads (or processes) (default: cores)")
    c.add_argument("--processes", action="store_true", help="embedded cluster: worker processes instead of threads")
    c.add_argument("--dashboard-address", default="127.0.0.1:0", help="embedded cluster dashboard (default: a free port)")
    c.add_argument("--keep-dashboard", action="store_true",
                   help="keep the cluster and its dashboard up after the build, until Ctrl-C")
    b.add_argument("--json", action="store_true", help="print the build summary as JSON")

    i = sub.add_parser("info", parents=[common], help="show what a store holds and its quality table")
    i.add_argument("store", metavar="STORE")
    i.add_argument("--json", action="store_true", help="one JSON object instead of text")

    r = sub.add_parser("report", parents=[common], help="render the quality report notebook to HTML",
                       description="Execute notebooks/quality_report.ipynb headless for STORE (and run logs) "
                                   "and write a self-contained HTML file, or the executed notebook.")
    r.add_argument("store", metavar="STORE")
    r.add_argument("--run", action="append", default=[], metavar="LOG", help="a run log of trainer/train.py (repeatable)")
    r.add_argument("--out", "-o", required=True, help="output file (report.html, or .ipynb with --format ipynb)")
    r.add_argument("--format", choices=("html", "ipynb"), default="html")
    r.add_argument("--timeout", type=int, default=600, help="seconds per cell (default 600)")

    sub.add_parser("datasets", help="list the named datasets")

    # ---- pipeline export (issue 15): a store's partition for other tools
    x = sub.add_parser("export", parents=[common], help="write a store's partition for DistDGL or as an assignment file",
                       description="Write a store's partition for other tools. distdgl: DistDGL's partition layout "
                                   "(OUT/NAME.json and OUT/part{i}/ graph.dgl, node_feats.dgl, edge_feats.dgl, "
                                   "orig_nids.dgl, orig_eids.dgl), which dgl.distributed.load_partition reads; needs "
                                   "DGL (pip install 'shgcn[dgl]'). assignment: one part id per line in original "
                                   "vertex order, the format --partition-file reads.")
    x.add_argument("store", metavar="STORE")
    x.add_argument("out", metavar="OUT", help="output directory (distdgl) or file (assignment)")
    x.add_argument("--format", dest="export_format", choices=("distdgl", "assignment"), required=True,
                   help="distdgl or assignment")
    x.add_argument("--model", default=None, help="partition model to export (default: the store's layout model)")
    x.add_argument("--graph-name", default=None,
                   help="distdgl: the graph's name, NAME.json, DistGraph(NAME) (default: the store's directory name)")
    x.add_argument("--overwrite", action="store_true", help="replace an existing OUT")
    return p


def cmd_export(args) -> int:
    """``pipeline export``: see :mod:`shgcn.pipeline.export`."""
    from .export import export_assignment, export_distdgl

    s = store.open_store(args.store)
    if args.export_format == "assignment":
        out = export_assignment(s, args.out, model=args.model, overwrite=args.overwrite)
    else:
        out = export_distdgl(s, args.out, model=args.model, graph_name=args.graph_name, overwrite=args.overwrite)
    if not args.quiet:
        print(f"wrote {out}")
    return 0


def _models(text: str) -> tuple[str, ...]:
    from .build import MODELS

    if text == "all":
        return MODELS
    models = tuple(dict.fromkeys(m.strip() for m in text.split(",") if m.strip()))
    for m in models:
        if m not in MODELS:
            raise UserError(f"--model {m!r}: choose from {', '.join(MODELS)} or all")
    return models


def cmd_build(args) -> int:
    from .build import BuildConfig, build
    from .cluster import ClusterConfig, dask_client
    from .stochastic import SHPConfig

    cfg = BuildConfig(
        source=args.source, out=args.out, parts=args.parts, models=_models(args.model),
        layout_model=args.layout_model, eps=args.eps, seed=args.seed, threads=args.threads,
        hp_preset=args.hp_preset, fmt=args.fmt, data_dir=args.data_dir, directed=args.directed,
        features=args.features, labels=args.labels, feature_norm=args.feature_norm, split=args.split, overwrite=args.overwrite,
        chunk_bytes=args.chunk_bytes, command="pipeline " + shlex.join(sys.argv[1:]),
        shp=SHPConfig(sampler=args.sampler, batch_size=args.batch_size, walk_length=args.walk_length,
                      theta=args.theta, delta=args.delta, batches=args.batches, eval_batches=args.eval_batches,
                      construction=args.shp_construction, max_rounds=args.shp_max_rounds,
                      min_gain=args.shp_min_gain),
        shp_time_factor=args.shp_time_factor, progress=not (args.quiet or args.json) and sys.stdout.isatty(),
    )
    cfg.check()
    echo = (lambda *a, **k: None) if args.quiet or args.json else print
    ccfg = ClusterConfig(scheduler=args.scheduler, workers=args.workers,
                         dashboard_address=args.dashboard_address, processes=args.processes)
    with dask_client(ccfg, announce=print if not args.quiet else (lambda *_: None)) as client:
        result = build(cfg, client, echo=echo)
        if args.keep_dashboard:
            print(f"build done; the dashboard stays up at {client.dashboard_link} until Ctrl-C", flush=True)
            try:
                while True:
                    time.sleep(3600)
            except KeyboardInterrupt:
                pass
    if args.json:
        print(json.dumps(_summary(result.attrs, result.table), indent=2))
    else:
        echo(f"wrote {result.path} ({', '.join(f'{k} {v:.2f}s' for k, v in result.timings.items())})")
    return 0


def _summary(attrs: dict, table: list[dict], minibatch=None) -> dict:
    keep = ("dataset", "source", "n", "nnz", "edges", "directed", "parts", "model", "models", "eps", "seed",
            "hp_preset", "feature_dim", "classes", "command", "versions", "timings", "peak_rss_mib",
            "peak_rss_mib_by_stage", "stats", "notes", "shp")
    out = {**{k: attrs.get(k) for k in keep if k in attrs}, "quality": {row["model"]: row for row in table}}
    if minibatch is not None:
        out["minibatch"] = {"attrs": dict(minibatch.attrs),
                            "models": {r["model"]: r for r in batch_quality.minibatch_rows(minibatch)}}
    return out


def cmd_info(args) -> int:
    s = store.open_store(args.store)
    table = quality.table_from_dataset(s.quality())
    if args.json:
        print(json.dumps(_summary(s.attrs, table, s.minibatch()), indent=2, default=float))
        return 0
    a = s.attrs
    print(f"store      {s.path}")
    kind = "directed" if a["directed"] else "undirected"
    print(f"dataset    {a['dataset']}  ({a['n']:,} vertices, {a['edges']:,} {kind} edges, nnz(Â) {a['nnz']:,})")
    print(f"parts      {a['parts']}  layout model {a['model']}  models {', '.join(a['models'])}  "
          f"eps {a['eps']}  seed {a['seed']}")
    print(f"features   {a['feature_dim']}  classes {a['classes']}")
    print(f"built by   {a['command']}")
    peaks = a.get("peak_rss_mib_by_stage", {})
    print("stages     " + ", ".join(f"{k} {v:.1f} s" + (f" ({peaks[k]:,.0f} MiB)" if k in peaks else "")
                                    for k, v in a.get("timings", {}).items()) + "  (peak RSS so far)")
    for note in a.get("notes", []):
        print(f"note       {note}")
    print()
    print(quality.format_table(table))
    mb = s.minibatch()
    if mb is not None:
        shp = a.get("shp", {})
        print()
        print(batch_quality.format_minibatch(mb))
        if shp:
            print(f"shp: {shp['construction']} construction, {shp['nets_sampled']:,} nets sampled "
                  f"({shp['nets_after_merging']:,} after merging identical nets, Hoeffding floor "
                  f"{shp['required_nets']:,}), {len(shp['rounds'])} rounds, {shp['seconds']:.1f} s")
    return 0


def cmd_report(args) -> int:
    try:
        import ipykernel  # noqa: F401
        import matplotlib  # noqa: F401
        import nbconvert  # noqa: F401
        import nbformat  # noqa: F401
        from nbclient.exceptions import CellExecutionError

        from .report import render
    except ImportError as e:
        raise UserError(f"pipeline report needs the report extra ({e.name} is missing): "
                        "pip install 'shgcn[report]'") from None

    logging.getLogger("traitlets").setLevel(logging.ERROR)  # nbconvert's alt-text notices
    try:
        out = render(args.store, args.run, args.out, args.format, args.timeout)
    except CellExecutionError as e:
        print(f"pipeline: report: a notebook cell failed:\n{e}", file=sys.stderr)
        return 1
    if not args.quiet:
        print(f"wrote {out}")
    return 0


def cmd_datasets(args) -> int:
    for name, ds in sorted(datasets.REGISTRY.items()):
        kind = "directed" if ds.directed else "undirected"
        print(f"{name:18s} {ds.nodes:>9,} nodes {ds.edges:>9,} {kind} edges  {ds.description}")
    return 0


class _JsonFormatter(logging.Formatter):
    """One JSON object per log record (for log collectors)."""

    def format(self, record: logging.LogRecord) -> str:
        return json.dumps({"time": self.formatTime(record), "level": record.levelname, "logger": record.name,
                           "message": record.getMessage()})


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    level = logging.WARNING if args.quiet else (logging.INFO if args.verbose == 1 else
                                                 logging.DEBUG if args.verbose > 1 else logging.WARNING)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_JsonFormatter() if args.log_format == "json" else
                         logging.Formatter("%(asctime)s %(name)s %(levelname)s: %(message)s"))
    logging.basicConfig(level=level, handlers=[handler], force=True)
    if not args.quiet and args.verbose == 0:
        logging.getLogger("shgcn").setLevel(logging.INFO)
    handlers = {"build": cmd_build, "info": cmd_info, "report": cmd_report, "datasets": cmd_datasets, "export": cmd_export}
    try:
        return handlers[args.command](args)
    except (UserError, store.StoreError) as e:
        print(f"pipeline: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("pipeline: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
