"""The trainer's options, checked before any work."""

from __future__ import annotations

import math
from dataclasses import dataclass

from shgcn.core.costs import ARCHS
from shgcn.core.errors import UserError
from shgcn.core.grid import ALGORITHMS, combine_for

from .exchange import STRATEGIES
from .wire import DTYPES

MODES = ("full", "minibatch")
SAMPLERS = ("node", "edge", "rw")


class TrainError(UserError):
    """A problem with the run's input or options; exit code 2."""


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
    batch_size: int = 0  # mini-batch: 0 = 10% of n
    walk_length: int = 2
    batches_per_epoch: int = 0
    saint: str = "auto"
    norm_batches: int = 50
    overwrite: bool = False  # replace an existing run log and checkpoint (only ones the trainer wrote)
    timeout: float = 1800.0  # seconds without progress on any rank before the job ends (0: no watchdog)
    arch: str = "gcn"
    heads: int = 8  # gat: attention heads of the hidden layers
    out_heads: int = 1  # gat: of the last layer (averaged)
    attn_dropout: float | None = None  # gat: None = the same as dropout
    exchange_dtype: str = "float32"
    plan_ahead: str = "inline"  # mini-batch: build the next batch's plan in the allreduce's wait, or in a "thread"
    algorithm: str = "1d"  # 1d | 1.5d | 2d (shgcn.core.grid)
    replication: int = 1  # 1.5d: ranks per block row (c)
    row_combine: str = "auto"  # 1.5d: reduce (partial sums) | gather (received rows); auto: gather for gat
    memory_limit: int | None = None  # bytes the ranks of one machine may hold (None: this machine's memory)

    def check(self) -> None:
        """Raise :class:`TrainError` for options no run can use."""
        for name in ("lr", "weight_decay", "dropout", "attention_dropout"):
            value = getattr(self, name)
            if not math.isfinite(value):
                raise TrainError(f"--{name.replace('_', '-').replace('attention', 'attn')} {value}: must be a finite number")
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
        if not self.hidden or any(h < 1 for h in self.hidden):
            raise TrainError(f"--hidden {','.join(map(str, self.hidden))}: widths must be >= 1")
        if self.exchange not in STRATEGIES:
            raise TrainError(f"--exchange {self.exchange!r}: choose from {', '.join(STRATEGIES)}")
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
                raise TrainError(f"--sampler {self.sampler!r}: choose node, edge or rw")
            if self.batch_size < 0:
                raise TrainError(f"--batch-size {self.batch_size}: must be >= 1 (0: 10% of the vertices)")
            if self.walk_length < 1:
                raise TrainError("--walk-length must be >= 1")
            if self.plan_ahead not in ("thread", "inline"):
                raise TrainError(f"--plan-ahead {self.plan_ahead!r}: choose thread or inline")
            if self.saint not in ("auto", "on", "off") or self.batches_per_epoch < 0 or self.norm_batches < 1:
                raise TrainError("--saint is auto, on or off; --batches-per-epoch >= 0; --norm-batches >= 1")

    def _check_model(self) -> None:
        if self.arch not in ARCHS:
            raise TrainError(f"--arch {self.arch!r}: choose from {', '.join(ARCHS)}")
        if self.heads < 1 or self.out_heads < 1:
            raise TrainError("--heads and --out-heads must be >= 1")
        if not 0 <= self.attention_dropout < 1:
            raise TrainError(f"--attn-dropout {self.attention_dropout}: must be in [0, 1)")
        if self.exchange_dtype not in DTYPES:
            raise TrainError(f"--exchange-dtype {self.exchange_dtype!r}: choose from {', '.join(DTYPES)}")
        if self.exchange_dtype != "float32" and self.exchange == "bcast":
            raise TrainError(f"--exchange-dtype {self.exchange_dtype} needs --exchange p2p or alltoallv "
                             "(bcast's fold is an MPI Reduce, which sums float32)")

    def _check_algorithm(self) -> None:
        if self.algorithm not in ALGORITHMS:
            raise TrainError(f"--algorithm {self.algorithm!r}: choose from {', '.join(ALGORITHMS)}")
        if self.replication < 1 or (self.replication > 1 and self.algorithm != "1.5d"):
            raise TrainError(f"--replication {self.replication}: needs --algorithm 1.5d (and must be >= 1)")
        if self.memory_limit is not None and self.memory_limit < 1:
            raise TrainError(f"--memory-limit {self.memory_limit}: must be at least one byte")
        if self.algorithm == "1d":
            return
        if self.mode != "full":
            raise TrainError(f"--mode {self.mode} runs on --algorithm 1d only (1.5d and 2d are full batch)")
        if self.exchange_dtype != "float32":
            raise TrainError(f"--exchange-dtype {self.exchange_dtype} runs on --algorithm 1d only (the ranks of a "
                             "1.5d or 2d row must hold bitwise the same sums)")
        if self.algorithm == "2d" and self.arch == "gat":
            raise TrainError("--arch gat does not run on --algorithm 2d (SUMMA multiplies by a fixed matrix; "
                             "GAT's attention is not one): use 1d or 1.5d")
        if self.algorithm == "1.5d":
            combine = combine_for(self.arch, self.row_combine)
            if combine == "gather" and self.exchange == "bcast":
                raise TrainError("--row-combine gather (GAT's) needs --exchange p2p or alltoallv under --algorithm "
                                 "1.5d (bcast is CAGNET's sparsity-oblivious 1.5D, which reduces partial sums)")

    @property
    def combine(self) -> str:
        """How a 1.5D process row combines its work (``reduce`` or ``gather``)."""
        return combine_for(self.arch, self.row_combine)

    @property
    def attention_dropout(self) -> float:
        """GAT's attention dropout (``--attn-dropout``, by default ``--dropout``)."""
        return self.dropout if self.attn_dropout is None else self.attn_dropout

    @property
    def use_saint(self) -> bool:
        """GraphSAINT normalization: on by default for the edge and rw samplers."""
        return self.saint == "on" or (self.saint == "auto" and self.sampler in ("edge", "rw"))

    def batch_size_for(self, n: int) -> int:
        """The mini-batch size on a graph of ``n`` vertices (the pipeline's default: 10% of n)."""
        return self.batch_size or max(1, n // 10)

    def training_options(self) -> dict:
        """The options a checkpoint must agree with to be resumed."""
        return {"arch": self.arch, "mode": self.mode, "lr": self.lr, "weight_decay": self.weight_decay,
                "dropout": self.dropout, "hidden": list(self.hidden), "exchange": self.exchange, "seed": self.seed,
                "exchange_dtype": self.exchange_dtype,
                **({"heads": self.heads, "out_heads": self.out_heads, "attn_dropout": self.attention_dropout}
                   if self.arch == "gat" else {}),
                **({"sampler": self.sampler, "batch_size": self.batch_size, "walk_length": self.walk_length,
                    "batches_per_epoch": self.batches_per_epoch, "saint": self.saint,
                    "norm_batches": self.norm_batches} if self.mode == "minibatch" else {})}
