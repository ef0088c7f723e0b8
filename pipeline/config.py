"""The build's configuration: one typed object, no globals.

Same configuration (and inputs) -> the same store, byte for byte (only the
timing attributes differ). Model options live in ``options`` by their
``dest`` (``hp_preset``, ``sampler``...): the models declare them
(:mod:`.models`), so this module names no model.
"""

from __future__ import annotations

import math
import os
import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from shgcn.core.memory import MAX_BYTES  # the largest --memory-limit

from .errors import UserError, option, quoted
from .nodes import NodeSpec, check_generated
from .sources.base import HEADERS
from .sources.parsing import DEFAULT_CHUNK_BYTES, MAX_LINE_BYTES

BLOCK_NNZ = 1 << 22  # nonzeros per row block (the unit of parallel work)

OUT_NAME_MAX = 255 - 64  # the build's siblings: ".NAME.partial-<pid>-<id>", ".NAME.lock"
OUT_PATH_MAX = 4096 - 512  # PATH_MAX, less room for the store's own files


@dataclass(frozen=True)
class BuildConfig:
    """Everything a build depends on.

    ``source`` is a dataset name, a file path, a generator spec (``rmat:...``,
    ``sbm:...``), or in memory (the Python API): a scipy.sparse matrix or a
    (2, E) edge_index array. ``partition_files`` import assignments made
    elsewhere (one part per line, or .npy) as models named by their stems.
    ``options``: the models' options by ``dest`` (missing ones take their
    defaults).
    """

    source: Any
    out: str
    parts: int
    models: tuple[str, ...] = ("hp",)
    layout_model: str | None = None
    eps: float = 0.01  # the modelled compute of the busiest rank: at most 1% above the average (rp reaches ~0.5%)
    seed: int = 0
    threads: int = 0
    fmt: str | None = None
    data_dir: str | None = None
    directed: bool | None = None
    features: str = "auto"
    labels: str = "auto"
    feature_norm: str | None = None  # None: the dataset's default
    split: tuple[float, float, float] = (0.6, 0.2, 0.2)
    split_scheme: str | None = None  # OGB: split/<scheme>/ (None: the dataset's, or the only one)
    feature_dtype: str = "float32"  # the store's features: float32, or float16 (half the bytes)
    overwrite: bool = False
    chunk_bytes: int = DEFAULT_CHUNK_BYTES
    max_line: int = MAX_LINE_BYTES
    header: str = "auto"
    block_nnz: int = BLOCK_NNZ
    balance: str = "work"  # what the partitioners balance: the modelled compute per row, nonzeros, or rows
    hidden: tuple[int, ...] = (16,)  # hidden widths of the GCN whose work is balanced (shgcn-train --hidden)
    options: Mapping[str, Any] = field(default_factory=dict)
    partition_files: tuple[str, ...] = ()
    progress: bool = False  # a progress bar per stage on the terminal
    heartbeat: float = 30.0  # seconds between "still running" log lines
    command: str = ""
    memory_limit: int | None = None  # bytes the build may use (None: this machine's memory)
    # the build's plan checked exact counts against the limit (pipeline build without --no-plan-check): the
    # readers' coarse per-edge guard (sources/budget.py, about 2x the measured build) is then not applied again
    planned: bool = False
    ranks_per_node: int = 0  # place the parts on nodes of this many ranks (0: no nodes, the partitioner's order)
    placement: str = "hypergraph"  # how (shgcn.pipeline.placement.PLACEMENTS)

    @property
    def limit(self) -> int:
        """The memory budget in bytes (``--memory-limit``, else this machine's memory)."""
        from .sources.budget import machine_memory

        return self.memory_limit or machine_memory()

    @property
    def guard_limit(self) -> int | None:
        """The limit the readers' coarse guard checks (None: the plan checked it already)."""
        return None if self.planned else self.limit

    @property
    def source_name(self) -> str:
        if isinstance(self.source, str):
            return self.source
        return getattr(self.source, "kind", type(self.source).__name__)  # an InMemory names what the caller gave

    def imported_models(self) -> tuple[str, ...]:
        return tuple(Path(p).name.split(".")[0] for p in self.partition_files)

    @property
    def all_models(self) -> tuple[str, ...]:
        return (*self.models, *self.imported_models())

    def dims(self, feature_dim: int, classes: int) -> list[int]:
        """The GCN's layer widths whose work the partitioners balance."""
        return [int(feature_dim), *map(int, self.hidden), int(classes)]

    @property
    def layout(self) -> str:
        """``--layout-model``, else the first model the build computes that is laid out first (hp), else the
        first model."""
        from .models import REGISTRY

        models = self.all_models
        first = [m for m in models if m in REGISTRY and REGISTRY[m].layout_first]
        return self.layout_model or (first or list(models))[0]

    def partition_config(self, parts: int | None = None):
        """The :class:`~.models.PartitionConfig` every model of the build gets."""
        from .models import PartitionConfig, default_options

        return PartitionConfig(parts=self.parts if parts is None else parts, eps=self.eps, seed=self.seed,
                               threads=self.threads, options={**default_options(), **self.options},
                               memory_limit=self.memory_limit)

    def resolved(self) -> BuildConfig:
        """Paths made absolute, here, before they travel to the workers."""
        if self.out.strip() in ("", ".", "..", "/") or Path(self.out).name in ("", ".", ".."):
            raise UserError(f"{quoted('--out', self.out)}: name a new directory for the store, e.g. stores/graph.zarr")
        name = len(os.fsencode(Path(self.out).name))
        if name > OUT_NAME_MAX:
            raise UserError(f"{option('--out')}: the store's name is {name} bytes long; at most {OUT_NAME_MAX} (the build writes "
                            "siblings named after it, and a file name holds at most 255 bytes)")
        full = len(os.fsencode(os.path.abspath(os.path.expanduser(self.out))))
        if full > OUT_PATH_MAX:
            raise UserError(f"{option('--out')}: the store's path is {full} bytes long; at most {OUT_PATH_MAX}")

        def absolute(p: str | None) -> str | None:
            return None if p is None else os.path.abspath(os.path.expanduser(p))

        from .sources.resolve import is_path

        source = self.source
        if isinstance(source, str) and is_path(source):
            source = absolute(source)
        return replace(self, source=source, out=absolute(self.out) or self.out, data_dir=absolute(self.data_dir),
                       features=os.path.abspath(self.features) if self.features.endswith(".npy") else self.features,
                       partition_files=tuple(absolute(p) or p for p in self.partition_files))

    def check(self) -> None:
        """Raise :class:`UserError` for values no build can use."""
        if self.parts < 1:
            raise UserError(f"{option('--parts', self.parts)}: must be at least 1")
        if not 0 <= self.seed < 2**63:  # numpy's generators take no negative seed (the build's traceback, issue 63)
            raise UserError(f"{option('--seed', self.seed)}: must be in 0..2^63-1")
        self._check_nodes()
        self._check_threads()
        if self.memory_limit is not None and self.memory_limit < 1:
            raise UserError(f"{option('--memory-limit', self.memory_limit)}: must be at least one byte")
        if self.memory_limit is not None and self.memory_limit > MAX_BYTES:
            raise UserError(f"{option('--memory-limit')}: more bytes than can be counted (at most {MAX_BYTES:,}, just "
                            "under 8192P)")
        if not (math.isfinite(self.eps) and 0 < self.eps < 100):
            raise UserError(f"{option('--eps', self.eps)}: must be a finite number above 0 (e.g. 0.01)")
        self._check_models()
        spec = NodeSpec(self.features, self.labels, self.split, self.seed, self.feature_norm or "none",
                        self.feature_dtype)
        spec.check()
        check_generated(spec, 1, self.limit)
        if self.chunk_bytes < 1024:
            raise UserError(f"{option('--chunk-bytes')} must be at least 1024")
        if self.max_line < 64:
            raise UserError(f"{option('--max-line')} must be at least 64")
        if self.header not in HEADERS:
            raise UserError(f"{quoted('--header', self.header)}: choose from {', '.join(HEADERS)}")
        from shgcn.core.work import BALANCES

        if self.balance not in BALANCES:
            raise UserError(f"{quoted('--balance', self.balance)}: choose from {', '.join(BALANCES)}")
        if not self.hidden or min(self.hidden) < 1:
            widths = option("--hidden", tuple(self.hidden), ",".join(map(str, self.hidden)))
            raise UserError(f"{widths}: positive layer widths, e.g. 16 or 128,128")

    def _check_threads(self) -> None:
        from .threads import THREADS_PER_CORE, max_threads

        if not 0 <= self.threads <= max_threads():
            raise UserError(f"{option('--threads', self.threads)}: partitioner threads, from 0 (all cores) to "
                            f"{max_threads()} ({THREADS_PER_CORE} per core of this machine's {os.cpu_count() or 1})")

    def _check_nodes(self) -> None:
        from .placement import PLACEMENTS

        if self.ranks_per_node < 0:
            raise UserError(f"{option('--ranks-per-node', self.ranks_per_node)}: must be at least 1 (or 0: no nodes)")
        if self.ranks_per_node > self.parts:  # a node of more ranks than the parts: every rank on one node
            raise UserError(f"{option('--ranks-per-node', self.ranks_per_node)}: at most {option('--parts', self.parts)} "
                            "(nodes of K ranks; all parts on one node: K = the parts)")
        if self.placement not in PLACEMENTS:
            raise UserError(f"{quoted('--placement', self.placement)}: choose from {', '.join(PLACEMENTS)}")

    def _check_models(self) -> None:
        from .models import default_options, get, model_names

        known = model_names()
        if not self.all_models:
            raise UserError(f"no model: give {option('--model')} or {option('--partition-file')}")
        for m in self.models:
            if m not in known:
                raise UserError(f"{quoted('--model', m)}: choose from {', '.join(known)} or all")
        for p, m in zip(self.partition_files, self.imported_models()):
            if m in known or not m or self.imported_models().count(m) > 1:
                raise UserError(f"{option('--partition-file', p)}: its name {m!r} must differ from the models "
                                f"({', '.join(known)}) and from the other files")
            if not Path(p).exists():  # before any work (the file is read in a task, after the partitioners)
                raise UserError(f"{option('--partition-file', p)}: file not found")
            if not Path(p).is_file():  # a FIFO would block that task, a directory is no assignment
                what = "a directory" if Path(p).is_dir() else "not a regular file (a FIFO, a device)"
                raise UserError(f"{option('--partition-file', p)}: {what}: write the assignment to a file first")
        if len(set(self.models)) != len(self.models):
            raise UserError(f"{option('--model')}: a model is listed twice")
        if self.layout not in self.all_models:
            raise UserError(f"{quoted('--layout-model', self.layout)} is not among the models {', '.join(self.all_models)}")
        unknown = sorted(set(self.options) - set(default_options()))
        if unknown:
            raise UserError(f"unknown model option {unknown[0]!r}; the models' options are "
                            f"{', '.join(sorted(default_options()))}")
        self._check_option_values()
        pcfg = self.partition_config()
        for m in self.models:
            get(m).check(pcfg)

    def _check_option_values(self) -> None:
        """Every model option a number where a number is due (NaN passes every comparison), and each model's
        options that need another model (shp's time budget: only beside the hp it is a factor of)."""
        from .models import get, options

        for o in options():
            value = self.options.get(o.dest, o.default)
            if isinstance(value, float) and not math.isfinite(value):
                raise UserError(f"{option(o.flag, value)}: must be a finite number")
        pcfg = self.partition_config()
        for m in self.models:
            get(m).check_models(self.models, pcfg)


