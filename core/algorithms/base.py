"""What every distributed algorithm's cost model shares: the spec interface
(:class:`AlgorithmCost`), one SpMM's bytes by kind (:class:`Call`), the
dense work of a rank and the gradient allreduce.

An algorithm says how its ranks lay out on a grid (:meth:`AlgorithmCost.shape`),
which jobs it runs (:meth:`AlgorithmCost.check`), the exact bytes and
messages of every rank per training step (:meth:`AlgorithmCost.traffic`: the
trainer's counters equal them), the modelled time of a step per rank
(:meth:`AlgorithmCost.times`) and the modelled memory of a rank
(:meth:`AlgorithmCost.memory`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..collectives import allreduce_time
from ..costs import Job, input_terms, optimizer_terms, work_terms
from ..errors import UserError
from ..machine import Machine
from ..options import Option
from ..partition import PartitionCost
from .grid import GridShape


@dataclass
class Call:
    """One SpMM's bytes per rank (P,), by kind, and messages."""

    sent: dict[str, np.ndarray]
    recv: np.ndarray
    msgs: np.ndarray

    @property
    def total(self) -> np.ndarray:
        return sum(self.sent.values(), np.zeros_like(self.recv))


def sum_calls(calls: list[Call], kinds: tuple[str, ...]) -> dict[str, np.ndarray]:
    """A step's traffic from its calls: ``bytes_sent``, ``msgs_sent``, ``bytes_recv``, ``<kind>_bytes`` and
    ``calls`` ((calls, P): the bytes of every SpMM)."""
    out = {f"{kind}_bytes": np.sum([c.sent[kind] for c in calls], axis=0).astype(np.int64) for kind in kinds}
    out["bytes_sent"] = np.sum([c.total for c in calls], axis=0).astype(np.int64)
    out["msgs_sent"] = np.sum([c.msgs for c in calls], axis=0).astype(np.int64)
    out["bytes_recv"] = np.sum([c.recv for c in calls], axis=0).astype(np.int64)
    out["calls"] = np.stack([c.total for c in calls]).astype(np.int64)
    return out


def dense_seconds(rows: np.ndarray, job: Job, machine: Machine, ranks: int) -> np.ndarray:
    """Seconds of a rank's dense and elementwise work per step for its ``rows`` (on ``ranks`` ranks:
    ranks beyond a node's cores share them): the rows' dense products and elementwise columns, sparse
    features' products at the SpMM rate, and the optimizer step over the whole model."""
    dims = list(job.dims)
    _, flops, elem = work_terms(dims, job.input_density)
    c = machine.compute
    per_row = c.dense * flops + c.elem * elem + c.spmm * input_terms(dims, job.input_density)
    once = c.elem * optimizer_terms(dims) + c.const  # every rank, whatever its rows
    return (rows * per_row + once) * machine.oversubscription(ranks)


def gradient_allreduce(dims: tuple[int, ...] | list[int], machine: Machine, ranks: int, itemsize: int = 4) -> float:
    """Seconds of the step's one allreduce of the weight gradients (a GCN's: Σ_k d_k d_{k+1} values), and the
    scheduling delay of its synchronization on an oversubscribed node."""
    nbytes = itemsize * sum(a * b for a, b in zip(dims[:-1], dims[1:]))
    return allreduce_time(nbytes, ranks, machine.flat_path(ranks)) + machine.sync_delay(ranks)


class AlgorithmCost(ABC):
    """A distributed algorithm's spec and cost model (an instance listed in :data:`shgcn.core.algorithms.ALGORITHMS`).

    Attributes
    ----------
    name, description : as ``--algorithm`` lists them
    options : its own command-line options (:class:`~shgcn.core.options.Option`; 1.5D's ``--replication``)
    kinds : what its bytes are split into in the run log (``bytes_split``); empty for 1D
    minibatch : runs mini-batch training
    wire_16bit : may send 16-bit rows
    replicates : takes ``--replication``
    own_exchange : the name of its own communication, when it uses no ``--exchange`` (SUMMA's broadcasts)
    """

    name: str = ""
    description: str = ""
    options: tuple[Option, ...] = ()
    kinds: tuple[str, ...] = ()
    minibatch: bool = False
    wire_16bit: bool = False
    replicates: bool = False
    own_exchange: str | None = None

    def replication(self, options: Mapping[str, Any]) -> int:
        """Ranks per block row in a job with its options ``options`` (``dest -> value``): 1 unless it replicates."""
        return 1

    @abstractmethod
    def shape(self, ranks: int, parts: int, replication: int = 1) -> GridShape:
        """The grid of a job of ``ranks`` ranks over a store of ``parts`` parts (a UserError when none)."""

    @abstractmethod
    def shape_for(self, parts: int, replication: int = 1) -> GridShape:
        """The grid this algorithm lays over a partition into ``parts`` parts."""

    @abstractmethod
    def plans(self, ranks: int, replications: list[int]) -> list[tuple[int, int]]:
        """(replication, parts) of every way it runs on ``ranks`` ranks (what ``simulate`` predicts)."""

    def no_grid(self, ranks: int, replications: list[int]) -> str:
        """Why it lays no grid on ``ranks`` ranks with any of ``replications`` (one clause, for ``simulate``)."""
        return f"--algorithm {self.name} does not run on {ranks} ranks"

    def no_replication(self, replication: int) -> None:
        """A :class:`UserError` for ``--replication`` > 1 on an algorithm that does not replicate blocks."""
        if replication != 1:
            raise UserError(f"--replication {replication} needs --algorithm 1.5d (--algorithm {self.name} does not "
                            "replicate blocks)")

    def check(self, job: Job, minibatch: bool) -> None:
        """Raise :class:`UserError` (one line) for a job this algorithm does not run."""
        if minibatch and not self.minibatch:
            raise UserError(f"--mode minibatch runs on --algorithm 1d only ({self.name} is full batch)")
        if job.itemsize != 4 and not self.wire_16bit:
            raise UserError(f"a 16-bit --exchange-dtype runs on --algorithm 1d only (the ranks of a {self.name} "
                            "row must hold bitwise the same sums)")
        if not self.replicates:
            self.no_replication(job.replication)

    def combine(self, job: Job, combine: str) -> str:
        """How a process row combines its work (only 1.5D has a choice)."""
        return "reduce"

    def combine_for(self, job: Job, options: Mapping[str, Any]) -> str:
        """How a process row combines its work under the run's ``options`` (its own, by ``dest``)."""
        return self.combine(job, "auto")

    @abstractmethod
    def traffic(self, cost: PartitionCost, job: Job) -> dict[str, np.ndarray]:
        """Bytes and messages each rank sends in one training step, exactly as the trainer counts them:
        (P,) int64 ``bytes_sent``, ``msgs_sent``, ``bytes_recv``, ``calls`` ((calls, P)), and its kinds."""

    @abstractmethod
    def times(self, cost: PartitionCost, job: Job, machine: Machine) -> dict[str, Any]:
        """Predicted seconds of one training step per rank: ``compute``, ``comm``, ``total`` (P,) and
        ``epoch`` (the slowest rank)."""

    @abstractmethod
    def memory(self, cost: PartitionCost, job: Job) -> np.ndarray:
        """(P,) modelled bytes each rank holds (:func:`shgcn.core.memory.rank_bytes`)."""
