"""The trainer's options, checked before any work."""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from shgcn.core.algorithms import ALGORITHMS
from shgcn.core.archs import ARCHS, ArchSpec
from shgcn.core.costs import WIRE_DTYPES, Job
from shgcn.core.errors import UserError
from shgcn.core.exchanges import EXCHANGES
from shgcn.core.memory import MAX_BYTES  # the largest --memory-limit
from shgcn.core.sample import SAMPLERS

from .backends import SPECS as BACKENDS
from .backends import check_device
from .threads import THREADS_PER_CORE
from .wire import DTYPES

MODES = ("full", "minibatch")
# the options only mini-batch training reads (--out-of-core is refused on its own, with its reason)
MINIBATCH_ONLY = ("sampler", "batch_size", "walk_length", "batches_per_epoch", "saint", "norm_batches", "plan_ahead")

PLAN_AHEAD = ("auto", "inline", "thread")


def default_memory_limit() -> int:
    """``--memory-limit``'s default: the memory this machine can give when the run starts (``MemAvailable``, and
    a cgroup's limit less what the cgroup holds), at most its memory. The whole memory would let a model that
    fits on paper but not beside the other programs allocate for a minute before it fails, instead of being
    refused before any allocation."""
    from shgcn.core.memory import machine_memory

    free = total = machine_memory()
    try:
        with open("/proc/meminfo") as f:
            free = next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable:"))
    except (OSError, StopIteration, ValueError, IndexError):
        pass
    try:
        with open("/sys/fs/cgroup/memory.max") as f, open("/sys/fs/cgroup/memory.current") as g:
            top, used = f.read().strip(), g.read().strip()
        if top.isdigit() and used.isdigit():
            free = min(free, int(top) - int(used))
    except OSError:
        pass
    return max(1, min(total, free))



class TrainError(UserError):
    """A problem with the run's input or options; exit code 2."""


NORM_BATCHES_MAX = 10_000  # GraphSAINT's pre-sampled batches (--norm-batches): its counts settle within hundreds

