"""The ``pipeline`` command: ``build``, ``info``, ``report``, ``datasets``.

Exit codes: 0 success, 2 a problem with the input or options (one line on
stderr, never a traceback), 1 a failure of the work itself, 130 Ctrl-C.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import shlex
import signal
import sys
import threading
import time
import warnings

from shgcn import store

from . import __version__, batch_quality, datasets, quality, readers
from .errors import UserError

log = logging.getLogger("shgcn.pipeline")
_FMT = argparse.ArgumentDefaultsHelpFormatter


def _split(text: str) -> tuple[float, float, float]:
    try:
        parts = tuple(float(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected three fractions like 0.6,0.2,0.2, got {text!r}") from None
    if len(parts) != 3:
        raise argparse.ArgumentTypeError(f"expected three fractions, got {len(parts)}")
    return parts[0], parts[1], parts[2]


def _parser() -> argparse.ArgumentParser:
    from .partition import DEFAULT_ALL, PRESETS, load_models

    models = load_models()
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

    b = sub.add_parser(
        "build", parents=[common], formatter_class=_FMT,
        help="build a partitioned store from a dataset, a file or a generator",
        description="Build a partitioned store. SOURCE is a dataset name (see 'pipeline datasets'), a file (edge "
                    "list .txt[.gz], .mtx, METIS .graph, .npz, Planetoid ind.NAME), or a generator: "
                    "rmat:scale=S,edge_factor=E,seed=K or sbm:n=N,classes=C,... Edge lists are read as DIRECTED "
                    "unless the dataset says otherwise (--undirected stores every edge both ways).")
    b.add_argument("source", metavar="SOURCE")
    b.add_argument("--out", "-o", required=True, help="store directory to create (e.g. stores/cora-p4.zarr)")
    b.add_argument("--parts", "-p", type=int, required=True, help="number of parts (MPI ranks)")
    listing = "; ".join(f"{m}: {r.description}" for m, r in models.items())
    b.add_argument("--model", default="hp",
                   help=f"a comma list of models, or all (= {','.join(DEFAULT_ALL)}). {listing}")
    b.add_argument("--partition-file", action="append", default=[], metavar="FILE",
                   help="import an assignment made elsewhere (one part id per line in the input's vertex order, or "
                        ".npy; e.g. from ParMETIS, KaMinPar, an earlier build) as a model named by the file's stem "
                        "(repeatable): the way to use a distributed partitioner")
    b.add_argument("--layout-model", default=None, help="model whose partition lays out the rank blocks "
                                                          "(default: hp if computed, else the first)")
    b.add_argument("--eps", type=float, default=0.03, help="allowed load imbalance")
    b.add_argument("--max-total-increase", type=float, default=0.02,
                   help="the -vb models: the total volume may grow by at most this fraction while the maximum send "
                        "and receive volume fall")
    b.add_argument("--seed", type=int, default=0, help="seed of every random choice")
    b.add_argument("--threads", type=int, default=0, help="partitioner threads (0: all cores)")
    b.add_argument("--hp-preset", default="deterministic", choices=PRESETS,
                   help="Mt-KaHyPar preset (deterministic is reproducible)")
    b.add_argument("--format", dest="fmt", choices=readers.FORMATS, help="input format (default: from the file name)")
    b.add_argument("--header", choices=readers.HEADERS, default="auto",
                   help="edge lists: is the first line the file's size (vertices, edges)? auto detects it")
    b.add_argument("--data-dir", help=f"where dataset files are (default: ${datasets.ENV_VAR}, then "
                                      f"{datasets.cache_dir()})")
    d = b.add_mutually_exclusive_group()
    d.add_argument("--undirected", dest="directed", action="store_false", default=None,
                   help="store every edge both ways (default: what the dataset or file says; edge lists: directed)")
    d.add_argument("--directed", dest="directed", action="store_true", help="keep edge direction")
    b.add_argument("--features", default="auto", help="auto (the dataset's own), random:D, or an (n, D) .npy file")
    b.add_argument("--feature-norm", choices=("none", "row"), default=None,
                   help="feature preprocessing: row-normalize or none (default: row for Planetoid, else none)")
    b.add_argument("--labels", default="auto", help="auto (the dataset's own) or random:C")
    b.add_argument("--split", type=_split, default=(0.6, 0.2, 0.2),
                   help="train,val,test fractions for graphs without a split")
    b.add_argument("--overwrite", action="store_true", help="replace an existing store (only a store, or an empty "
                                                            "directory, is ever replaced)")
    b.add_argument("--chunk-bytes", type=int, default=16 * 2**20, help="bytes of text per parse task")
    b.add_argument("--max-line", type=int, default=2**20, help="longest line accepted, in bytes")
    b.add_argument("--block-nnz", type=int, default=1 << 22, help="nonzeros per row block (the unit of parallel work)")
    m = b.add_argument_group("mini-batch model (shp)")
    m.add_argument("--sampler", choices=("node", "edge", "rw"), default="node",
                   help="mini-batch sampler: node (uniform vertices), edge, rw (GraphSAINT)")
    m.add_argument("--batch-size", type=int, default=0, help="vertices per mini-batch (0: 10%% of n)")
    m.add_argument("--walk-length", type=int, default=2, help="rw sampler: steps per walk")
    m.add_argument("--theta", type=float, default=0.1, help="Hoeffding: tolerance of the mean connectivity")
    m.add_argument("--delta", type=float, default=0.5, help="Hoeffding: failure probability")
    m.add_argument("--batches", type=int, default=None,
                   help="use exactly this many sampled batches (overrides the Hoeffding floor and stopping rule)")
    m.add_argument("--eval-batches", type=int, default=200,
                   help="held-out batches (HELDOUT stream, never used to build or choose) for the mini-batch quality")
    m.add_argument("--validation-batches", type=int, default=0,
                   help="edge and rw samplers: batches of the VALIDATION stream shp chooses its steps by "
                        "(0: as many as --eval-batches); the node sampler uses the exact expected volume")
    m.add_argument("--shp-construction", choices=("auto", "batches", "columns"), default="auto",
                   help="nets from whole sampled batches, or per column (node sampler; auto: columns for it)")
    m.add_argument("--shp-max-rounds", type=int, default=6, help="stopping rule: at most this many rounds")
    m.add_argument("--shp-min-gain", type=float, default=0.01,
                   help="stopping rule: stop when a round improves the validation objective by less")
    m.add_argument("--shp-time-factor", type=float, default=0.0,
                   help="when hp is computed too, stop shp's steps before shp would take longer than this many "
                        "times hp's partitioning time; the steps then depend on the clock, so the store is no longer "
                        "reproducible byte for byte (default: 0, no limit: the rounds and passes bound the work)")
    c = b.add_argument_group("Dask")
    c.add_argument("--scheduler", help="address of an existing Dask scheduler, tcp://HOST:PORT (default: "
                                       "$DASK_SCHEDULER_ADDRESS, else an embedded cluster)")
    c.add_argument("--workers", type=int, default=0, help="embedded cluster: threads (or processes) (0: cores)")
    c.add_argument("--processes", action="store_true", help="embedded cluster: worker processes instead of threads")
    c.add_argument("--dashboard-address", default="127.0.0.1:0",
                   help="embedded cluster: HOST:PORT of the dashboard; every server binds to HOST (port 0: free)")
    c.add_argument("--keep-dashboard", action="store_true",
                   help="keep the cluster and its dashboard up after the build, until Ctrl-C")
    c.add_argument("--heartbeat", type=float, default=30.0, help="seconds between 'still running' log lines")
    b.add_argument("--json", action="store_true", help="print only the build summary, as JSON, on stdout")

    i = sub.add_parser("info", parents=[common], help="show what a store holds and its quality table")
    i.add_argument("store", metavar="STORE")
    i.add_argument("--json", action="store_true", help="one JSON object instead of text")

    r = sub.add_parser("report", parents=[common], formatter_class=_FMT,
                       help="render the quality report notebook to HTML",
                       description="Execute the quality report notebook headless for STORE (and run logs) "
                                   "and write a self-contained HTML file, or the executed notebook.")
    r.add_argument("store", metavar="STORE")
    r.add_argument("--run", action="append", default=[], metavar="LOG", help="a run log of shgcn-train (repeatable)")
    r.add_argument("--out", "-o", required=True, help="output file: report.html, or report.ipynb for the executed notebook")
    r.add_argument("--format", choices=("html", "ipynb"), default=None,
                   help="output format (default: from --out's extension, .html or .ipynb)")
    r.add_argument("--timeout", type=int, default=600, help="seconds per cell")

    sub.add_parser("datasets", help="list the named datasets")

    sim = sub.add_parser("simulate", parents=[common], formatter_class=_FMT,
                         help="predict the epoch time of every model of a store on a network",
                         description="Predict a full-batch epoch of every model of STORE: per rank, computation "
                                     "from its rows and nonzeros (fitted on this machine), communication from its "
                                     "exact send and receive rows and messages through a latency-bandwidth model "
                                     "of the exchange; the epoch is the slowest rank. Prints the speedup over rp "
                                     "and over bcast. See shgcn.pipeline.simulate.")
    sim.add_argument("store", metavar="STORE")
    sim.add_argument("--ranks", type=_ints, default=None,
                     help="rank counts, e.g. 64,128,256 (default: the store's; others re-partition Â)")
    sim.add_argument("--network", choices=("infiniband", "shm"), default="infiniband",
                     help="preset: a typical InfiniBand cluster, or this machine's shared memory (ping-pong fit)")
    sim.add_argument("--alpha", type=float, default=None, help="latency per message, seconds (overrides the preset)")
    sim.add_argument("--beta", type=float, default=None, help="seconds per byte (overrides the preset)")
    sim.add_argument("--exchange", default="p2p,alltoallv,bcast", help="exchanges to predict, a comma list")
    sim.add_argument("--hidden", type=_ints, default=(16,), help="hidden widths of the GCN, as shgcn-train's")

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


def _ints(text: str) -> tuple[int, ...]:
    try:
        out = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected integers like 64,128, got {text!r}") from None
    if not out or min(out) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return out


def _models(text: str) -> tuple[str, ...]:
    from .compose import model_names
    from .partition import DEFAULT_ALL

    if text == "all":
        return DEFAULT_ALL
    models = tuple(m.strip() for m in text.split(",") if m.strip())
    known = model_names()
    for m in models:
        if m not in known:
            raise UserError(f"--model {m!r}: choose from {', '.join(known)} or all")
    if len(set(models)) != len(models):
        raise UserError(f"--model {text!r}: a model is listed twice")
    return models


def build_config(args):
    """The BuildConfig of ``pipeline build``'s arguments."""
    from .compose import BuildConfig
    from .stochastic import SHPConfig

    return BuildConfig(
        source=args.source, out=args.out, parts=args.parts,
        models=_models(args.model) if args.model else (), layout_model=args.layout_model, eps=args.eps,
        seed=args.seed, threads=args.threads, hp_preset=args.hp_preset, fmt=args.fmt, data_dir=args.data_dir,
        directed=args.directed, features=args.features, labels=args.labels, feature_norm=args.feature_norm,
        split=args.split, overwrite=args.overwrite, chunk_bytes=args.chunk_bytes, max_line=args.max_line,
        header=args.header, block_nnz=args.block_nnz, partition_files=tuple(args.partition_file),
        max_total_increase=args.max_total_increase,
        command="pipeline " + shlex.join(sys.argv[1:]),
        shp=SHPConfig(sampler=args.sampler, batch_size=args.batch_size, walk_length=args.walk_length,
                      theta=args.theta, delta=args.delta, batches=args.batches, eval_batches=args.eval_batches,
                      construction=args.shp_construction, max_rounds=args.shp_max_rounds,
                      min_gain=args.shp_min_gain, validation_batches=args.validation_batches),
        shp_time_factor=args.shp_time_factor, progress=not (args.quiet or args.json) and sys.stderr.isatty(),
        heartbeat=args.heartbeat)


