"""The ``pipeline`` command: ``build``, ``info``, ``report``, ``simulate``,
``export``, ``datasets``.

Exit codes: 0 success, 2 a problem with the input or options (one line on
stderr, never a traceback), 1 a failure of the work itself, 130 Ctrl-C.

The parser imports nothing heavy (``--help`` and ``--version`` load neither
Dask, zarr, numba nor the partitioners); each command imports what it needs
(:mod:`.commands`). Model options come from the models' own descriptions.
"""

from __future__ import annotations

import argparse
import errno
import logging
import signal
import sys
import threading
import warnings

from shgcn.core.memory import size_argument

from ._version import __version__
from .errors import UserError
from .runtime.jobqueue import add_arguments as add_cluster_arguments

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


def _ints(text: str) -> tuple[int, ...]:
    try:
        out = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected integers like 64,128, got {text!r}") from None
    if not out or min(out) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return out


def _memory_argument(b) -> None:
    b.add_argument("--memory-limit", type=size_argument, default=None, metavar="SIZE",
                   help="memory the build may use, e.g. 16G: the plan and every size a file or option declares are "
                        "checked against it before anything is allocated, and a graph that will not fit stops with "
                        "one line; the embedded Dask workers share it (they spill to disk as they near it and never "
                        "pause), and a partitioner's child process that, with the build's process, grows past it is "
                        "stopped (default: this machine's memory, with no watch on the children)")


def parser() -> argparse.ArgumentParser:
    """The whole command line."""
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
    _build_parser(sub, common)
    _info_parser(sub, common)
    _report_parser(sub, common)
    d = sub.add_parser("datasets", help="list the named datasets: published counts, size, and whether present",
                       description="The named datasets with their published counts, download size and where each is "
                                   "found (--data-dir, then $SHGCN_DATA_DIR, then the cache directory).")
    d.add_argument("--data-dir", default=None, help="a directory of datasets to look in first")
    _simulate_parser(sub, common)
    _export_parser(sub, common)
    return p


def _build_parser(sub, common) -> None:
    from .sources.base import HEADERS
    from .sources.datasets import ENV_VAR, cache_dir
    from .sources.registry import formats

    b = sub.add_parser(
        "build", parents=[common], formatter_class=_FMT,
        help="build a partitioned store from a dataset, a file or a generator",
        description="Build a partitioned store. SOURCE is a dataset name (see 'pipeline datasets'), a file (edge "
                    "list .txt[.gz], .mtx, METIS .graph, .npz, Planetoid ind.NAME), a dataset directory (OGB "
                    "node-property: raw/ and split/; GraphSAINT: adj_full.npz, feats.npy, class_map.json, "
                    "role.json), or a generator: "
                    "rmat:scale=S,edge_factor=E,seed=K or sbm:n=N,classes=C,... Edge lists are read as DIRECTED "
                    "unless the dataset says otherwise (--undirected stores every edge both ways).")
    b.add_argument("source", metavar="SOURCE")
    b.add_argument("--out", "-o", help="store directory to create (e.g. stores/cora-p4.zarr; --plan: optional)")
    b.add_argument("--parts", "-p", type=int, required=True, help="number of parts (MPI ranks)")
    _model_arguments(b)
    b.add_argument("--format", dest="fmt", choices=formats(), help="input format (default: from the file name)")
    b.add_argument("--header", choices=HEADERS, default="auto",
                   help="edge lists: is the first line the file's size (vertices, edges)? auto detects it")
    b.add_argument("--data-dir", help=f"where dataset files are (default: ${ENV_VAR}, then {cache_dir()})")
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
    b.add_argument("--split-scheme", default=None,
                   help="OGB directories: the split/<scheme> to use (default: the dataset's, or the only one)")
    b.add_argument("--feature-dtype", choices=("float32", "float16"), default="float32",
                   help="the store's features: float32, or float16 for half the bytes on disk (the trainer "
                        "computes in float32)")
    b.add_argument("--overwrite", action="store_true", help="replace an existing store (only a store, or an empty "
                                                            "directory, is ever replaced)")
    b.add_argument("--chunk-bytes", type=int, default=16 * 2**20, help="bytes of text per parse task")
    b.add_argument("--max-line", type=int, default=2**20, help="longest line accepted, in bytes")
    b.add_argument("--block-nnz", type=int, default=1 << 22, help="nonzeros per row block (the unit of parallel work)")
    _memory_argument(b)
    b.add_argument("--plan", "--dry-run", dest="plan", action="store_true",
                   help="print the plan - per stage the peak memory of every process, the disk of the store and its "
                        "temporary area, the time - from the input's counts, ending in its verdict, and exit without building: "
                        "0 when the build fits --memory-limit and the free disk, 2 when it does not")
    b.add_argument("--no-plan-check", action="store_true",
                   help="build even when the plan exceeds --memory-limit or the free disk (the plan is a model)")
    _dask_arguments(b)
    b.add_argument("--json", action="store_true", help="print only the build summary, as JSON, on stdout")