@dataclass
class BuildResult:
    """What a build returns: the store's ``path``, its ``attrs``, the quality
    ``table`` (one row per model) and the stage ``timings`` (s)."""

    path: Path
    attrs: dict
    table: list[dict]
    timings: dict[str, float] = field(default_factory=dict)


PLAN_OUT = "shgcn-plan.zarr"  # --plan without --out: the disk measured is the current directory's


def plan_out(out: str | None, show: bool) -> str:
    """``--out``, which a build needs and a plan does not (it writes nothing: the disk is then the current
    directory's): else one line."""
    if out is None and not show:
        raise UserError("--out: required to build a store (name a new directory, e.g. stores/graph.zarr; only --plan "
                        "writes nothing)")
    return PLAN_OUT if out is None else out


def writable(out: str) -> None:
    """The nearest existing folder of ``out`` can be written (a read-only file system, no permission): one line."""
    where = Path(out).absolute().parent
    while not where.exists() and where != where.parent:
        where = where.parent
    if where.is_dir() and not os.access(where, os.W_OK | os.X_OK):
        raise UserError(f"{out}: {where} cannot be written (a read-only file system, or no permission): choose "
                        "another --out")
    if not where.is_dir():
        raise UserError(f"{out}: {where} is not a directory: choose another --out")