def cmd_build(args) -> int:
    from .cluster import ClusterConfig, dask_client
    from .compose import build
    from .partition import kill_children

    cfg = build_config(args).resolved()
    cfg.check()
    quiet = args.quiet or args.json
    # with --json, stdout holds the JSON only: everything else goes to stderr
    say = (lambda *a, **k: None) if args.quiet else (lambda msg: log.info("%s", msg))
    echo = (lambda *a, **k: None) if quiet else print
    ccfg = ClusterConfig(scheduler=args.scheduler, workers=args.workers,
                         dashboard_address=args.dashboard_address, processes=args.processes)
    # the output is checked and locked before the cluster starts: a second build, or an output that must not be
    # replaced, stops at once
    with store.StoreWriter(cfg.out, overwrite=cfg.overwrite) as writer, dask_client(ccfg, announce=say) as client:
        try:
            result = build(cfg, client, echo=echo, writer=writer)
        except KeyboardInterrupt:
            with contextlib.suppress(Exception):  # partitioner children on the workers, too
                client.run(kill_children)
            raise
        if args.keep_dashboard:
            from .cluster import dashboard_link

            say(f"build done; the dashboard stays up at {dashboard_link(client)} until Ctrl-C")
            try:
                while True:
                    time.sleep(3600)
            except KeyboardInterrupt:
                pass
    if args.json:
        print(json.dumps(_summary(result.attrs, result.table), indent=2, default=float))
    else:
        echo(f"wrote {result.path} ({', '.join(f'{k} {v:.2f}s' for k, v in result.timings.items())})")
    return 0


