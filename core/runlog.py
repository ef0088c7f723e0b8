"""The run log: JSON lines written by the trainer (rank 0), read by the
report, the tests and the benchmarks. The record types below are the
interface; their field names are the JSON keys.

A log is one :class:`Header` line, then, per epoch, the :class:`Step`
records of that epoch (mini-batch mode) followed by its :class:`Epoch`
record. Lists with one entry per rank are indexed by rank.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar

from .archs import arch_spec
from .costs import WIRE_DTYPES, Job
from .errors import UserError


@dataclass
class Header:
    """What was run: the store, the job's shape and the options."""

    store: str
    dataset: str
    parts: int
    exchange: str
    mode: str  # "full" or "minibatch"
    model: str  # the store's layout model
    dims: list[int]
    w_first: list[bool]
    config: dict[str, Any]
    train_count: int
    start_epoch: int = 0
    versions: dict[str, str] = field(default_factory=dict)
    sampler: str | None = None  # mini-batch mode
    batch_size: int | None = None  # mini-batch mode
    metric: str = "accuracy"  # what train_acc, val_acc, test_acc hold: accuracy, or micro-F1 (multi-label stores)
    arch: str = "gcn"  # gcn, sage, gin, gat (shgcn.core.archs.ARCHS)
    heads: list[int] | None = None  # attention heads per layer (gat)
    exchange_dtype: str = "float32"  # the rows' type on the wire (float32, bfloat16, float16)
    algorithm: str = "1d"  # 1d, 1.5d, 2d (shgcn.core.algorithms); parts holds the ranks
    replication: int = 1  # 1.5d: ranks per block row (c)
    grid: list[int] | None = None  # [block rows, ranks per row]
    combine: str | None = None  # 1.5d: reduce or gather
    memory: list[int] | None = None  # per rank, the modelled bytes it holds (shgcn.core.memory.rank_bytes)
    ranks_per_node: int | None = None  # the job's nodes: consecutive ranks sharing one (intra / inter bytes)
    nodes: list[int] | None = None  # the node of every rank
    input_density: float = 1.0  # the fraction of the features that are nonzero (the first layer's work)
    threads: int | None = None  # threads in each rank (--threads); None: a log from before the option (BLAS only)
    threading_layer: str | None = None  # numba's (omp, tbb, workqueue) when its parallel kernels ran
    type: ClassVar[str] = "header"

    def job(self) -> Job:
        """The run's job, as the epoch model takes it (:class:`shgcn.core.costs.Job`)."""
        # no combine recorded (one rank per block row): the architecture's own (a product's partial sums reduce;
        # attention gathers)
        combine = self.combine or ("reduce" if arch_spec(self.arch).by_product else "gather")
        return Job(tuple(self.dims), arch=self.arch, heads=tuple(self.heads) if self.heads else None,
                   exchange=self.exchange, itemsize=WIRE_DTYPES.get(self.exchange_dtype, 4),
                   algorithm=self.algorithm, replication=self.replication, combine=combine,
                   ranks_per_node=self.ranks_per_node or _blocks(self.nodes), input_density=self.input_density)

    @property
    def mode_label(self) -> str:
        """``full-batch``, or ``mini-batch, node sampler, B=40`` (from the
        config when an older log lacks the sampler fields)."""
        if self.mode != "minibatch":
            return "full-batch"
        sampler = self.sampler or self.config.get("sampler")
        size = self.batch_size or self.config.get("batch_size") or None
        text = "mini-batch" + (f", {sampler} sampler" if sampler else "")
        return text + (f", B={size:,}" if isinstance(size, int) else "")

    @property
    def label(self) -> str:
        """A short name for plots: P, exchange, layout model, mode (and the
        sampler and batch size of a mini-batch run)."""
        return f"P={self.parts} {self.exchange} {self.model}, {self.mode_label}"