def _model_arguments(b) -> None:
    """``--model``, the options every model shares, and each model's own
    (from the registry: the CLI names no model)."""
    from .models import DEFAULT_ALL, REGISTRY

    listing = "; ".join(f"{m}: {r.description}" for m, r in REGISTRY.items())
    b.add_argument("--model", default="hp",
                   help=f"a comma list of models, or all (= {','.join(DEFAULT_ALL)}). {listing}")
    b.add_argument("--partition-file", action="append", default=[], metavar="FILE",
                   help="import an assignment made elsewhere (one part id per line in the input's vertex order, or "
                        ".npy; e.g. from ParMETIS, KaMinPar, an earlier build) as a model named by the file's stem "
                        "(repeatable): the way to use a distributed partitioner")
    b.add_argument("--layout-model", default=None, help="model whose partition lays out the rank blocks "
                                                          "(default: hp if computed, else the first)")
    b.add_argument("--eps", type=float, default=0.01, help="allowed imbalance of what --balance balances (the "
                   "busiest rank's work above the average: it adds to every epoch)")
    b.add_argument("--balance", choices=("work", "nnz", "rows"), default="work",
                   help="what every partitioner balances: the modelled compute per training step of each row (work: "
                        "a term per row plus one per nonzero, from the epoch model fitted on this machine), the "
                        "nonzeros, or the rows")
    b.add_argument("--hidden", type=_ints, default=(16,),
                   help="--balance work: hidden widths of the GCN that will train on the store (shgcn-train --hidden)")
    b.add_argument("--seed", type=int, default=0, help="seed of every random choice")
    b.add_argument("--threads", type=int, default=0, help="partitioner threads (0: all cores)")
    b.add_argument("--ranks-per-node", type=int, default=0, metavar="K",
                   help="place every model's parts on nodes of K ranks so that the fewest rows cross between nodes "
                        "(rank r on node r // K, as shgcn-train --ranks-per-node K and mpirun's block placement); "
                        "0: the partitioner's order")
    b.add_argument("--placement", choices=PLACEMENTS, default="hypergraph",
                   help="with --ranks-per-node: hypergraph (the rows' part sets into nodes with Mt-KaHyPar: the "
                        "node-aware exchange's inter-node rows), graph (the parts' quotient graph: the flat exchange's), "
                        "or block (the partitioner's order); a placement is kept only if it beats block's")
    seen: set[str] = set()
    for m, model in REGISTRY.items():
        new = [o for o in model.options if o.dest not in seen]
        if not new:
            continue
        g = b.add_argument_group(f"model {m}")
        for o in new:
            seen.add(o.dest)
            g.add_argument(o.flag, dest=o.dest, type=o.type, default=o.default, choices=o.choices, help=o.help,
                           metavar=o.metavar)


PLACEMENTS = ("hypergraph", "graph", "block")  # shgcn.pipeline.placement.PLACEMENTS (tested equal)


