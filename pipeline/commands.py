"""What each ``pipeline`` sub-command does (the parser is :mod:`.cli`)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import sys
import time

from shgcn import store
from shgcn.core import tables

from .config import PLAN_OUT, config_from_args, plan_out, writable
from .errors import UserError

log = logging.getLogger("shgcn.pipeline")


def _plan_checks(args, cfg, address: str | None) -> None:
    """What a build checks before it starts and a plan must too (it says fits only for what builds): the store's
    own checks of ``--out`` and that it can be written, and a ``--scheduler`` that refuses connections."""
    from .runtime.client import reachable

    if args.out != PLAN_OUT:
        store.StoreWriter(cfg.out, overwrite=cfg.overwrite)
        writable(cfg.out)
    if address is not None:
        reachable(address)


def cmd_build(args) -> int:
    from ..core import malloc
    from .builder import build
    from .runtime.child import kill_children
    from .runtime.client import ClusterConfig, dask_client, scheduler_lost
    from .runtime.jobqueue import batch_config
    from .sources.resolve import preflight

    malloc.return_freed_memory()  # this process is the build's: its freed arrays go back to the system at once
    show = getattr(args, "plan", False)
    args.out = plan_out(args.out, show)
    cfg = config_from_args(args).resolved()
    cfg.check()
    ccfg = ClusterConfig(scheduler=args.scheduler, workers=args.workers, dashboard_address=args.dashboard_address,
                         processes=args.processes, memory_limit=args.memory_limit, batch=batch_config(args))
    if show or not getattr(args, "no_plan_check", False):  # the plan first: nothing is read, downloaded or created before it
        from .plan import PlanDoesNotFit, plan_step

        address = ccfg.address()
        if show:
            _plan_checks(args, cfg, address)
        try:
            workers = (args.workers or os.cpu_count() or 1) if args.processes and address is None else 0
            text, checked = plan_step(cfg, show=show, remote=address is not None or ccfg.batch is not None, as_json=args.json,
                                      processes=workers)
        except PlanDoesNotFit as e:  # the table and its verdict, then the one line (exit 2)
            print(e.table, flush=True)
            raise
        if show:
            print(text)
            return 0
        cfg = dataclasses.replace(cfg, planned=checked)
    # before the cluster starts or anything is created: the dataset is there, the files can be read
    preflight(cfg.source, cfg.data_dir, _input_files(cfg), local=ccfg.address() is None)
    quiet = args.quiet or args.json
    # with --json, stdout holds the JSON only: everything else goes to stderr
    say = (lambda *a, **k: None) if args.quiet else (lambda msg: log.info("%s", msg))
    echo = (lambda *a, **k: None) if quiet else print
    # the output is checked and locked before the cluster starts: a second build, or an output that must not be
    # replaced, stops at once
    with store.StoreWriter(cfg.out, overwrite=cfg.overwrite) as writer, dask_client(ccfg, announce=say) as client:
        try:
            result = build(cfg, client, echo=echo, writer=writer)
        except KeyboardInterrupt:
            with contextlib.suppress(Exception):  # partitioner children on the workers, too
                client.run(kill_children)
            raise
        except Exception as e:
            if scheduler_lost(client, e):
                raise UserError(f"the Dask scheduler{f' at {ccfg.address()}' if ccfg.address() else ''} stopped "
                                "answering during the build (killed, or its machine is gone); nothing was written, "
                                "the workers stop their tasks") from None
            raise
        if args.keep_dashboard:
            _keep_dashboard(client, say)
    if args.json:
        print(json.dumps(summary(result.attrs, result.table), indent=2, default=float))
    else:
        echo(f"wrote {result.path} ({', '.join(f'{k} {v:.2f}s' for k, v in result.timings.items())})")
    return 0


def _input_files(cfg) -> tuple[str, ...]:
    """The files besides the source that a build reads."""
    return (*cfg.partition_files, *([cfg.features] if cfg.features.endswith(".npy") else []))


def _keep_dashboard(client, say) -> None:
    from .runtime.client import dashboard_link

    say(f"build done; the dashboard stays up at {dashboard_link(client)} until Ctrl-C")
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass


def summary(attrs: dict, table: list[dict], minibatch=None) -> dict:
    """The JSON summary of a store (``build --json``, ``info --json``)."""
    keep = ("dataset", "source", "n", "nnz", "edges", "directed", "parts", "model", "models", "eps", "seed", "balance",
            "feature_dim", "classes", "label_kind", "feature_dtype", "command", "versions", "timings", "peak_rss_mib",
            "peak_rss_mib_by_stage", "peak_rss_mib_while_partitioning",
            "partitions", "stats", "notes", *_record_attributes(attrs))
    out = {**{k: attrs.get(k) for k in keep if k in attrs}, "quality": {row["model"]: row for row in table}}
    if minibatch is not None:
        out["minibatch"] = {"attrs": dict(minibatch.attrs),
                            "models": {r["model"]: r for r in tables.minibatch_rows(minibatch)}}
    return out


def _record_attributes(attrs: dict) -> list[str]:
    """Models of the store whose long record is an attribute of their name."""
    return [m for m in attrs.get("models", []) if isinstance(attrs.get(m), dict)]


def cmd_info(args) -> int:
    s = store.open_store(args.store)
    if args.verify:  # every rank block's and every array's checksum; the first bad one is the error
        checked = s.verify()
        if not args.json:
            print(f"verified   {s.parts} rank blocks and {checked - s.parts} arrays: every checksum matches")
    table = tables.table_from_dataset(s.quality())
    if args.json:
        print(json.dumps(summary(s.attrs, table, s.minibatch()), indent=2, default=float))
        return 0
    a = s.attrs
    print(f"store      {s.path}")
    kind = "directed" if a["directed"] else "undirected"
    print(f"dataset    {a['dataset']}  ({a['n']:,} vertices, {a['edges']:,} {kind} edges, nnz(Â) {a['nnz']:,})")
    print(f"parts      {a['parts']}  layout model {a['model']}  models {', '.join(a['models'])}  "
          f"eps {a['eps']}  seed {a['seed']}")
    kind = " (multi-label: sigmoid loss, micro-F1)" if a.get("label_kind") == "multi" else ""
    print(f"features   {a['feature_dim']} ({a.get('feature_dtype', 'float32')})  classes {a['classes']}{kind}")
    print(f"built by   {a['command']}")
    print("stages     " + ", ".join(f"{k} {v:.1f} s" for k, v in a.get("timings", {}).items()))
    for stage, peaks in a.get("peak_rss_mib_by_stage", {}).items():
        print(f"memory     {stage:9s} " + ", ".join(f"{p} {v:,.0f} MiB" for p, v in peaks.items()))
    for note in a.get("notes", []):
        print(f"note       {note}")
    print()
    print(tables.format_table(table))
    mb = s.minibatch()
    if mb is not None:
        print()
        print(tables.format_minibatch(mb))
        for m in _record_attributes(a):
            rec = a[m]
            if "nets_sampled" in rec:
                print(f"{m}: {rec['construction']} construction, {rec['nets_sampled']:,} nets sampled "
                      f"({rec['nets_after_merging']:,} after merging identical nets, Hoeffding floor "
                      f"{rec['required_nets']:,}), {len(rec['rounds'])} rounds, {rec['seconds']:.1f} s")
    return 0


def cmd_report(args) -> int:
    try:
        import ipykernel  # noqa: F401
        import matplotlib  # noqa: F401
        import nbconvert  # noqa: F401
        import nbformat  # noqa: F401
        import papermill  # noqa: F401

        from shgcn.notebooks.render import ReportCellError, render
    except ImportError as e:
        raise UserError(f"pipeline report needs the report extra ({e.name} is missing): "
                        "pip install 'shgcn[report]'") from None

    logging.getLogger("traitlets").setLevel(logging.ERROR)  # nbconvert's alt-text notices
    try:
        out = render(args.store, args.run, args.out, args.format, args.timeout, overwrite=args.overwrite)
    except ReportCellError as e:
        if args.log_format == "json":
            log.error("report: a notebook cell failed: %s", e, extra={"exit_code": 1})
        else:
            print(f"pipeline: report: a notebook cell failed:\n{e}", file=sys.stderr)
        return 1
    if not args.quiet:
        print(f"wrote {out}")
    return 0


def cmd_simulate(args) -> int:
    from shgcn.core import epoch

    from .simulate import (
        breakdown_rows,
        fastest_line,
        model_partitioner,
        network_line,
        no_plans,
        oversubscribed,
        predict_algorithms,
        predict_ranks,
        simulation_jobs,
        simulation_list,
        simulation_machine,
    )

    s = store.open_store(args.store)
    n = int(s.attrs["n"])
    for p in args.ranks or []:  # as build --parts: a part per vertex at most (2^31 ranks grew to 22.9 GB)
        if not 1 <= p <= n:
            raise UserError(f"--ranks {p}: must be between 1 and the graph's {n:,} vertices")
    machine = simulation_machine(args.machine, args.alpha, args.beta, args.contention)
    exchanges = simulation_list(args.exchange, "--exchange")
    jobs = simulation_jobs(s, args.hidden, args.arch, machine, args.ranks_per_node, args.threads)
    refused = oversubscribed(args.ranks or [s.parts], jobs, machine)
    if refused:  # more ranks x threads than a node's cores: not predicted (issue 53)
        raise UserError(refused)
    if args.algorithm is not None:
        algorithms = simulation_list(args.algorithm, "--algorithm")
        rows = predict_algorithms(s, args.ranks, algorithms, args.replication, jobs[0], machine=machine,
                                  exchanges=exchanges, partitioner=model_partitioner(s))
        if not rows:  # no grid on these ranks, or no exchange it runs with: said, not an empty table
            raise UserError(no_plans(args.ranks or [s.parts], algorithms, args.replication, jobs[0], exchanges))
        print(tables.format_grid(rows))
        for r in epoch.recommend(rows):
            c = f" c={r['replication']}" if r["replication"] > 1 else ""
            print(f"P={r['ranks']}: fastest {r['algorithm']}{c} ({r['parts']} parts, {r['model']}, "
                  f"{r['exchange']}): {r['epoch'] * 1e3:.3f} ms per epoch")
        return 0
    rows = []
    for job in jobs:
        rows += predict_ranks(s, args.ranks, job, machine, exchanges, partitioner=model_partitioner(s))
    print(f"machine {machine.name}: {machine.description or machine.source}")
    print(network_line(machine))
    print(tables.format_epochs(rows))
    if args.breakdown:
        for job in jobs:
            for b in breakdown_rows(s, args.ranks, job, machine, exchanges, partitioner=model_partitioner(s)):
                print(tables.format_breakdown(b, machine.node_size(b["parts"])))
    _print_splits(s, args, jobs[0], exchanges)
    for r in epoch.recommend([{**r, "ranks": r["parts"]} for r in rows]):
        print(fastest_line(r))
    return 0


def _print_splits(s, args, job, exchanges) -> None:
    """One line per machine preset: the fastest ranks x threads split of a node's cores."""
    from shgcn.core.machine import presets

    from .simulate import fastest_splits, model_partitioner

    rows = fastest_splits(s, args.ranks, job, presets(), exchanges, partitioner=model_partitioner(s))
    for name in dict.fromkeys(r["machine"] for r in rows):
        mine = [r for r in rows if r["machine"] == name]
        best = next(r for r in mine if r["best"])
        others = ", ".join(f"{r['ranks']}x{r['threads']} {r['epoch'] * 1e3:.3f} ms" for r in mine if not r["best"])
        print(f"{name} ({best['cores']} cores per node): fastest split {best['ranks']} ranks x {best['threads']} "
              f"threads: {best['epoch'] * 1e3:.3f} ms per epoch ({best['model']}, {best['exchange']})"
              + (f"; {others}" if others else ""))


