"""The machine the epoch model (:mod:`.epoch`) predicts for: the network
(a latency-bandwidth model and its presets), the compute model fitted on
this machine, and the collectives' times."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .errors import UserError


@dataclass(frozen=True)
class Network:
    """Latency-bandwidth model: a message of m bytes takes ``alpha + beta m`` seconds.

    Attributes: name; alpha (s); beta (s/byte); source (where the numbers come from).
    """

    name: str
    alpha: float
    beta: float
    source: str = ""


NETWORKS: dict[str, Network] = {
    "infiniband": Network(
        "infiniband", 1.5e-6, 1 / 12e9,
        "a typical EDR InfiniBand cluster: 100 Gb/s links (12.5 GB/s line rate, ~12 GB/s MPI bandwidth) and "
        "1-2 µs MPI one-way latency, as osu_latency / osu_bw usually report; not measured here"),
    "shm": Network(
        "shm", 9.69e-6, 0.2110e-9,
        "this machine (2 cores, MPICH shared memory), fitted by `mpirun -n 2 python benchmarks/pingpong.py` "
        "(benchmarks/RESULTS.md, 2026-11-23; the cores were shared with other jobs)"),
}


@dataclass(frozen=True)
class ComputeModel:
    """Seconds of compute per rank and training step, linear in the work.

    Attributes
    ----------
    spmm : float
        s per (nonzero of Â · column of the SpMM).
    dense : float
        s per (row · multiply-add of the dense products).
    elem : float
        s per (row · column) of elementwise work (activations, dropout, loss).
    const : float
        s per step (Adam, small reductions).
    source : str
    """

    spmm: float
    dense: float
    elem: float
    const: float
    source: str = ""


# Fitted by benchmarks/simulate_bench.py on this machine, 2026-11-25, after the trainer's fused dropout and loss
# kernels (benchmarks/RESULTS.md, "Epoch model: fit and validation"): every fit point within 17%, P = 1 and 2
# predicted within 16% of the fastest measured epoch.
THIS_MACHINE = ComputeModel(spmm=3.145e-10, dense=3.605e-11, elem=7.684e-10, const=0.0,
                            source="benchmarks/simulate_bench.py on the 2-core development machine, 2026-11-25")


def _log2(p: int) -> int:
    return math.ceil(math.log2(p)) if p > 1 else 0


def bcast_time(nbytes: np.ndarray | float, parts: int, net: Network) -> np.ndarray | float:
    """One broadcast (or reduce) of ``nbytes`` among ``parts`` ranks: scatter + allgather."""
    if parts == 1:
        return 0.0 * np.asarray(nbytes)
    return net.alpha * (_log2(parts) + parts - 1) + 2 * net.beta * np.asarray(nbytes, float) * (parts - 1) / parts


def allreduce_time(nbytes: float, parts: int, net: Network) -> float:
    """Allreduce of ``nbytes`` (recursive halving/doubling: reduce-scatter + allgather)."""
    if parts == 1:
        return 0.0
    return 2 * net.alpha * _log2(parts) + 2 * net.beta * nbytes * (parts - 1) / parts


def network_of(network: str | Network) -> Network:
    """A :class:`Network` from a preset name (or itself)."""
    if isinstance(network, Network):
        return network
    if network not in NETWORKS:
        raise UserError(f"unknown network preset {network!r}; choose one of {', '.join(NETWORKS)}")
    return NETWORKS[network]
