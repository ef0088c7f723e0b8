"""The build's plan (``pipeline build --plan``): per stage, the peak memory
of every process, the disk of the temporary area and of the store, and the
time, predicted before any work from the input's counts (:mod:`.sources.counts`).

Each figure is ``base + a * nnz + b * n + c * n * D`` (nonzeros of Â,
vertices, feature values) with coefficients fitted to builds measured on
this machine (``pipeline/plan-this.json``, written by
``python -m benchmarks.build.plan_check --fit``; its ``source`` says on
what). The processes are the embedded cluster's one process (client,
scheduler and worker; with ``--processes`` or ``--scheduler`` the same
memory is spread over several) and each partitioner's child process. The
models run one after another, so the partition stage holds at once the
build's process and the largest child; every other stage the build's alone.
In the partition stage the build's process peaks writing the graph file,
before a child starts, and holds less while it runs: the stage's most at
once is the larger of the two (``beside``: the build's process while a child
runs, fitted apart). What the plan counts for a model
is the model's to say (:meth:`~.models.base.Model.figures`); a model that
was not fitted takes the figures of the one it ``resembles``, and the plan
says so. The plan also flags the sizes where formats change: the
partitioner's input beyond 2^31 adjacency entries (64-bit edge ids) and Â
beyond 2^31 nonzeros or vertices (int64 indices).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from shgcn.core.memory import gib

from .errors import UserError, option
from .models import get, reads_graph_file
from .models.base import GENERAL, Figures, PartitionConfig
from .sources.counts import Counts

STAGES = ("ingest", "normalize", "partition", "place", "quality", "layout", "write")
BUILD = "build (client+scheduler+worker)"
BESIDE = "build, while the child runs"  # the build's process in the partition stage once the child has started
INT32_LIMIT = 2**31


@dataclass(frozen=True)
class Row:
    """One process in one stage: its predicted peak (bytes) and the stage's seconds."""

    stage: str
    process: str
    memory: float
    seconds: float
    note: str = ""
    features: float = 0.0  # of ``memory``: the feature values' share
    advice: str = ""  # what makes this process smaller (its model's), for a refusal


@dataclass(frozen=True)
class Term:
    """``base + nnz * nnz_coef + n * n_coef + feature * n * D`` (bytes or seconds)."""

    base: float = 0.0
    nnz: float = 0.0
    n: float = 0.0
    feature: float = 0.0

    def at(self, c: Counts) -> float:
        return max(0.0, self.base + self.nnz * c.nnz + self.n * c.n + self.feature * c.n * c.features)

    def row(self, stage: str, process: str, c: Counts, seconds: float = 0.0, note: str = "") -> Row:
        return Row(stage, process, self.at(c), seconds, note, self.feature * c.n * c.features)

    @classmethod
    def of(cls, d: dict) -> Term:
        return cls(*(float(d.get(k, 0.0)) for k in ("base", "nnz", "n", "feature")))


@dataclass(frozen=True)
class Coefficients:
    """The fitted figures: build process by stage (``partition:<model>`` in
    the partition stage), children by model, disk and seconds."""

    memory: dict[str, Term]
    child: dict[str, Term]
    disk: dict[str, Term]
    seconds: dict[str, Term]
    source: str = ""
    beside: dict[str, Term] = field(default_factory=dict)  # by model: the build's process while its child runs

    @classmethod
    def load(cls, path: str | Path | None = None) -> Coefficients:
        p = Path(path) if path is not None else coefficients_path()
        try:
            return cls.of(json.loads(p.read_text()))
        except (OSError, KeyError, ValueError, AttributeError) as e:
            raise UserError(f"{p}: not a build plan's coefficients ({type(e).__name__}: {e})") from None

    @classmethod
    def of(cls, d: dict) -> Coefficients:
        """From the fit's JSON object."""
        terms = [{k: Term.of(v) for k, v in d[key].items()} for key in ("memory", "child", "disk", "seconds")]
        beside = {k: Term.of(v) for k, v in d.get("beside", {}).items()}  # a fit before it had none
        return cls(terms[0], terms[1], terms[2], terms[3], source=str(d.get("source", "")), beside=beside)


def coefficients_path() -> Path:  # where the fit writes this machine's coefficients (package data)
    return Path(__file__).resolve().parent / "plan-this.json"