def cmd_export(args) -> int:
    """``pipeline export``: see :mod:`.exports`."""
    args.items = [x for x in (args.first, args.second, args.third) if x is not None]
    if args.items[0] == "graph" and args.export_format in ("parhip", "metis"):
        return _export_graph(args)
    if args.export_format in ("parhip", "metis"):
        raise UserError(f"--format {args.export_format} exports a graph: pipeline export graph SOURCE OUT "
                        f"--format {args.export_format}")
    if len(args.items) != 2:
        raise UserError("expected STORE OUT (or: export graph SOURCE OUT --format parhip|metis)")
    from .exports.assignment import export_assignment
    from .exports.distdgl import export_distdgl

    s = store.open_store(args.items[0])
    out = args.items[1]
    if args.export_format == "assignment":
        written = export_assignment(s, out, model=args.model, overwrite=args.overwrite)
    else:
        written = export_distdgl(s, out, model=args.model, graph_name=args.graph_name, overwrite=args.overwrite)
    if not args.quiet:
        print(f"wrote {written}")
    return 0


def _export_graph(args) -> int:
    from .config import BuildConfig
    from .exports.graph import export_graph
    from .runtime.client import ClusterConfig, dask_client
    from .runtime.jobqueue import batch_config
    from .sources.resolve import is_path, preflight

    if len(args.items) != 3:
        raise UserError("expected: pipeline export graph SOURCE OUT --format parhip|metis")
    _, source, out = args.items
    cfg = BuildConfig(source=source, out=out, parts=1, models=("rp",), fmt=args.fmt, data_dir=args.data_dir,
                      directed=args.directed, features=args.features, labels=args.labels, balance=args.balance,
                      hidden=tuple(args.hidden), progress=not args.quiet and sys.stderr.isatty(),
                      heartbeat=args.heartbeat, memory_limit=args.memory_limit)
    say = (lambda *a, **k: None) if args.quiet else (lambda msg: log.info("%s", msg))
    ccfg = ClusterConfig(scheduler=args.scheduler, workers=args.workers, dashboard_address=args.dashboard_address,
                         processes=args.processes, memory_limit=args.memory_limit, batch=batch_config(args))
    preflight(cfg.source if not isinstance(cfg.source, str) or not is_path(cfg.source) else os.path.abspath(cfg.source),
              cfg.data_dir, _input_files(cfg), local=ccfg.address() is None)
    with dask_client(ccfg, announce=say) as client:
        g = export_graph(cfg, client, args.export_format, overwrite=args.overwrite)
    if not args.quiet:
        print(f"wrote {g.path} ({g.fmt}: {g.n:,} vertices, {g.m // 2:,} undirected edges, vertex weights: "
              f"{args.balance})")
    return 0