def _dask_arguments(b) -> None:
    c = b.add_argument_group("Dask")
    c.add_argument("--scheduler", help="an existing Dask scheduler, tcp://HOST:PORT (else $DASK_SCHEDULER_ADDRESS, else embedded")
    c.add_argument("--workers", type=int, default=0, help="embedded cluster: threads (or processes) (0: cores)")
    c.add_argument("--processes", action="store_true", help="embedded cluster: worker processes instead of threads")
    c.add_argument("--dashboard-address", default="127.0.0.1:0", help="embedded or --cluster: HOST:PORT of the "
                   "dashboard; the embedded cluster's servers all bind to HOST (port 0: free)")
    c.add_argument("--keep-dashboard", action="store_true", help="keep the cluster and its dashboard up until Ctrl-C")
    c.add_argument("--heartbeat", type=float, default=30.0, help="seconds between 'still running' log lines")
    add_cluster_arguments(c)


def _info_parser(sub, common) -> None:
    i = sub.add_parser("info", parents=[common], help="show what a store holds and its quality table")
    i.add_argument("store", metavar="STORE")
    i.add_argument("--json", action="store_true", help="one JSON object instead of text")
    i.add_argument("--verify", action="store_true", help="recompute the checksum of every rank block and array "
                                                           "(reads the whole store); the first bad one is an error")


def _report_parser(sub, common) -> None:
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
    r.add_argument("--overwrite", action="store_true", help="replace an existing OUT (only a report this command "
                                                             "wrote is ever replaced)")


def _simulate_parser(sub, common) -> None:
    sim = sub.add_parser("simulate", parents=[common], formatter_class=_FMT,
                         help="predict the epoch time of every model of a store on a network",
                         description="Predict a full-batch epoch of every model of STORE: per rank, computation "
                                     "from its rows and nonzeros (fitted on this machine), communication from its "
                                     "exact send and receive rows and messages through a latency-bandwidth model "
                                     "of the exchange and its node's link (shgcn.core.contention); the epoch is the "
                                     "slowest rank. Prints the speedup over rp and bcast. See shgcn.core.epoch.")
    sim.add_argument("store", metavar="STORE")
    sim.add_argument("--ranks", type=_ints, default=None,
                     help="rank counts, e.g. 64,128,256 (default: the store's; others re-partition Â)")
    sim.add_argument("--machine", "--network", dest="machine", default="infiniband",
                     help="a preset (this, paper, hdr128, infiniband, shm: core/machines/*.json), a machine .json "
                          "file, or a spec like ranks=48,intra=0.4us:8GB/s,inter=1.5us:12GB/s,link=12.5GB/s")
    sim.add_argument("--ranks-per-node", type=_ints, default=None,
                     help="ranks per node to predict, a comma list (default: the store's placement, else the machine's)")
    sim.add_argument("--alpha", type=float, default=None, help="latency per message, s (both paths; overrides the machine)")
    sim.add_argument("--beta", type=float, default=None, help="seconds per byte (both paths; overrides the machine)")
    sim.add_argument("--exchange", default="p2p,alltoallv,bcast,node", help="exchanges to predict, a comma list")
    sim.add_argument("--hidden", type=_ints, default=(16,), help="hidden widths, as shgcn-train's")
    sim.add_argument("--threads", type=_ints, default=(1,),
                     help="threads per rank to predict, a comma list (shgcn-train --threads); after the table, one "
                          "line per machine preset names the fastest ranks x threads split of a node's cores among "
                          "the --ranks")
    sim.add_argument("--arch", default="gcn", help="the architecture, as shgcn-train's --arch")
    sim.add_argument("--algorithm", default=None,
                     help="a comma list of shgcn-train's algorithms (1d, 1.5d, 2d): predict each on every rank "
                          "count (1.5d with each --replication c: k = P / c parts; 2d: k = sqrt(P)) and "
                          "recommend the fastest per P")
    sim.add_argument("--replication", type=_ints, default=(2, 4), help="1.5d: replications to predict (P / c parts)")
    sim.add_argument("--contention", help="the link's sharing, overriding the machine's: fluid (the presets'), maxmin, "
                     "share (a pessimistic bound), aggregate (shgcn.core.contention)")
    sim.add_argument("--breakdown", action="store_true", help="then every rank's terms, ms (epoch.rank_breakdown)")