@dataclass(frozen=True)
class Plan:
    """The rows, the disk (``store``: the finished store, the end's peak; ``scratch``: what the temporary area holds
    beyond it at the disk's peak; ``partition_disk``: the temporary area during the partition and ``pattern``: A's
    spilled pattern, which the write lets go of block by block as the store's graph and node rows grow, both 0
    unless a model reads the graph file: :func:`file_disk`) and the flags."""

    counts: Counts
    rows: list[Row]
    store: float
    scratch: float
    flags: list[str] = field(default_factory=list)
    partition_disk: float = 0.0
    pattern: float = 0.0

    def held(self, stage: str) -> list[Row]:
        """The rows of ``stage`` held at once at its peak: the build's process
        alone, or, with a child, the larger of the build's process before it
        and the build's process beside the largest child plus that child
        (without a ``beside`` row: the build's peak plus the child)."""
        rows = [r for r in self.rows if r.stage == stage]
        if not rows:
            return []
        main = max((r for r in rows if r.process == BUILD), key=lambda r: r.memory)
        kids = [r for r in rows if r.process not in (BUILD, BESIDE)]
        if not kids:
            return [main]
        beside = [r for r in rows if r.process == BESIDE]
        with_child = [max(beside, key=lambda r: r.memory) if beside else main, max(kids, key=lambda r: r.memory)]
        return [main] if main.memory > sum(r.memory for r in with_child) else with_child

    def at_once(self) -> tuple[float, str, list[Row]]:
        """The most memory held at once: (bytes, stage, its rows) - the
        largest stage's :meth:`held`."""
        best: tuple[float, str, list[Row]] = (0.0, "", [])
        for s in STAGES:
            held = self.held(s)
            total = sum(r.memory for r in held)
            if total > best[0]:
                best = (total, s, held)
        return best

    @property
    def disk(self) -> float:
        return self.store + self.scratch

    @property
    def seconds(self) -> float:
        return sum(r.seconds for r in self.rows if r.process == BUILD)


def make_plan(counts: Counts, models: tuple[str, ...], options: dict | None = None, feature_bytes: int = 4,
              coef: Coefficients | None = None) -> Plan:
    """The plan of a build of ``counts`` with ``models`` (``options``: the
    models' options by ``dest``; ``feature_bytes``: 4, or 2 for float16)."""
    coef = coef or Coefficients.load()
    opts = options or {}
    figures = {m: _figures(m, counts, opts, coef) for m in models}
    rows: list[Row] = []
    for s in STAGES:
        if s != "partition":
            rows.append(_stage_term(s, figures, counts, coef).row(s, BUILD, counts, coef.seconds[s].at(counts)))
            continue
        for m in models:
            rows.extend(_partition_rows(m, figures[m], counts, opts, coef))
    # the fit's feature values were float32: float16 halves what they take in the store
    store = coef.disk["store"].at(counts) - (1 - feature_bytes / 4) * coef.disk["store"].feature * counts.n * counts.features
    levels = max((f.level_files for f, _ in figures.values()), default=0.0)  # gp's levels beside the graph file
    part_disk, pattern = file_disk(counts, levels) if reads_graph_file(models, PartitionConfig(2, options=opts)) else (0, 0)
    return Plan(counts, rows, store, max(part_disk - store, 0.0), _flags(counts, models, figures), part_disk, pattern)


def file_disk(counts: Counts, levels: float = 0.0) -> tuple[float, float]:
    """The temporary area when a model reads the graph file, counted, not fitted, during the partition (the ParHIP
    file, 8 B an entry, a row pointer and a vertex weight, ``levels`` more of it for a child's files beside it (gp's
    levels: 0.84 + 0.09 of it at R-MAT 22, counted as one), A's and A^T's patterns, 4 B an entry, 8 a row), and A's."""
    pattern = (4 if counts.n < 2**31 else 8) * (counts.nnz - counts.n) + 8 * (counts.n + 1)
    graph_file = 8 * (3 + counts.n + 1 + counts.graph_entries + counts.n) * (1 + levels)
    return float(graph_file + pattern * (2 if counts.directed else 1)), float(pattern)


def _figures(m: str, c: Counts, opts: dict, coef: Coefficients) -> tuple[Figures, str]:
    """The figures model ``m`` takes, and the model whose they are: its own when fitted, else those of the model
    it resembles when fitted, else :data:`~.models.base.GENERAL`'s."""
    base = next((b for b in (m, get(m).resembles) if f"partition:{b}" in coef.memory), GENERAL)
    fitted = {*coef.memory, *(f"child:{k}" for k in coef.child)}
    return get(base).figures(c, opts, fitted), base