def _summary(attrs: dict, table: list[dict], minibatch=None) -> dict:
    keep = ("dataset", "source", "n", "nnz", "edges", "directed", "parts", "model", "models", "eps", "seed",
            "hp_preset", "feature_dim", "classes", "command", "versions", "timings", "peak_rss_mib",
            "peak_rss_mib_by_stage", "partitions", "stats", "notes", "shp")
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
    print("stages     " + ", ".join(f"{k} {v:.1f} s" for k, v in a.get("timings", {}).items()))
    for stage, peaks in a.get("peak_rss_mib_by_stage", {}).items():
        print(f"memory     {stage:9s} " + ", ".join(f"{p} {v:,.0f} MiB" for p, v in peaks.items()))
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


def cmd_simulate(args) -> int:
    import math

    from . import simulate
    from .partition import Inputs, PartitionConfig, run

    s = store.open_store(args.store)
    net = simulate.network_of(args.network)
    if args.alpha is not None or args.beta is not None:
        alpha = net.alpha if args.alpha is None else args.alpha
        beta = net.beta if args.beta is None else args.beta
        if not (math.isfinite(alpha) and math.isfinite(beta) and alpha >= 0 and beta >= 0):
            raise UserError("--alpha and --beta must be finite and >= 0")
        net = simulate.Network("custom", alpha, beta)
    exchanges = [x.strip() for x in args.exchange.split(",") if x.strip()]
    imported = [m for m in s.models if m not in models_known()]

    def partitioner(a, model: str, parts: int):
        if model in imported:
            raise UserError(f"{model} was imported from a file for {s.parts} ranks; it cannot be re-partitioned "
                            f"for {parts} (leave --ranks out, or give ranks the store has)")
        cfg = PartitionConfig(parts=parts, eps=float(s.attrs["eps"]), seed=int(s.attrs["seed"]))
        return run(model, Inputs(a, s.graph() if model.startswith("shp") else None), cfg).part

    rows = simulate.predict_store(s, args.ranks, net, exchanges, args.hidden, partitioner=partitioner)
    print(simulate.format_table(rows))
    return 0