def _export_parser(sub, common) -> None:
    from .sources.registry import formats

    x = sub.add_parser("export", parents=[common], formatter_class=_FMT,
                       help="write a store's partition for DistDGL or as an assignment file, or a graph for a "
                            "partitioner that runs elsewhere",
                       usage="pipeline export STORE OUT --format distdgl|assignment\n"
                             "       pipeline export graph SOURCE OUT --format parhip|metis",
                       description="Write a store's partition for other tools, or a graph for a partitioner. "
                                   "distdgl: DistDGL's partition layout (OUT/NAME.json and OUT/part{i}/ graph.dgl, "
                                   "node_feats.dgl, edge_feats.dgl, orig_nids.dgl, orig_eids.dgl), which "
                                   "dgl.distributed.load_partition reads; needs DGL. assignment: one part id per "
                                   "line in original vertex order, the format --partition-file reads. "
                                   "graph SOURCE: the pattern of A + Aᵀ with the vertex weights a build balances, "
                                   "as a ParHIP (dKaMinPar, ParHIP) or METIS (ParMETIS, KaHIP) file, written by "
                                   "the Dask workers row block by row block; the partitioner's output comes back "
                                   "with pipeline build SOURCE --partition-file PARTS.")
    # three positionals, the last optional: "STORE OUT" or "graph SOURCE OUT", options anywhere between them
    x.add_argument("first", metavar="STORE|graph", help="the store, or the word graph")
    x.add_argument("second", metavar="OUT|SOURCE", help="the output, or (export graph) the source")
    x.add_argument("third", metavar="OUT", nargs="?", default=None, help="export graph: the output file")
    x.add_argument("--format", dest="export_format", choices=("distdgl", "assignment", "parhip", "metis"),
                   required=True, help="distdgl or assignment (a store), parhip or metis (export graph)")
    x.add_argument("--model", default=None, help="partition model to export (default: the store's layout model)")
    x.add_argument("--graph-name", default=None,
                   help="distdgl: the graph's name, NAME.json, DistGraph(NAME) (default: the store's directory name)")
    x.add_argument("--overwrite", action="store_true", help="replace an existing OUT")
    g = x.add_argument_group("export graph: reading SOURCE and its vertex weights (as pipeline build)")
    g.add_argument("--input-format", dest="fmt", choices=formats(), help="SOURCE's format (default: from its name)")
    g.add_argument("--data-dir", help="where dataset files are")
    d = g.add_mutually_exclusive_group()
    d.add_argument("--undirected", dest="directed", action="store_false", default=None, help="as pipeline build")
    d.add_argument("--directed", dest="directed", action="store_true", help="as pipeline build")
    g.add_argument("--balance", choices=("work", "nnz", "rows"), default="work", help="vertex weights: as pipeline build")
    g.add_argument("--hidden", type=_ints, default=(16,), help="--balance work: as pipeline build")
    g.add_argument("--features", default="auto", help="the feature width of the work model: as pipeline build")
    g.add_argument("--labels", default="auto", help="the class count of the work model: as pipeline build")
    _memory_argument(g)
    _dask_arguments(x)  # its own group on the parser: argparse deprecates a group inside a group


def _json_formatter() -> logging.Formatter:
    """One JSON object per log record (for log collectors): time, level,
    logger, message, and ``exit_code`` on the final error line."""
    from pythonjsonlogger.json import JsonFormatter

    return JsonFormatter("{asctime}{levelname}{name}{message}", style="{",
                         rename_fields={"asctime": "time", "levelname": "level", "name": "logger"})