def _stage_term(stage: str, figures: dict[str, tuple[Figures, str]], c: Counts, coef: Coefficients) -> Term:
    """The build's process in ``stage``: the stage's figures or, after the partition, the largest of the models'
    own (``<stage>:<key>``, where fitted: hp keeps Â's blocks in memory to the layout)."""
    terms = [coef.memory[stage]]
    if STAGES.index(stage) > STAGES.index("partition"):
        for fig, _ in figures.values():
            key = f"{stage}:{fig.key}"
            terms += [coef.memory[key]] if key in coef.memory else []
    return max(terms, key=lambda t: t.at(c))


def _partition_rows(m: str, figures: tuple[Figures, str], c: Counts, opts: dict, coef: Coefficients) -> list[Row]:
    """The build process and the child (if any) of model ``m`` in the partition stage."""
    fig, base = figures
    own = f"partition:{m}" in coef.seconds  # its own seconds fitted apart (rp's) where its memory is not
    note = "" if base == m else f"not fitted: {base}'s {'memory figures' if own else 'figures'}"
    seconds = coef.seconds.get(f"partition:{m if own else fig.key}", Term()).at(c)
    rows = [coef.memory[f"partition:{fig.key}"].row("partition", BUILD, c, seconds, note)]
    model = get(m)
    if not model.runs_in_child:
        return _named(m, rows)
    advice, doc = model.advice(c, opts), fig.documented if base == m else None
    if doc is not None:  # its own partition's child, documented rather than fitted
        rows.append(Row("partition", f"child {m} ({doc.libraries})", coef.child[fig.key].base + doc.nnz_bytes * c.nnz,
                        0.0, doc.note, advice=advice))
    elif fig.key in coef.child:
        term = coef.child[fig.child or fig.key]
        if fig.child_share != 1.0:
            term = replace(term, nnz=term.nnz * fig.child_share)
        if fig.key in coef.beside:
            rows.append(coef.beside[fig.key].row("partition", BESIDE, c, 0.0, note))
        row = term.row("partition", f"child {m} ({fig.libraries or fig.key})", c, 0.0, note or fig.note)
        rows.append(replace(row, advice=advice))
    return _named(m, rows)


def _named(m: str, rows: list[Row]) -> list[Row]:
    """The partition rows of model ``m``, each naming it first in its note (three "partition" rows otherwise)."""
    return [replace(r, note=f"model {m}" + (f"; {r.note}" if r.note else "")) for r in rows]


def _flags(c: Counts, models: tuple[str, ...], figures: dict[str, tuple[Figures, str]]) -> list[str]:
    out = []
    sym = c.graph_entries
    graph_models = [m for m in models if get(m).needs]  # a model that needs nothing of the graph partitions none
    if graph_models and sym >= INT32_LIMIT:
        docs = [fig.documented for m, (fig, base) in figures.items() if m in graph_models and base == m]
        notes = dict.fromkeys(d.graph_note for d in docs if d is not None and d.graph_note)
        out.append(f"the partitioners' graph has up to {sym:,} adjacency entries, beyond 2^31: KaMinPar reads its ParHIP "
                   "file with 64-bit edge ids (the Python binding's default build)" + "".join(f"; {n}" for n in notes))
    if c.nnz >= INT32_LIMIT or c.n >= INT32_LIMIT:
        out.append(f"Â has {c.nnz:,} nonzeros and {c.n:,} vertices: beyond 2^31, the build's matrix indices are int64 "
                   "(8 bytes a nonzero instead of 4)" + ("; the store's column ids too" if c.n >= INT32_LIMIT else ""))
    return out


def _fmt_row(stage: str, process: str, mem: str, disk: str, seconds: str) -> str:
    return f"{stage:10s} {process:44s} {mem:>11s} {disk:>11s} {seconds:>9s}"