def _blocks(nodes: list[int] | None) -> int:
    """Ranks per node when ``nodes`` (the node of every rank) are blocks of consecutive ranks (1 otherwise)."""
    if not nodes:
        return 1
    k = nodes.count(nodes[0])
    return k if all(n == r // k for r, n in enumerate(nodes)) else 1


@dataclass
class Epoch:
    """One epoch. Per-rank lists cover the training steps (forward and
    backward); ``eval_bytes_sent`` the evaluation forward pass."""

    epoch: int
    loss: float
    train_acc: float
    epoch_time: float = 0.0
    comm_time: list[float] = field(default_factory=list)
    compute_time: list[float] = field(default_factory=list)
    bytes_sent: list[int] = field(default_factory=list)
    msgs_sent: list[int] = field(default_factory=list)
    bytes_recv: list[int] = field(default_factory=list)
    eval_bytes_sent: list[int] = field(default_factory=list)
    exchange_bytes: list[list[int]] | None = None  # full batch: per rank, bytes of each exchange of the step
    bytes_split: list[dict[str, int]] | None = None  # 1.5d, 2d: per rank, bytes_sent by kind (rows, inrow, matrix)
    path_bytes: list[dict[str, int]] | None = None  # 1d: per rank, bytes_sent within its node and to other nodes
    path_msgs: list[dict[str, int]] | None = None  # 1d: per rank, msgs_sent within its node and to other nodes
    exchange_paths: list[list[dict[str, int]]] | None = None  # 1d full batch: per rank, each exchange's path_bytes
    node_inter_bytes: list[int] | None = None  # 1d: per node, the bytes its ranks sent to other nodes
    kernel_time: list[dict[str, float]] | None = None  # full batch: per rank, s per backend kernel in the training step
    peak_memory: list[int] | None = None  # per rank, its peak resident bytes so far (measured; the header's memory: modelled)
    anon_memory: list[int] | None = None  # mini-batch: per rank, the largest RssAnon (anonymous bytes) at a step's end
    val_acc: float | None = None  # evaluation epochs only
    test_acc: float | None = None
    steps: int | None = None  # mini-batch mode
    step_bytes_mean: list[float] | None = None
    type: ClassVar[str] = "epoch"


@dataclass
class Step:
    """One mini-batch step; ``batch`` is the number to re-draw it from."""

    epoch: int
    step: int
    batch: int
    vertices: int
    train_vertices: int
    loss: float
    bytes_sent: list[int] = field(default_factory=list)
    msgs_sent: list[int] = field(default_factory=list)
    wait_time: list[float] = field(default_factory=list)  # s each rank waited on communication in the step
    exchange_bytes: list[list[int]] = field(default_factory=list)  # per rank, bytes of each exchange of the step
    path_bytes: list[dict[str, int]] | None = None  # per rank, bytes sent within its node and to other nodes
    path_msgs: list[dict[str, int]] | None = None
    phase_time: list[dict[str, float]] | None = None  # per rank, s per phase of the step (trainer/phases.py)
    kernel_time: list[dict[str, float]] | None = None  # per rank, s per backend kernel in the step (numpy backend)
    type: ClassVar[str] = "step"


Record = Header | Epoch | Step
_TYPES: dict[str, type] = {"header": Header, "epoch": Epoch, "step": Step}


def to_json(rec: Record) -> str:
    """One line of JSON; None fields are left out."""
    return json.dumps({"type": rec.type, **{k: v for k, v in asdict(rec).items() if v is not None}})


def from_dict(d: dict[str, Any]) -> Record:
    cls = _TYPES.get(d.get("type", ""))
    if cls is None:
        raise ValueError(f"unknown record type {d.get('type')!r}")
    names = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in d.items() if k in names})


@dataclass
class RunLog:
    """A parsed run log."""

    path: str
    header: Header
    epochs: list[Epoch]
    steps: list[Step]


def read_run_log(path: str | Path) -> RunLog:
    """Parse a run log; :class:`UserError` (one line) for anything that is not one."""
    p = Path(path)
    if p.exists() and not p.is_file() and not p.is_dir():  # a FIFO or a device: reading it blocks or never ends
        raise UserError(f"{p}: not a regular file (a FIFO, a device): write the run log to a file first")
    try:
        lines = p.read_text().splitlines()
    except FileNotFoundError:
        raise UserError(f"{p}: run log not found") from None
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"{p}: cannot read the run log ({e})") from None
    recs: list[Record] = []
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            recs.append(from_dict(json.loads(line)))
        except (ValueError, TypeError) as e:
            raise UserError(f"{p}:{i}: not a run-log record ({e})") from None
    if not recs or not isinstance(recs[0], Header):
        raise UserError(f"{p}: not a run log (its first line is not a header record)")
    return RunLog(str(p), recs[0], [r for r in recs if isinstance(r, Epoch)], [r for r in recs if isinstance(r, Step)])


class RunLogWriter:
    """Appends records to a run log, one flushed line each.

    ``RunLogWriter(path, header)`` starts a new log. ``resume_from=E`` keeps
    the existing log's header and its records of epochs before E (what a
    checkpoint at epoch E-1 covers) and appends from there; the old tail is
    dropped, so a resumed run's log reads like an uninterrupted one.
    """

    def __init__(self, path: str | Path, header: Header, resume_from: int | None = None):
        self.path = Path(path)
        kept: list[str] = []
        if resume_from is not None and self.path.exists():
            old = read_run_log(self.path)
            kept = [to_json(old.header)] + _in_log_order(old, resume_from)
        tmp = self.path.with_name(f".{self.path.name}.tmp-{os.getpid()}")
        try:
            with open(tmp, "w") as f:
                f.write("\n".join(kept or [to_json(header)]) + "\n")
            os.replace(tmp, self.path)
        except OSError as e:  # a full disk, a read-only directory: nothing half-written stays behind
            tmp.unlink(missing_ok=True)
            raise UserError(f"{self.path}: cannot write the run log ({e.strerror or e})") from None
        self._f = open(self.path, "ab", buffering=0)  # one record, one write: nothing waits in a buffer
        self._size = self.path.stat().st_size  # the end of the last whole record

    def write(self, rec: Record) -> None:
        data = (to_json(rec) + "\n").encode()
        try:
            while data:
                data = data[self._f.write(data):]
        except OSError as e:  # a full disk mid-run: the user's problem, one line; the whole records so far stay
            with contextlib.suppress(OSError):
                os.truncate(self.path, self._size)  # not half a record
            self._f.close()
            raise UserError(f"{self.path}: cannot write the run log ({e.strerror or e})") from None
        self._size = self._f.tell()

    def close(self) -> None:
        self._f.close()

    def __enter__(self) -> RunLogWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _in_log_order(log: RunLog, before: int) -> list[str]:
    """Steps and epochs of epochs < ``before``, each epoch's steps first."""
    out = []
    for e in log.epochs:
        if e.epoch >= before:
            continue
        out += [to_json(s) for s in log.steps if s.epoch == e.epoch]
        out.append(to_json(e))
    return out
