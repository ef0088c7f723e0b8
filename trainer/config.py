"""The trainer's options, checked before any work."""

from __future__ import annotations

import math
from dataclasses import dataclass

from shgcn.store.errors import UserError

from .exchange import STRATEGIES

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

    def check(self) -> None:
        """Raise :class:`TrainError` for options no run can use."""
        for name in ("lr", "weight_decay", "dropout"):
            value = getattr(self, name)
            if not math.isfinite(value):
                raise TrainError(f"--{name.replace('_', '-')} {value}: must be a finite number")
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
            if self.saint not in ("auto", "on", "off") or self.batches_per_epoch < 0 or self.norm_batches < 1:
                raise TrainError("--saint is auto, on or off; --batches-per-epoch >= 0; --norm-batches >= 1")

    @property
    def use_saint(self) -> bool:
        """GraphSAINT normalization: on by default for the edge and rw samplers."""
        return self.saint == "on" or (self.saint == "auto" and self.sampler in ("edge", "rw"))

    def batch_size_for(self, n: int) -> int:
        """The mini-batch size on a graph of ``n`` vertices (the pipeline's default: 10% of n)."""
        return self.batch_size or max(1, n // 10)

    def training_options(self) -> dict:
        """The options a checkpoint must agree with to be resumed."""
        return {"mode": self.mode, "lr": self.lr, "weight_decay": self.weight_decay, "dropout": self.dropout,
                "hidden": list(self.hidden), "exchange": self.exchange, "seed": self.seed,
                **({"sampler": self.sampler, "batch_size": self.batch_size, "walk_length": self.walk_length,
                    "batches_per_epoch": self.batches_per_epoch, "saint": self.saint,
                    "norm_batches": self.norm_batches} if self.mode == "minibatch" else {})}