def format_plan(plan: Plan, limit: int, limit_from: str, free: int, where: str, remote: bool = False) -> str:
    """The table ``--plan`` prints: a row per stage and process, then the totals and the limits, and last the
    :func:`verdict` (``remote``: an external Dask cluster, whose memory is not this machine's)."""
    c = plan.counts
    kind = "directed" if c.directed else "undirected"
    lines = [f"plan       {c.n:,} vertices, {c.nnz:,} nonzeros of Â ({kind}), {c.features} features, {c.classes} "
             f"classes ({c.how})", _fmt_row("stage", "process", "peak memory", "disk", "time")]
    for r in plan.rows:
        # the temporary area during the partition, and the store at the end
        disk = "" if r.process != BUILD else (gib(plan.partition_disk) if plan.partition_disk else "") \
            if r.stage == "partition" else gib(plan.store) if r.stage == "write" else ""
        seconds = f"{r.seconds:,.0f} s" if r.process == BUILD else ""
        lines.append(_fmt_row(r.stage, r.process, gib(r.memory), disk, seconds) + (f"  ({r.note})" if r.note else ""))
    total, stage, held = plan.at_once()
    lines += ["", f"at once    {gib(total)} in stage {stage} ({' + '.join(f'{r.process} {gib(r.memory)}' for r in held)}); "
                  f"limit {gib(limit)} ({limit_from})",
              f"disk       the store {gib(plan.store)}, the temporary area {gib(plan.scratch)} more at its peak: "
              f"{gib(plan.disk)}; {gib(free)} free on {where}",
              f"time       about {plan.seconds:,.0f} s on this machine (measured rates; other jobs on it slow it)"]
    lines += [f"note       {f}" for f in plan.flags]
    if c.estimated:
        lines.append("note       the counts are an estimate: a build does not stop on this plan (the readers check the "
                     "memory limit as they read)")
    if remote:
        lines.append("note       an external Dask cluster: its workers' memory is not this machine's; only the disk is "
                     "checked before a build")
    return "\n".join([*lines, verdict(plan, limit, limit_from, free, where, remote)[0]])


def verdict(plan: Plan, limit: int, limit_from: str, free: int, where: str, remote: bool = False) -> tuple[str, bool]:
    """The plan's last line, and whether the build fits: the memory held at once against the limit (not with
    ``remote``: another cluster's workers), and the disk of the store and its temporary area against the free
    disk where it is written."""
    total = plan.at_once()[0]
    memory_fits, disk_fits = remote or total <= limit, plan.disk <= free
    memory = "memory not checked (an external Dask cluster's workers)" if remote else \
        f"memory {gib(total)} at once {'within' if memory_fits else 'over'} the limit of {gib(limit)} ({limit_from})"
    disk = f"disk {gib(plan.disk)} {'within' if disk_fits else 'over'} the {gib(free)} free on {where}"
    fits = memory_fits and disk_fits
    estimate = " (by estimated counts)" if plan.counts.estimated else ""
    return f"verdict    {'fits' if fits else 'does not fit'}{estimate}: {memory}; {disk}", fits


def refusal(plan: Plan, limit: int, free: int, where: str, limit_given: bool, *, features: str = "") -> str | None:
    """The one line that stops a build whose plan does not fit, or None
    (``features``: the ``--features`` asked for, named when they are most of the largest process)."""
    total, stage, held = plan.at_once()
    override = f"or {option('--no-plan-check')} to build anyway"
    if total > limit:
        biggest = max(held, key=lambda r: r.memory)
        what = f"the memory limit {option('--memory-limit')} is {gib(limit)}" if limit_given else \
            f"this machine has {gib(limit)}"
        parts = " + ".join(f"{r.process} {gib(r.memory)}" for r in held)
        advice = _advice(biggest, plan.counts, features)
        more = f"raise {option('--memory-limit')}" if limit_given else "use a machine with more memory"
        more = "" if "more memory" in advice and not limit_given else f"{more}, "  # the advice says it already
        return (f"{plan.counts.name}: the plan needs {gib(total)} at once in stage {stage} ({parts}) but {what}, the "
                f"graph will not fit: {advice}, {more}{override}")
    if plan.disk > free:
        return (f"the build needs {gib(plan.disk)} of disk (the store {gib(plan.store)}, the temporary area "
                f"{gib(plan.scratch)}) but {gib(free)} are free on {where}: choose another {option('--out')}, use "
                f"{option('--feature-dtype', 'float16')} or free space, {override}")
    return None


def _advice(row: Row, c: Counts, features: str) -> str:
    """What makes the largest process smaller."""
    if features and row.features > row.memory / 2:
        return (f"{option('--features', features)} ({c.n:,} vertices x {c.features:,} features) is most of it: "
                "choose fewer features")
    if row.advice:
        return row.advice
    if row.stage == "partition":
        return "partition with fewer models at once (one --model per build)"
    return "build a smaller graph (fewer vertices or features)"