def _logging(args) -> None:
    level = logging.WARNING if args.quiet else (logging.INFO if args.verbose == 1 else
                                                 logging.DEBUG if args.verbose > 1 else logging.WARNING)
    handler = logging.StreamHandler(sys.stderr)
    if args.verbose < 2:
        handler.addFilter(_quiet_libraries)
    handler.setFormatter(_json_formatter() if args.log_format == "json" else
                         logging.Formatter("%(asctime)s %(name)s %(levelname)s: %(message)s"))
    logging.basicConfig(level=level, handlers=[handler], force=True)
    if not args.quiet and args.verbose == 0:
        logging.getLogger("shgcn").setLevel(logging.INFO)


_LIBRARIES = ("distributed", "tornado", "asyncio", "bokeh")


def _quiet_libraries(record: logging.LogRecord) -> bool:
    """Dask's own error reports (a lost scheduler, a failing task) repeat, as
    tracebacks, what the command says in one line: shown with -vv only."""
    return record.levelno >= logging.CRITICAL or record.name.split(".")[0] not in _LIBRARIES


def fail(args, message: str, code: int = 2) -> int:
    """The command's last word: one line on stderr (``pipeline: error: ...``,
    or a JSON object with ``--log-format json``), and its exit code."""
    if getattr(args, "log_format", "text") == "json":
        log.error("%s", message, extra={"exit_code": code})
    else:
        text = message if code == 1 else " ".join(message.split())  # a user error is one line, whatever it quotes
        print(f"pipeline: {'error: ' if code != 130 else ''}{text}", file=sys.stderr, flush=True)
    return code


USER_ERRNOS = {errno.ENOSPC: "the disk is full: free space or choose another --out",
               errno.EDQUOT: "the disk quota is exhausted: free space or choose another --out",
               errno.EROFS: "a read-only filesystem: choose another --out",
               errno.ENAMETOOLONG: "a name or path too long for the filesystem"}


def main(argv: list[str] | None = None) -> int:
    # dependencies' deprecation notices are for their users, not ours (a command's stderr is for its own messages)
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    from shgcn.core.plugins import PluginError, load_plugins

    try:  # the parts declared outside the tree: their names and options are the command line's too
        load_plugins()
    except PluginError as e:
        return fail(None, str(e), 2)
    args = parser().parse_args(argv)
    from .threads import check_counts

    try:
        check_counts(args)  # before any command loads numba
    except UserError as e:
        return fail(args, str(e), 2)
    if threading.current_thread() is threading.main_thread():  # a kill (SIGTERM) cleans up like Ctrl-C
        signal.signal(signal.SIGTERM, _terminate)
    _logging(args)
    from . import commands

    try:
        return commands.COMMANDS[args.command](args)
    except UserError as e:
        return fail(args, str(e), 2)
    except PermissionError as e:  # a file the user may not read or write, wherever it was opened
        return fail(args, f"{e.filename or ''}: permission denied ({e.strerror or e})".lstrip(": "), 2)
    except OSError as e:
        if e.errno not in USER_ERRNOS:
            raise
        # zarr's writes may raise without a file name: then the --out they write (build, report) is named
        out = getattr(args, "out", None)
        where = f"{e.filename}: " if e.filename else f"--out {out}: " if out else ""
        return fail(args, f"{where}{e.strerror or e} ({USER_ERRNOS[e.errno]})", 2)
    except MemoryError as e:
        return fail(args, f"out of memory ({type(e).__name__}: {' '.join(str(e).split())[:200]}): the graph does "
                          "not fit in this machine's memory; lower --memory-limit to be stopped before the work, or "
                          "use a machine with more memory", 2)
    except KeyboardInterrupt:
        commands.interrupted(lambda message: fail(args, message, 130))
        return 130


def _terminate(signum, frame) -> None:
    raise KeyboardInterrupt


if __name__ == "__main__":
    sys.exit(main())