def models_known() -> tuple[str, ...]:
    from .compose import model_names

    return model_names()


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
    # dependencies' deprecation notices are for their users, not ours (a command's stderr is for its own messages)
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    args = _parser().parse_args(argv)
    if threading.current_thread() is threading.main_thread():  # a kill (SIGTERM) cleans up like Ctrl-C
        signal.signal(signal.SIGTERM, _terminate)
    level = logging.WARNING if args.quiet else (logging.INFO if args.verbose == 1 else
                                                 logging.DEBUG if args.verbose > 1 else logging.WARNING)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_JsonFormatter() if args.log_format == "json" else
                         logging.Formatter("%(asctime)s %(name)s %(levelname)s: %(message)s"))
    logging.basicConfig(level=level, handlers=[handler], force=True)
    if not args.quiet and args.verbose == 0:
        logging.getLogger("shgcn").setLevel(logging.INFO)
    handlers = {"build": cmd_build, "info": cmd_info, "report": cmd_report, "datasets": cmd_datasets,
                "export": cmd_export, "simulate": cmd_simulate}
    try:
        return handlers[args.command](args)
    except UserError as e:
        print(f"pipeline: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        _interrupted()
        return 130


def _terminate(signum, frame) -> None:
    raise KeyboardInterrupt


def _interrupted() -> None:
    """Ctrl-C: kill partitioner children, stop writers, remove the partial
    store, and leave at once (worker threads still inside numpy would
    otherwise be waited for)."""
    from .partition import kill_children

    kill_children()
    store.abort_all()
    time.sleep(0.3)  # a write already inside zarr finishes; then its files go too
    store.abort_all()
    print("pipeline: interrupted; nothing was written", file=sys.stderr, flush=True)
    logging.shutdown()
    os._exit(130)


if __name__ == "__main__":
    sys.exit(main())