def plan_json(plan: Plan, limit: int, limit_from: str, free: int, where: str, remote: bool = False) -> str:
    """``--plan --json``: :func:`format_plan`'s rows, totals and verdict as one JSON object (bytes, seconds)."""
    total, stage, _ = plan.at_once()
    line, fits = verdict(plan, limit, limit_from, free, where, remote)
    rows = [{k: getattr(r, k) for k in ("stage", "process", "memory", "seconds", "note")} for r in plan.rows]
    return json.dumps({"counts": asdict(plan.counts), "rows": rows, "at_once": int(total), "stage": stage,
                       "limit": int(limit), "limit_from": limit_from, "store": int(plan.store), "disk": int(plan.disk),
                       "free": int(free), "where": where, "seconds": round(plan.seconds, 3), "notes": plan.flags,
                       "fits": fits, "verdict": line.removeprefix("verdict").strip()})


WORKER_PROCESS = 56 * 2**20  # a --processes worker's interpreter (SBM, --workers 8: 945 MiB measured, 494 planned)


def with_workers(plan: Plan, processes: int) -> Plan:
    """``plan`` with ``processes`` worker processes' interpreters (``--processes``) in the build's process's rows."""
    extra, note = processes * WORKER_PROCESS, f"with {processes} worker processes, {gib(processes * WORKER_PROCESS)}"
    return replace(plan, rows=[replace(r, memory=r.memory + extra, note=f"{r.note}; {note}" if r.note else note)
                               if r.process in (BUILD, BESIDE) and processes else r for r in plan.rows])


def plan_step(cfg, show: bool, remote: bool = False, as_json: bool = False, processes: int = 0) -> tuple[str, bool]:
    """``pipeline build``'s plan: the table ending in its verdict (``show``: ``--plan``; a :class:`UserError`,
    one line, after it when the build does not fit: :class:`PlanDoesNotFit`), or, before a build, its check - a
    :class:`UserError` (one line) when the plan exceeds the memory limit or the free disk. ``remote``: an external
    cluster, whose memory this machine cannot see (the memory is then shown, not checked). Returns the table
    (empty unless ``show``) and whether the memory was checked from exact counts (not a file size's estimate,
    not an external cluster's)."""
    from .config import free_disk
    from .nodes import check_features_file, parse_generated
    from .sources.counts import input_counts
    from .sources.precheck import check_parts, check_source, input_files

    # the build's own checks of its input first, each its one line: a plan is made only of what would build
    check_source(cfg.source, cfg.fmt, cfg.data_dir, input_files(cfg), cfg.split_scheme, local=not remote)
    width = cfg.features if cfg.features.endswith(".npy") else parse_generated(cfg.features, "features")
    counts = input_counts(cfg.source, cfg.fmt, cfg.data_dir, cfg.directed, width, parse_generated(cfg.labels, "labels"))
    check_parts(cfg, counts)
    if cfg.features.endswith(".npy") and not remote:  # the build's own checks of the file: truncated, its rows
        check_features_file(cfg.features, counts)
    plan = with_workers(make_plan(counts, cfg.models, dict(cfg.options), 2 if cfg.feature_dtype == "float16" else 4),
                        processes)
    free, where = free_disk(cfg.out)
    message = refusal(plan, cfg.limit if not remote else 2**62, free, where, cfg.memory_limit is not None,
                      features=cfg.features if cfg.features != "auto" else "")
    if show:
        text = (plan_json if as_json else format_plan)(plan, cfg.limit, "--memory-limit" if cfg.memory_limit else
                                                       "this machine's memory", free, where, remote)
        if message is not None:
            raise PlanDoesNotFit(message + (" (the counts are estimated: a build is not stopped by them)"
                                            if counts.estimated else ""), text)
        return text, False
    if counts.estimated:  # a guess from a file's size must not stop a build: the readers count as they read
        return "", False
    if message is not None:
        raise UserError(message)
    return "", not remote


class PlanDoesNotFit(UserError):
    """``--plan`` of a build that does not fit: the one line, and the ``table`` (ending in its verdict) that
    the command prints before it."""

    def __init__(self, message: str, table: str):
        super().__init__(message)
        self.table = table
