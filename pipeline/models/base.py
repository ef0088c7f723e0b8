"""The protocol every partition model implements, and what flows through it.

A model is a small object that says what it is (``name``, ``description``),
which command-line options it adds (``options``: :class:`Option`), what it
needs from the build (``needs``: Â, the graph's pattern for samplers, the
partitions of other models it starts from), whether it runs in a child
process (native code that holds the GIL), what the build's plan counts for it
(:meth:`Model.figures`: its fitted figures, or those of the model it
``resembles``) and how to turn :class:`Inputs` into an :class:`Assignment`.
The build, the CLI, ``simulate`` and the plan never name a model: they ask
the registry (:mod:`shgcn.pipeline.models`).

This module imports nothing heavy: ``pipeline build --help`` lists every
model and its options from these descriptions alone.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from shgcn.core.options import Option

if TYPE_CHECKING:
    import numpy as np
    import scipy.sparse as sp

    from ..sources.counts import Counts

# what a model may need from the build
MATRIX = "matrix"  # Â (nonzero diagonal; row nonzeros = the default vertex weights)
GRAPH = "graph"  # the input graph's pattern (what mini-batch samplers walk on)
GRAPH_FILE = "graph_file"  # a ParHIP file of A + Aᵀ with the vertex weights, written by the workers (no Â assembled)


@dataclass(frozen=True)
class PartitionConfig:
    """What every model is given.

    Attributes
    ----------
    parts : number of parts
    eps : allowed load imbalance (max / mean - 1) of the vertex weights
    seed : seeds every random choice
    threads : partitioner threads (0: all cores)
    options : every model option by ``dest`` (JSON-able values); missing
        ones take their :class:`Option` default
    memory_limit : bytes the build may hold at once (``--memory-limit``): a
        partitioner's child process that grows past it, with the build's
        process beside it, is stopped; None: no watch (the kernel's limit)
    """

    parts: int
    eps: float = 0.03
    seed: int = 0
    threads: int = 0
    options: Mapping[str, Any] = field(default_factory=dict)
    memory_limit: int | None = None

    def option(self, opt: Option) -> Any:
        """The value of ``opt`` in this configuration."""
        return self.options.get(opt.dest, opt.default)


@dataclass
class Inputs:
    """What a model is given to partition.

    Attributes
    ----------
    n : number of vertices (rows of Â)
    a : (n, n) csr_matrix Â, or None for a model that needs only ``n``
    graph : (n, n) csr_matrix, the input graph's pattern, or None
    starts : (n,) int32 partitions of the models this one starts from, by name
    seconds : partitioning wall time of the models computed earlier in the build
    graph_file : path of a ParHIP file of A + Aᵀ with the vertex weights, or None
    weights : (n,) int64 vertex weights to balance (the build's ``--balance``:
        the epoch model's work per row by default), or None: the nonzeros of
        each row of Â
    """

    n: int
    a: sp.csr_matrix | None = None
    graph: sp.csr_matrix | None = None
    starts: dict[str, np.ndarray] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    weights: np.ndarray | None = None
    graph_file: str | None = None

    def vertex_weights(self) -> np.ndarray:
        """(n,) int64: ``weights``, else the nonzeros of each row of Â."""
        import numpy as np

        if self.weights is not None:
            return np.asarray(self.weights, np.int64)
        if self.a is None:
            return np.ones(self.n, np.int64)
        return np.diff(self.a.indptr).astype(np.int64)


@dataclass
class Assignment:
    """A model's result: ``part`` (n,) int32 in 0..P-1 and ``info``, its
    record (JSON-able; stored in the ``partitions`` attribute, or as an
    attribute of the model's name when the model's ``record`` says so)."""

    part: np.ndarray
    info: dict[str, Any] = field(default_factory=dict)


@dataclass
class PartitionResult:
    """An assignment as the build keeps it: ``model``, ``part`` (n,) int32,
    ``seconds`` (partitioning wall time), ``info`` (the model's record) and
    ``peak_rss_mib`` (the peak memory of its child process; 0 when it ran in
    the worker)."""

    model: str
    part: np.ndarray
    seconds: float
    info: dict[str, Any] = field(default_factory=dict)
    peak_rss_mib: float = 0.0


GENERAL = "gp"  # the default graph partitioner: the plan's figures for a model neither fitted nor like a fitted one


@dataclass(frozen=True)
class Documented:
    """A child's memory documented rather than fitted (METIS's bytes a
    nonzero): the plan counts it for the model's own partition only (a model
    that takes this one's figures takes the fitted ones).

    Attributes
    ----------
    libraries : what the child runs, for the plan's row
    nnz_bytes : its bytes a nonzero, over the fitted child's base
    note : where the figure comes from
    graph_note : what a partitioner's graph beyond 2^31 adjacency entries
        needs then besides KaMinPar's 64-bit edge ids ('': nothing)
    """

    libraries: str
    nnz_bytes: float
    note: str
    graph_note: str = ""


@dataclass(frozen=True)
class Figures:
    """What the build's plan (:mod:`shgcn.pipeline.plan`) takes from its fit
    (``pipeline/plan-this.json``) for a model's partition.

    Attributes
    ----------
    key : the fit's name of the figures: ``partition:<key>`` (the build's
        process), ``<stage>:<key>`` (after the partition, where fitted),
        ``child[<key>]`` and ``beside[<key>]``
    libraries : what its child process runs, for the plan's row ('': ``key``)
    child : the fit's name of the child's term when not ``key``'s
    child_share : the share of the fitted child's bytes a nonzero the child
        takes (measured apart, not fitted)
    note : why the child's figure is not the fit's ('': it is)
    documented : the child's memory documented instead of fitted (its own
        partition only), or None
    level_files : files the child writes beside the graph file, in graph
        files (gp's coarsening levels of its own: one)
    """

    key: str
    libraries: str = ""
    child: str = ""
    child_share: float = 1.0
    note: str = ""
    documented: Documented | None = None
    level_files: float = 0.0


class Partitioner(Protocol):
    """A partition model.

    Attributes
    ----------
    name : the model's name (``--model``)
    description : one line for ``--help`` and the README
    options : command-line options the model adds
    needs : what it may need from the build: :data:`MATRIX`, :data:`GRAPH`,
        :data:`GRAPH_FILE` (:meth:`needs_for` says what it needs with given options)
    starts_from : models whose partitions it uses when the build has them
        (the build computes those first)
    balance : what its balance bound limits: ``weight`` (the vertex weights,
        within ``eps``) or ``rows`` (row counts differ by at most one)
    record : ``partitions`` (its ``info`` joins the partitions table) or
        ``attribute`` (a long record: a root attribute of the model's name)
    runs_in_child : partitions in a child process for some inputs at least
        (:meth:`in_child` says when): the build's plan counts one
    resembles : the model whose fitted figures the plan takes while the fit
        has none of this model's own (when it has none of that one's either:
        :data:`GENERAL`'s)
    layout_first : the build lays the store out by this model's partition
        when it computes it and no ``--layout-model`` is given
    """

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def options(self) -> tuple[Option, ...]: ...

    @property
    def needs(self) -> frozenset[str]: ...

    @property
    def starts_from(self) -> tuple[str, ...]: ...

    @property
    def balance(self) -> str: ...

    @property
    def record(self) -> str: ...

    @property
    def runs_in_child(self) -> bool: ...

    @property
    def resembles(self) -> str: ...

    @property
    def layout_first(self) -> bool: ...

    def needs_for(self, cfg: PartitionConfig) -> frozenset[str]:
        """What it needs with the options of ``cfg`` (a subset of ``needs``)."""

    def check(self, cfg: PartitionConfig) -> None:
        """Raise :class:`~shgcn.store.UserError` for option values it cannot use."""

    def check_models(self, models: tuple[str, ...], cfg: PartitionConfig) -> None:
        """Raise :class:`~shgcn.store.UserError` for an option that needs a model the build does not compute
        (``models``: the build's)."""

    def figures(self, counts: Counts, options: Mapping[str, Any], fitted: Collection[str]) -> Figures:
        """The plan's figures of its partition of a graph of ``counts`` with the build's ``options`` (given ones,
        by ``dest``); ``fitted``: the fit's keys (``partition:<key>`` and the like, a child's as ``child:<key>``)."""

    def advice(self, counts: Counts, options: Mapping[str, Any]) -> str:
        """What makes its child smaller, for a plan that does not fit ('': none of its own)."""

    def in_child(self, inputs: Inputs, cfg: PartitionConfig) -> bool:
        """Run in a child process (native code that holds the GIL)?"""

    def run(self, inputs: Inputs, cfg: PartitionConfig) -> Assignment:
        """Partition the rows of Â into ``cfg.parts`` parts."""

    def extra_quality(self, cfg: PartitionConfig, n: int) -> Any:
        """A quality report the build adds for every model when this one is
        built (e.g. :class:`~shgcn.pipeline.metrics.batches.MinibatchReport`),
        or None."""


@dataclass(frozen=True)
class Model:
    """Defaults for the protocol's attributes and methods: a model subclasses
    it and overrides what differs."""

    name: str
    description: str
    options: tuple[Option, ...] = ()
    needs: frozenset[str] = frozenset({MATRIX})
    starts_from: tuple[str, ...] = ()
    balance: str = "weight"
    record: str = "partitions"
    runs_in_child: bool = False
    resembles: str = GENERAL
    layout_first: bool = False

    def needs_for(self, cfg: PartitionConfig) -> frozenset[str]:
        return self.needs

    def check(self, cfg: PartitionConfig) -> None:
        for opt in self.options:
            value = cfg.option(opt)
            if opt.choices is not None and value not in opt.choices:
                from ..errors import UserError, option, quoted

                said = quoted(opt.flag, value) if isinstance(value, str) else option(opt.flag, value)
                raise UserError(f"{said}: choose one of {', '.join(map(str, opt.choices))}")

    def check_models(self, models: tuple[str, ...], cfg: PartitionConfig) -> None:
        return None

    def figures(self, counts: Counts, options: Mapping[str, Any], fitted: Collection[str]) -> Figures:
        return Figures(self.name)

    def advice(self, counts: Counts, options: Mapping[str, Any]) -> str:
        return ""

    def in_child(self, inputs: Inputs, cfg: PartitionConfig) -> bool:
        return self.runs_in_child

    def run(self, inputs: Inputs, cfg: PartitionConfig) -> Assignment:
        raise NotImplementedError

    def extra_quality(self, cfg: PartitionConfig, n: int) -> Any:
        return None