def cmd_datasets(args) -> int:
    from .sources.datasets import ENV_VAR, REGISTRY, found_in, search_dirs

    dirs = search_dirs(args.data_dir)
    labels = {d: "cache" for d in dirs[-1:]} | ({dirs[0]: "--data-dir"} if args.data_dir else {})
    if os.environ.get(ENV_VAR):
        labels[dirs[-2]] = f"${ENV_VAR}"
    print(f"{'name':18s} {'source':11s} {'vertices':>12s} {'edges':>14s}   {'features':>8s} {'classes':>7s} "
          f"{'size':>9s}  {'present':11s} description")
    for _, ds in sorted(REGISTRY.items()):
        where = found_in(ds, args.data_dir)
        present = labels.get(where, "yes") if where is not None else "no"
        print(f"{ds.name:18s} {ds.publisher:11s} {ds.nodes:>12,} {ds.edges:>14,} {'d' if ds.directed else 'u'} "
              f"{ds.features or '-':>8} {ds.classes or '-':>7} {_size(ds.size):>9s}  {present:11s} {ds.description}")
    print(f"edges: d directed arcs, u undirected pairs; size: the download ('?': unknown); looked in: "
          f"{', '.join(str(d) for d in dirs)}")
    return 0


def _size(n: int | None) -> str:
    """Bytes in decimal units (``?``: unknown)."""
    if n is None:
        return "?"
    if n < 1000:
        return f"{n} B"
    x, units = n / 1000, ["kB", "MB", "GB", "TB"]
    while x >= 1000 and len(units) > 1:
        x, units = x / 1000, units[1:]
    return f"{x:.1f} {units[0]}"


COMMANDS = {"build": cmd_build, "info": cmd_info, "report": cmd_report, "datasets": cmd_datasets,
            "export": cmd_export, "simulate": cmd_simulate}


def interrupted(say=lambda message: print(f"pipeline: {message}", file=sys.stderr, flush=True)) -> None:
    """Ctrl-C: kill partitioner children, stop writers, remove the partial
    store, and leave at once (worker threads still inside numpy would
    otherwise be waited for)."""
    from .runtime.child import kill_children

    kill_children()
    store.abort_all()
    for _ in range(50):  # a write already inside zarr finishes; then its files go too, until none comes back
        time.sleep(0.2)
        if not store.abort_all():
            break
    say("interrupted; nothing was written")
    logging.shutdown()
    os._exit(130)
