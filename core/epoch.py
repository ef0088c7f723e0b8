"""A calibrated model of one full-batch training epoch on P ranks (the
trainer's; ``pipeline simulate`` and the report show it, and the
partitioners' work weights come from it).

What a partition is worth at 64-512 ranks cannot be measured on a 2-core
machine; this module predicts it from the partition's exact communication
(the volume matrix: rows of H each part sends to each other part per SpMM)
and load (nonzeros of Â per part), with

- compute per rank from its nonzeros and rows, with coefficients fitted to
  the trainer's measured compute time on this machine
  (:class:`ComputeModel`, fitted by ``benchmarks/training/simulate_bench.py``);
- communication per rank from its exact bytes and messages through a
  latency-bandwidth (α-β) model of the exchange (:class:`Network`,
  presets in :data:`NETWORKS`);
- the epoch = the slowest rank (they meet at the gradient allreduce).

One training step (what the trainer's ``epoch_time`` measures) has, per
layer k, one forward SpMM and (except the first layer when it multiplies by
W after the SpMM) one backward SpMM, of the row widths that
:func:`shgcn.core.costs.spmm_widths` gives; then one allreduce of the weight
gradients. Per SpMM of width d on rank r (own-column nonzeros ``own_r``,
the rest ``halo_r``; send and receive rows and messages from the volume
matrix, bytes = rows · d · 4):

- ``p2p`` (the paper's; the trainer overlaps the own-column product with the
  messages): ``max(c_spmm own_r d, α max(m_send, m_recv) + β max(b_send,
  b_recv)) + c_spmm halo_r d`` (full duplex: a rank sends and receives at
  once);
- ``alltoallv`` (no overlap; MPICH's pairwise exchange takes P-1 steps):
  ``c_spmm nnz_r d + α (P-1) + β max(b_send, b_recv)``;
- ``bcast`` (CAGNET's sparsity-oblivious 1D: every rank broadcasts its whole
  block, n_q rows, in turn; scatter + allgather broadcast):
  ``c_spmm nnz_r d + Σ_q [α (⌈log2 P⌉ + P - 1) + 2 β n_q d 4 (P-1)/P]``.

For a directed Â the backward SpMM folds partial sums back to their owners:
the same rows, reversed (a rank sends what it received). The allreduce of
the gradients (m = 4 Σ_k d_k d_{k+1} bytes) costs ``2 α ⌈log2 P⌉ + 2 β m
(P-1)/P``. The rest of a rank's compute (dense products, elementwise work,
Adam) is ``c_dense rows_r Σ flops-per-row + c_elem rows_r Σ widths + c_0``.

The model's bytes per rank are exact: they equal the trainer's counters
(tested). Its times are a model: on this machine it is checked against
measured epochs at P = 1 and 2 (benchmarks/RESULTS.md).

Use: ``print(format_epochs(predict(open_store("x.zarr").partition_costs(), dims)))``
(:func:`shgcn.core.tables.format_epochs`, :meth:`shgcn.store.Store.partition_costs`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from .costs import exchanges, split_calls, work_terms
from .errors import UserError
from .network import NETWORKS, THIS_MACHINE, ComputeModel, Network, allreduce_time, bcast_time, network_of
from .tables import BASELINE

__all__ = ["NETWORKS", "THIS_MACHINE", "ComputeModel", "Network", "PartitionCost", "allreduce_time", "bcast_time",
           "network_of", "own_nonzeros", "predict", "rank_times", "rank_traffic"]

EXCHANGES = ("p2p", "alltoallv", "bcast")
ITEMSIZE = 4  # float32 rows


@dataclass
class PartitionCost:
    """What the model needs of one row partition into P parts.

    Attributes
    ----------
    model : str
    volume : (P, P) int64
        Rows of H part m sends to part q per SpMM.
    load : (P,) int64
        Nonzeros of Â in each part's rows.
    rows : (P,) int64
        Rows per part.
    own : (P,) int64 or None
        Nonzeros of each part's rows in its own columns (the product that
        p2p overlaps with the messages); None: no overlap is modelled.
    directed : bool
    graph, part : Â's pattern (n, n) csr_matrix and (n,) the part of each vertex, original order; what the
        1.5D and 2D byte counts need (:mod:`.gridcost`), None where only 1D is modelled
    """

    model: str
    volume: np.ndarray
    load: np.ndarray
    rows: np.ndarray
    own: np.ndarray | None
    directed: bool
    graph: sp.csr_matrix | None = None
    part: np.ndarray | None = None

    @property
    def parts(self) -> int:
        return int(self.volume.shape[0])


def dims_of(feature_dim: int, hidden: Iterable[int], classes: int) -> list[int]:
    """Layer widths [features, *hidden, classes], as the trainer builds its GCN."""
    return [int(feature_dim), *map(int, hidden), int(classes)]


# ---------------------------------------------------------------- bytes

def rank_traffic(cost: PartitionCost, dims: list[int], exchange: str = "p2p", arch: str = "gcn",
                 heads: list[int] | None = None, itemsize: int = ITEMSIZE, algorithm: str = "1d",
                 replication: int = 1, combine: str = "reduce") -> dict[str, np.ndarray]:
    """Bytes and messages each rank sends in one training step (forward and
    backward SpMMs), exactly as the trainer's exchange counts them.

    Parameters
    ----------
    arch, heads : the model (:data:`shgcn.core.costs.ARCHS`; GAT's heads per layer)
    itemsize : bytes per value on the wire (2 for ``--exchange-dtype bfloat16`` or ``float16``)

    Returns
    -------
    dict of (P,) int64: ``bytes_sent``, ``msgs_sent``, ``bytes_recv``; with ``algorithm`` ``1.5d``
    (``replication`` c, ``combine``) or ``2d`` the grid's ranks (P = k c, or k^2), plus ``rows_bytes``,
    ``inrow_bytes``, ``matrix_bytes`` and ``calls`` (:func:`shgcn.core.gridcost.grid_traffic`).
    """
    _check_exchange(exchange)
    if algorithm != "1d":
        from .grid import shape_for
        from .gridcost import grid_traffic

        return grid_traffic(cost, dims, shape_for(algorithm, cost.parts, replication), exchange, arch, heads,
                            itemsize, combine)
    fwd, bwd = exchanges(arch, dims, cost.directed, heads)
    ex_w, ex_n, fo_w, fo_n = split_calls(fwd + bwd)
    v = cost.volume.astype(np.int64)
    p = cost.parts
    send_rows, recv_rows = v.sum(1), v.sum(0)
    send_msgs, recv_msgs = (v > 0).sum(1), (v > 0).sum(0)
    b = itemsize
    if exchange == "bcast":  # an expand: the root sends its block to P-1 ranks; a fold: Reduce onto each root
        rows = cost.rows.astype(np.int64)
        others = rows.sum() - rows
        return {"bytes_sent": b * (rows * (p - 1) * ex_w + others * fo_w),
                "msgs_sent": np.full(p, (p - 1) * (ex_n + fo_n), np.int64),
                "bytes_recv": b * (others * ex_w + rows * (p - 1) * fo_w)}
    return {"bytes_sent": b * (send_rows * ex_w + recv_rows * fo_w),
            "msgs_sent": send_msgs * ex_n + recv_msgs * fo_n,
            "bytes_recv": b * (recv_rows * ex_w + send_rows * fo_w)}


# ---------------------------------------------------------------- time

def _check_exchange(exchange: str) -> None:
    if exchange not in EXCHANGES:
        raise UserError(f"unknown exchange {exchange!r}; choose one of {', '.join(EXCHANGES)}")


def _spmm_comm(exchange: str, d: int, send_rows, recv_rows, send_msgs, recv_msgs, cost: PartitionCost,
               net: Network) -> np.ndarray:
    p = cost.parts
    if p == 1:
        return np.zeros(p)
    if exchange == "bcast":
        return np.full(p, float(np.sum(bcast_time(cost.rows * d * ITEMSIZE, p, net))))
    bytes_ = np.maximum(send_rows, recv_rows) * d * ITEMSIZE
    if exchange == "alltoallv":
        return net.alpha * (p - 1) + net.beta * bytes_
    return net.alpha * np.maximum(send_msgs, recv_msgs) + net.beta * bytes_


def rank_times(cost: PartitionCost, dims: list[int], exchange: str, net: Network, compute: ComputeModel,
               algorithm: str = "1d", replication: int = 1, combine: str = "reduce") -> dict[str, Any]:
    """Predicted seconds of one training step per rank (a grid's ranks for
    ``algorithm`` ``1.5d`` and ``2d``: :func:`shgcn.core.gridtime.grid_times`).

    Returns
    -------
    dict: ``compute`` (P,) (SpMM and dense work), ``comm`` (P,) (time not
    hidden behind compute, allreduce included), ``total`` (P,), ``epoch``
    (float: the slowest rank).
    """
    _check_exchange(exchange)
    if algorithm != "1d":
        from .grid import shape_for
        from .gridtime import grid_times

        return grid_times(cost, dims, shape_for(algorithm, cost.parts, replication), exchange, net, compute, combine)
    fwd, bwd = exchanges("gcn", dims, cost.directed)
    v = cost.volume.astype(np.int64)
    send_rows, recv_rows = v.sum(1), v.sum(0)
    send_msgs, recv_msgs = (v > 0).sum(1), (v > 0).sum(0)
    load = cost.load.astype(float)
    own = cost.own.astype(float) if cost.own is not None and exchange == "p2p" else np.zeros_like(load)
    spmm_total = np.zeros(cost.parts)
    comm_total = np.zeros(cost.parts)
    for d, flip in fwd + bwd:  # a fold sends what the expand received
        s_r, r_r = (recv_rows, send_rows) if flip else (send_rows, recv_rows)
        s_m, r_m = (recv_msgs, send_msgs) if flip else (send_msgs, recv_msgs)
        comm = _spmm_comm(exchange, d, s_r, r_r, s_m, r_m, cost, net)
        t_own = compute.spmm * own * d
        t_rest = compute.spmm * (load - own) * d
        step = np.maximum(comm, t_own) + t_rest  # own=0 without overlap: comm + whole SpMM
        spmm_total += t_own + t_rest
        comm_total += step - t_own - t_rest
    dense = compute_features(cost, dims)[:, 1:] @ np.array([compute.dense, compute.elem, compute.const])
    ar = allreduce_time(ITEMSIZE * sum(a * b for a, b in zip(dims[:-1], dims[1:])), cost.parts, net)
    comm_total += ar
    total = spmm_total + dense + comm_total
    return {"compute": spmm_total + dense, "comm": comm_total, "total": total, "epoch": float(total.max())}


def _imbalance(x) -> float:
    """max / mean - 1."""
    mean = float(np.mean(x))
    return float(np.max(x) / mean - 1) if mean > 0 else 0.0


def compute_features(cost: PartitionCost, dims: list[int]) -> np.ndarray:
    """(P, 4) work of each rank in one training step, the regressors of
    :class:`ComputeModel` in its order: nonzeros x SpMM columns (forward and
    backward), rows x dense multiply-adds (X W forward; G^T X and G W^T
    backward, the latter not for the first layer), rows x elementwise columns,
    and 1."""
    nnz_cols, flops, elem = work_terms(dims)
    rows = cost.rows.astype(float)
    return np.stack([cost.load * float(nnz_cols), rows * flops, rows * elem, np.ones_like(rows)], axis=1)


def fit_compute(features: np.ndarray, seconds: np.ndarray, source: str = "") -> ComputeModel:
    """Non-negative least squares of measured compute ``seconds`` (k,) on
    ``features`` (k, 4) (:func:`compute_features` rows), relative errors."""
    from scipy.optimize import nnls

    scale = features.max(0)
    scale[scale == 0] = 1
    coef, _ = nnls(features / scale / seconds[:, None], np.ones_like(seconds))
    c = coef / scale
    return ComputeModel(spmm=float(c[0]), dense=float(c[1]), elem=float(c[2]), const=float(c[3]), source=source)


def predict(costs: list[PartitionCost], dims: list[int], network: str | Network = "infiniband",
            compute: ComputeModel = THIS_MACHINE, exchanges: Iterable[str] = ("p2p",)) -> list[dict]:
    """Predicted epoch time of every partition (all with the same P) and exchange.

    Returns
    -------
    list of dict, one per (model, exchange): ``model``, ``parts``, ``exchange``,
    ``epoch`` (s), ``compute`` and ``comm`` of the slowest rank (s),
    ``max_bytes`` (bytes the busiest rank sends per step), ``vs_rp`` (the
    rp partition's epoch with the same exchange / this one; NaN without rp),
    ``vs_bcast`` (this model's bcast epoch / this one), ``network``, and the
    imbalance (max / mean - 1) of the rows, the nonzeros and the modelled
    compute of the ranks (``rows_imbalance``, ``nnz_imbalance``,
    ``compute_imbalance``).
    """
    net = network_of(network)
    exchanges = list(exchanges)
    out, epoch = [], {}
    for c in costs:
        for ex in dict.fromkeys([*exchanges, "bcast"]):
            t = rank_times(c, dims, ex, net, compute)
            epoch[c.model, ex] = t
    for c in costs:
        for ex in exchanges:
            t = epoch[c.model, ex]
            slow = int(np.argmax(t["total"]))
            rp = epoch.get((BASELINE, ex))
            out.append({"model": c.model, "parts": c.parts, "exchange": ex, "epoch": t["epoch"],
                        "compute": float(t["compute"][slow]), "comm": float(t["comm"][slow]),
                        "rows_imbalance": _imbalance(c.rows), "nnz_imbalance": _imbalance(c.load),
                        "compute_imbalance": _imbalance(t["compute"]),
                        "max_bytes": int(rank_traffic(c, dims, ex)["bytes_sent"].max()),
                        "vs_rp": rp["epoch"] / t["epoch"] if rp is not None else float("nan"),
                        "vs_bcast": epoch[c.model, "bcast"]["epoch"] / t["epoch"], "network": net.name})
    return out


# ---------------------------------------------------------------- inputs

def own_nonzeros(a: sp.csr_matrix, part: np.ndarray, parts: int) -> np.ndarray:
    """(P,) int64: nonzeros of each part's rows whose column the part owns."""
    rows = np.repeat(np.arange(a.shape[0]), np.diff(a.indptr))
    own = part[rows] == part[a.indices]
    return np.bincount(part[rows][own], minlength=parts).astype(np.int64)