@dataclass(frozen=True)
class TrainConfig:
    """Everything a run depends on (``store`` and the options of ``train.py``)."""

    store: str
    epochs: int = 200
    lr: float = 0.01
    weight_decay: float = 5e-4
    hidden: tuple[int, ...] = (16,)
    dropout: float = 0.5
    exchange: str = "p2p"
    seed: int = 0
    log: str | None = None
    checkpoint: str | None = None
    checkpoint_every: int = 50
    resume: bool = False
    eval_every: int = 1
    verify: bool = True
    debug_every: int = 0
    fail_at: tuple[int, int] | None = None  # (rank, epoch): fault injection for tests
    quiet: bool = False
    mode: str = "full"
    sampler: str = "node"
    batch_size: int | None = None  # mini-batch: vertices per batch; None ("auto" on the command line): 10% of n
    walk_length: int = 2
    batches_per_epoch: int = 0
    saint: str = "auto"
    norm_batches: int = 50
    out_of_core: bool = False  # mini-batch: read each batch's rows from the memory-mapped store (trainer.outofcore)
    overwrite: bool = False  # replace an existing run log and checkpoint (only ones the trainer wrote)
    timeout: float = 1800.0  # seconds without progress on any rank before the job ends (0: no watchdog)
    arch: str = "gcn"
    exchange_dtype: str = "float32"
    plan_ahead: str = "auto"  # mini-batch: the next batch's plan "inline" (in the allreduce's wait) or in a "thread";
    # auto: a thread when the rank has threads (``threads`` > 1), inline otherwise
    algorithm: str = "1d"  # 1d | 1.5d | 2d (shgcn.core.algorithms)
    memory_limit: int | None = None  # bytes the ranks of one machine may hold (None: this machine's memory)
    ranks_per_node: int = 0  # nodes of consecutive ranks (virtual nodes); 0: MPI_Comm_split_type(SHARED)
    backend: str = "numpy"  # the compute backend (shgcn.trainer.backends.BACKENDS)
    device: str = "cpu"  # where it computes (shgcn.trainer.backends.DEVICES): cpu, or cuda (torch)
    threads: int = 1  # threads in each rank (BLAS, numba's kernels, torch); the command line's default: the cores' share
    # the machine rank 0 runs on, as the command line found it (recorded in the run log's config: the report notes
    # ranks that shared its cores): its cores, and the ranks the launcher started there (1 without one)
    cores: int | None = None
    local_ranks: int | None = None
    # the parts' own options by ``dest`` (GAT's heads, 1.5D's replication, the torch backend's kernels: what each
    # part's spec declares, shgcn.core.options.Option); absent ones take their defaults
    options: Mapping[str, Any] = field(default_factory=dict)
    # the mini-batch options the command line was given (None: those away from their defaults count as given)
    given: tuple[str, ...] | None = None

    def check(self) -> None:
        """Raise :class:`TrainError` for options no run can use."""
        for name in ("lr", "weight_decay", "dropout"):
            value = getattr(self, name)
            if not math.isfinite(value):
                raise TrainError(f"--{name.replace('_', '-')} {value}: must be a finite number")
        self._check_model()
        self._check_algorithm()
        if self.epochs < 0:
            raise TrainError(f"--epochs {self.epochs}: must be >= 0")
        if not 0 <= self.dropout < 1:
            raise TrainError(f"--dropout {self.dropout}: must be in [0, 1)")
        if self.lr <= 0:
            raise TrainError(f"--lr {self.lr}: must be > 0")
        if self.weight_decay < 0:
            raise TrainError(f"--weight-decay {self.weight_decay}: must be >= 0")
        if not 0 <= self.seed < 2**63:  # numpy's generators take no negative seed
            raise TrainError(f"--seed {self.seed}: must be in 0..2^63-1")
        if not self.hidden or any(h < 1 for h in self.hidden):
            raise TrainError(f"--hidden {','.join(map(str, self.hidden))}: widths must be >= 1")
        self._check_threads()
        if self.ranks_per_node < 0:
            raise TrainError(f"--ranks-per-node {self.ranks_per_node}: must be >= 1 (0: the machine's nodes)")
        if self.eval_every < 1 or self.checkpoint_every < 1:
            raise TrainError("--eval-every and --checkpoint-every must be >= 1")
        if not math.isfinite(self.timeout) or self.timeout < 0:
            raise TrainError(f"--timeout {self.timeout}: seconds, >= 0 (0: no watchdog)")
        if self.resume and not self.checkpoint:
            raise TrainError("--resume needs --checkpoint DIR")
        if self.mode not in MODES:
            raise TrainError(f"--mode {self.mode!r}: choose full or minibatch")
        if self.mode == "minibatch":
            if self.sampler not in SAMPLERS:
                raise TrainError(f"--sampler {self.sampler!r}: choose {', '.join(SAMPLERS.names())}")
            self._check_batch_size()
            if self.walk_length < 1:
                raise TrainError("--walk-length must be >= 1")
            if self.plan_ahead not in PLAN_AHEAD:
                raise TrainError(f"--plan-ahead {self.plan_ahead!r}: choose {', '.join(PLAN_AHEAD)}")
            if self.saint not in ("auto", "on", "off") or self.batches_per_epoch < 0 or self.norm_batches < 1:
                raise TrainError("--saint is auto, on or off; --batches-per-epoch >= 0; --norm-batches >= 1")
            if self.norm_batches > NORM_BATCHES_MAX:  # 10^9 pre-sampled batches ran without end
                raise TrainError(f"--norm-batches {self.norm_batches}: at most {NORM_BATCHES_MAX:,}")
        if self.out_of_core and self.mode != "minibatch":
            raise TrainError("--out-of-core: mini-batch training only (--mode minibatch); full batch holds the block")
        self._check_ignored()

    def _check_ignored(self) -> None:
        """A mini-batch option in full-batch mode, or --walk-length with a sampler that does not walk: refused,
        not silently ignored (an option the command line gave, even at its default; else one away from it)."""
        defaults = {f.name: f.default for f in fields(self)}
        given = [f for f in MINIBATCH_ONLY if (f in self.given if self.given is not None else getattr(self, f) != defaults[f])]
        if self.mode != "minibatch":
            if given:
                raise TrainError(f"{', '.join('--' + f.replace('_', '-') for f in given)}: mini-batch options "
                                 f"(--mode minibatch); full-batch training uses none")
        elif "walk_length" in given and not SAMPLERS[self.sampler].walks:
            raise TrainError(f"--walk-length {self.walk_length}: an option of the samplers that walk "
                             f"({', '.join(n for n, s in SAMPLERS.items() if s.walks)}), not of --sampler {self.sampler}")

    def _check_model(self) -> None:
        parts = ((ARCHS, self.arch), (EXCHANGES, self.exchange), (ALGORITHMS, self.algorithm), (BACKENDS, self.backend))
        known = {o.dest for reg, _ in parts for o in reg.all_options()}
        unknown = sorted(set(self.options) - known)
        if unknown:
            raise TrainError(f"unknown option{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}: no part declares "
                             f"{'them' if len(unknown) > 1 else 'it'}")
        for reg, name in parts:  # every part's own options checked by its declaration; another part's refused
            try:
                reg.check_options(name, self.options)
            except UserError as e:
                raise TrainError(str(e)) from None
        if self.exchange_dtype not in DTYPES:
            raise TrainError(f"--exchange-dtype {self.exchange_dtype!r}: choose from {', '.join(DTYPES)}")
        if self.memory_limit is not None and self.memory_limit < 1:
            raise TrainError(f"--memory-limit {self.memory_limit}: must be at least one byte")
        if self.memory_limit is not None and self.memory_limit > MAX_BYTES:
            raise TrainError(f"--memory-limit: more bytes than can be counted (at most {MAX_BYTES:,}, just under 8192P)")
        try:  # the device the backend runs on; whether a GPU is there is asked when the backend is made
            check_device(self.backend, self.device)
        except UserError as e:
            raise TrainError(str(e)) from None

    def _check_threads(self) -> None:
        if self.threads < 1:
            raise TrainError(f"--threads {self.threads}: must be >= 1 (default: the cores of the machine / its ranks)")
        cores = self.cores or os.cpu_count() or 1
        ranks = max(self.local_ranks or 1, 1)  # the job's ranks on this machine share its cores
        if self.threads * ranks > THREADS_PER_CORE * cores:
            each = f" with {ranks} ranks on this machine" if ranks > 1 else ""
            raise TrainError(f"--threads {self.threads}: at most {max(THREADS_PER_CORE * cores // ranks, 1)}{each} "
                             f"({THREADS_PER_CORE} per core of this machine's {cores}; more threads only compete for "
                             f"the cores)")

    def _check_algorithm(self) -> None:
        own = ALGORITHMS.get_spec(self.algorithm).own_exchange
        if own and self.exchange != TrainConfig.exchange:  # the default, which such an algorithm does not use either
            raise TrainError(f"--exchange {self.exchange}: --algorithm {self.algorithm} communicates by its own "
                             f"{own} broadcasts, not by an --exchange: leave --exchange out")
        try:
            ALGORITHMS.get_spec(self.algorithm).check(self.job(1, 1), self.mode == "minibatch")
        except UserError as e:
            raise TrainError(str(e)) from None

    def check_ranks(self, ranks: int) -> None:
        """Raise :class:`TrainError` for options that do not fit a job of ``ranks`` ranks."""
        if self.ranks_per_node > ranks:  # np.arange(P) // 10**20 overflows on every rank
            raise TrainError(f"--ranks-per-node {self.ranks_per_node}: at most the job's {ranks} rank"
                             f"{'s' if ranks != 1 else ''} (every rank on one node)")

    @property
    def replication(self) -> int:
        """Ranks per block row (the job's ``replication``: 1 unless the algorithm declares ``--replication``)."""
        return ALGORITHMS.get_spec(self.algorithm).replication(self.options)

    @property
    def spec(self) -> ArchSpec:
        """The architecture's spec (:data:`shgcn.core.archs.ARCHS`)."""
        return ARCHS.get_spec(self.arch)

    def job(self, feature_dim: int, classes: int, ranks_per_node: int | None = None) -> Job:
        """The run's job (what its costs depend on) on a store of ``feature_dim`` features and ``classes``
        classes (layer widths [features, *hidden, classes])."""
        spec = self.spec
        layers = len(self.hidden) + 1
        job = Job((feature_dim, *self.hidden, classes),
                  arch=self.arch, heads=tuple(spec.layer_heads(layers, self.options)),
                  exchange=self.exchange, itemsize=WIRE_DTYPES[self.exchange_dtype], algorithm=self.algorithm,
                  replication=self.replication, ranks_per_node=ranks_per_node or self.ranks_per_node or 1)
        return job.with_(combine=ALGORITHMS.get_spec(self.algorithm).combine_for(job, self.options))

    @property
    def combine(self) -> str:
        """How a 1.5D process row combines its work (``reduce`` or ``gather``)."""
        return self.job(1, 1).combine

    @property
    def use_saint(self) -> bool:
        """GraphSAINT normalization: on by default for the samplers that declare it (edge and rw)."""
        return self.saint == "on" or (self.saint == "auto" and SAMPLERS[self.sampler].saint)

    @property
    def plan_thread(self) -> bool:
        """Whether the next mini-batch's plan is sampled and built on a helper thread while the step computes
        (``--plan-ahead``; auto: when the rank has threads of its own, ``threads`` > 1)."""
        return self.plan_ahead == "thread" or (self.plan_ahead == "auto" and self.threads > 1)

    def _check_batch_size(self) -> None:
        size = self.batch_size
        if size is not None and (isinstance(size, bool) or not isinstance(size, numbers.Integral) or size < 1):
            raise TrainError(f"--batch-size {size!r}: vertices per batch, a whole number >= 1 (or auto, the "
                             "default: 10% of the vertices)")

    def batch_size_for(self, n: int) -> int:
        """The mini-batch size on a graph of ``n`` vertices (auto, None: the pipeline's default, 10% of n)."""
        return int(self.batch_size) if self.batch_size is not None else max(1, n // 10)

    def training_options(self) -> dict:
        """The options a checkpoint must agree with to be resumed (the architecture's own among them); an auto
        batch size is 0 there, as in the checkpoints written before auto was named."""
        return {"arch": self.arch, "mode": self.mode, "lr": self.lr, "weight_decay": self.weight_decay,
                "dropout": self.dropout, "hidden": list(self.hidden), "exchange": self.exchange, "seed": self.seed,
                "exchange_dtype": self.exchange_dtype,
                **self.spec.own(self.options),
                **({"sampler": self.sampler, "batch_size": self.batch_size or 0, "walk_length": self.walk_length,
                    "batches_per_epoch": self.batches_per_epoch, "saint": self.saint,
                    "norm_batches": self.norm_batches} if self.mode == "minibatch" else {})}
