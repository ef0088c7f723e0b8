"""What a training job's architecture, layer widths and wire type imply for
the bytes that travel, and for the work a row gives its rank.

:class:`Job` is what the trainer runs, as far as the costs go: the layer
widths, the architecture (:data:`shgcn.core.archs.ARCHS`), the exchange, the
wire type, the distributed algorithm and how ranks share nodes. The epoch
model (:mod:`.epoch`), the memory model (:mod:`.memory`), the report and the
tests take one; the trainer builds one from its options
(``TrainConfig.job``), so a prediction and a run describe the same job.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .archs import ArchSpec, Call, arch_spec

WIRE_DTYPES = {"float32": 4, "bfloat16": 2, "float16": 2}  # bytes per value on the wire
SPARSE_INPUT = 0.1  # the trainer keeps features as CSR at this density or less (trainer/archs/base.as_input)
ADAM_PASSES = 14  # elementwise passes of one Adam step over a weight (trainer/backends/numpy.adam_step)


@dataclass(frozen=True)
class Job:
    """A training job's shape.

    Attributes
    ----------
    dims : layer widths [features, *hidden, classes]
    arch : ``--arch`` (:data:`shgcn.core.archs.ARCHS`)
    heads : attention heads per layer (None: the architecture's default of one per layer)
    exchange : ``--exchange`` (:data:`shgcn.core.exchanges.EXCHANGES`)
    itemsize : bytes per value on the wire (2 for a 16-bit ``--exchange-dtype``)
    algorithm, replication, combine : ``--algorithm`` (:data:`shgcn.core.algorithms.ALGORITHMS`), its c, and
        how a 1.5D row combines (``reduce`` or ``gather``)
    ranks_per_node : consecutive ranks that share a node (0: every rank on a node of its own)
    input_density : the fraction of the features that are nonzero (the first layer's work; 1: dense)
    threads : threads in each rank (``shgcn-train --threads``; the compute terms run over them)
    """

    dims: tuple[int, ...]
    arch: str = "gcn"
    heads: tuple[int, ...] | None = None
    exchange: str = "p2p"
    itemsize: int = 4
    algorithm: str = "1d"
    replication: int = 1
    combine: str = "reduce"
    ranks_per_node: int = 0
    input_density: float = 1.0
    threads: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "dims", tuple(int(d) for d in self.dims))
        if self.heads is not None:
            object.__setattr__(self, "heads", tuple(int(h) for h in self.heads))
        arch_spec(self.arch)  # an unknown architecture is a UserError here, not later

    @property
    def spec(self) -> ArchSpec:
        """The architecture's spec."""
        return arch_spec(self.arch)

    @property
    def layer_heads(self) -> list[int]:
        return list(self.heads) if self.heads is not None else [1] * (len(self.dims) - 1)

    def calls(self, directed: bool) -> list[tuple[int, bool, bool]]:
        """Every exchange of one training step in the trainer's order (forward layers, then backward from
        the last layer): (row width, fold, with the transposed operator)."""
        fwd, bwd = self.spec.exchanges(list(self.dims), directed, self.layer_heads)
        return [(w, f, False) for w, f in fwd] + [(w, f, True) for w, f in reversed(bwd)]

    def with_(self, **changes) -> Job:
        """A copy with ``changes``."""
        return replace(self, **changes)


def split_calls(calls: list[Call]) -> tuple[int, int, int, int]:
    """(summed width of the expands, their count, summed width of the folds, their count)."""
    ex = [w for w, fold in calls if not fold]
    fo = [w for w, fold in calls if fold]
    return sum(ex), len(ex), sum(fo), len(fo)


def call_bytes(send_rows, recv_rows, job: Job, directed: bool) -> np.ndarray:
    """(calls, P) bytes each rank sends in each exchange of one training step (forward layers, then
    backward), in the trainer's order: an expand sends ``send_rows`` rows of its width, a fold sends back
    the ``recv_rows`` it received (a sparsity-aware 1D exchange)."""
    send, recv = np.asarray(send_rows, np.int64), np.asarray(recv_rows, np.int64)
    return np.stack([job.itemsize * w * (recv if fold else send) for w, fold, _ in job.calls(directed)])


def step_bytes(send_rows, recv_rows, job: Job, directed: bool):
    """Bytes a rank sends in one training step (forward and backward) given the rows it sends and
    receives per SpMM (a sparsity-aware 1D exchange)."""
    return call_bytes(send_rows, recv_rows, job, directed).sum(0)


def spmm_widths(dims: list[int], w_first: list[bool]) -> tuple[list[int], list[int]]:
    """Row widths of the SpMMs of one GCN (GraphSAGE, GIN) training step:
    forward (one per layer), then backward (one per layer, except the first
    layer's when it multiplies by W after the SpMM: the features need no
    gradient)."""
    fwd = [dims[k + 1] if wf else dims[k] for k, wf in enumerate(w_first)]
    bwd = [dims[k + 1] if wf else dims[k] for k, wf in enumerate(w_first) if wf or k > 0]
    return fwd, bwd


def sparse_input(input_density: float) -> bool:
    """Whether the trainer keeps features of this density as CSR (:data:`SPARSE_INPUT`)."""
    return input_density <= SPARSE_INPUT


def work_terms(dims: list[int], input_density: float = 1.0) -> tuple[float, float, float]:
    """What one row of a rank costs in one GCN training step, by kind:
    (SpMM columns per nonzero, forward and backward; dense multiply-adds per
    row: X W forward, Gᵀ X and G Wᵀ backward, the latter not for the first
    layer; elementwise columns per row: dropout on layer inputs, activation
    and its gradient on outputs). The regressors of the epoch model
    (:mod:`shgcn.core.epoch`). ``input_density``: the fraction of nonzero
    features; when the trainer keeps them sparse (CSR at 10% or less) the
    first layer's products are sparse ones (:func:`input_terms`, not counted
    here) and its input's dropout touches only the nonzeros."""
    fwd, bwd = spmm_widths(dims, [dims[k + 1] < dims[k] for k in range(len(dims) - 1)])
    sparse = sparse_input(input_density)
    flops = sum(a * b * (3 if k else 0 if sparse else 2) for k, (a, b) in enumerate(zip(dims[:-1], dims[1:])))
    elem = dims[0] * (input_density if sparse else 1) + sum(dims[1:-1]) + 2 * sum(dims[1:])
    return sum(fwd) + sum(bwd), flops, elem


def input_terms(dims: list[int], input_density: float = 1.0) -> float:
    """Nonzeros x columns per row of the first layer's sparse products (X W forward, Xᵀ G backward) when the
    features are kept sparse, else 0: a sparse product costs what an SpMM does per nonzero and column."""
    return 2.0 * input_density * dims[0] * dims[1] if sparse_input(input_density) else 0.0


def optimizer_terms(dims: list[int]) -> float:
    """Elementwise operations of one optimizer step on every rank: :data:`ADAM_PASSES` over each weight
    (every rank updates the whole model, whatever its rows)."""
    return float(ADAM_PASSES * sum(a * b for a, b in zip(dims[:-1], dims[1:])))