def free_disk(out: str) -> tuple[int, str]:
    """(free bytes, the directory measured): the filesystem of ``out``'s nearest existing ancestor."""
    import shutil

    where = Path(out).resolve().parent
    while not where.exists() and where != where.parent:
        where = where.parent
    return shutil.disk_usage(where).free, str(where)


def models_from(text: str) -> tuple[str, ...]:
    """``--model``'s list: names of the registry, or ``all``."""
    from .models import DEFAULT_ALL, model_names

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


def config_from_args(args) -> BuildConfig:
    """The build's configuration from ``pipeline build``'s parsed arguments."""
    """The BuildConfig of ``pipeline build``'s arguments."""
    from .models import options

    return BuildConfig(
        source=args.source, out=args.out, parts=args.parts,
        models=models_from(args.model) if args.model else (), layout_model=args.layout_model, eps=args.eps,
        seed=args.seed, threads=args.threads, fmt=args.fmt, data_dir=args.data_dir,
        directed=args.directed, features=args.features, labels=args.labels, feature_norm=args.feature_norm,
        split=args.split, split_scheme=args.split_scheme, feature_dtype=args.feature_dtype,
        overwrite=args.overwrite, chunk_bytes=args.chunk_bytes, max_line=args.max_line,
        header=args.header, block_nnz=args.block_nnz, partition_files=tuple(args.partition_file),
        balance=args.balance, hidden=tuple(args.hidden), ranks_per_node=args.ranks_per_node, placement=args.placement,
        options={o.dest: getattr(args, o.dest) for o in options()},
        command="pipeline " + shlex.join(sys.argv[1:]), memory_limit=args.memory_limit,
        progress=not (args.quiet or args.json) and sys.stderr.isatty(), heartbeat=args.heartbeat)
