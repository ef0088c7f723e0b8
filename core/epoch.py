"""A calibrated model of one full-batch training epoch on P ranks (the
trainer's; ``pipeline simulate`` and the report show it, and the
partitioners' work weights come from it).

What a partition is worth at 64-512 ranks on nodes of 48 or 128 cores
cannot be measured on a 2-core machine; this module predicts it from the
partition's exact communication and load (:class:`PartitionCost`), the job
(:class:`shgcn.core.costs.Job`: architecture, widths, exchange, algorithm,
nodes) and the machine (:class:`shgcn.core.machine.Machine`: nodes, the
intra- and inter-node paths, the link a node's ranks share, the compute
model fitted on a CPU):

- compute per rank from its nonzeros and rows (the fitted coefficients;
  ranks x threads beyond a node's cores share them);
- communication per rank from its exact messages (the exchange's cost
  module lists them: :mod:`shgcn.core.exchanges`), each on its path, the
  bytes of a node's inter-node messages bounded by its link;
- the algorithm (:mod:`shgcn.core.algorithms`) composes them per SpMM (p2p
  and the node exchange overlap the own-column product with the messages)
  and adds the dense work and the gradient allreduce;
- the epoch = the slowest rank (they meet at the gradient allreduce).

The model's bytes per rank are exact (:func:`rank_traffic`: they equal the
trainer's counters, tested); its times are a model, checked against measured
epochs on this machine and against the paper's Table 2 (benchmarks/RESULTS.md).

Use: ``predict(open_store("x.zarr").partition_costs(), Job(dims), "paper")``
(:meth:`shgcn.store.Store.partition_costs`; :func:`shgcn.core.tables.format_epochs` prints the rows).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from .algorithms import ALGORITHMS
from .costs import Job, optimizer_terms, work_terms
from .exchanges import EXCHANGES, baseline_exchange
from .machine import ComputeModel, Machine, machine_of
from .partition import PartitionCost, dims_of, own_nonzeros
from .tables import BASELINE

__all__ = ["BREAKDOWN", "ComputeModel", "Job", "Machine", "PartitionCost", "compute_features", "dims_of",
           "fit_compute", "machine_of", "own_nonzeros", "predict", "predict_algorithm", "rank_breakdown", "rank_times",
           "rank_traffic", "recommend"]


def rank_traffic(cost: PartitionCost, job: Job) -> dict[str, np.ndarray]:
    """Bytes and messages each rank sends in one training step (forward and backward), exactly as the
    trainer counts them: (P,) int64 ``bytes_sent``, ``msgs_sent``, ``bytes_recv``, ``calls`` ((calls, P): the
    bytes of every exchange); for 1D by kind ``intra_bytes``, ``inter_bytes``, ``intra_msgs``, ``inter_msgs``
    (on the job's nodes); for 1.5D and 2D ``rows_bytes``, ``inrow_bytes``, ``matrix_bytes``."""
    EXCHANGES.get_spec(job.exchange)
    return ALGORITHMS.get_spec(job.algorithm).traffic(cost, job)


def rank_times(cost: PartitionCost, job: Job, machine: str | Machine) -> dict[str, Any]:
    """Predicted seconds of one training step per rank: ``compute``, ``comm`` (not hidden behind compute,
    allreduce included), ``total`` (P,), and ``epoch`` (the slowest rank)."""
    EXCHANGES.get_spec(job.exchange)
    return ALGORITHMS.get_spec(job.algorithm).times(cost, job, machine_of(machine).with_threads(job.threads))


BREAKDOWN = ("compute", "latency", "intra", "injection", "ejection", "link_send", "link_recv", "exchanges", "comm",
             "total")  # rank_breakdown's terms, in the order simulate --breakdown prints them


def rank_breakdown(cost: PartitionCost, job: Job, machine: str | Machine) -> dict[str, np.ndarray]:
    """Every term of every rank's predicted step (:data:`BREAKDOWN`, (P,) seconds each): ``compute`` (SpMM and
    dense work); over all the step's exchanges and their stages, the rank's ``latency`` and each of its bandwidth
    terms as if it were the only one (``intra``; ``injection``, ``ejection``: its inter-node bytes out and in at
    its own rate; ``link_send``, ``link_recv``: the same through its node's link at the share the machine's
    contention model gives it: :mod:`.contention`), ``exchanges`` (each stage's latency plus its largest
    bandwidth term, summed: what the rank waits on its own messages); ``comm``: what the model charges the rank
    for communication after the overlap with its own-column product, its node's slowest rank in a staged
    exchange and the gradient allreduce; ``total`` (compute + comm). An exchange that is not a list of messages
    (bcast: a broadcast per block) has its time in ``comm`` only."""
    from .contention import recording

    with recording() as rec:
        t = rank_times(cost, job, machine)
    terms = rec.summed(cost.parts)
    out = {"compute": t["compute"], **{k: terms[k] for k in ("latency", "intra", "injection", "ejection",
                                                                  "link_send", "link_recv")},
           "exchanges": terms["total"], "comm": t["comm"], "total": t["total"]}
    return {k: np.asarray(out[k], float) for k in BREAKDOWN}


def _imbalance(x) -> float:
    """max / mean - 1."""
    mean = float(np.mean(x))
    return float(np.max(x) / mean - 1) if mean > 0 else 0.0


def compute_features(cost: PartitionCost, dims: list[int]) -> np.ndarray:
    """(P, 4) work of each rank in one training step, the regressors of
    :class:`ComputeModel` in its order: nonzeros x SpMM columns (forward and
    backward), rows x dense multiply-adds (X W forward; G^T X and G W^T
    backward, the latter not for the first layer), rows x elementwise columns
    and the optimizer's elementwise operations, and 1 (dense features)."""
    nnz_cols, flops, elem = work_terms(dims)
    rows = cost.rows.astype(float)
    return np.stack([cost.load * float(nnz_cols), rows * flops, rows * elem + optimizer_terms(dims),
                     np.ones_like(rows)], axis=1)


def fit_compute(features: np.ndarray, seconds: np.ndarray, source: str = "") -> ComputeModel:
    """Non-negative least squares of measured compute ``seconds`` (k,) on
    ``features`` (k, 4) (:func:`compute_features` rows), relative errors."""
    from scipy.optimize import nnls

    scale = features.max(0)
    scale[scale == 0] = 1
    coef, _ = nnls(features / scale / seconds[:, None], np.ones_like(seconds))
    c = coef / scale
    return ComputeModel(spmm=float(c[0]), dense=float(c[1]), elem=float(c[2]), const=float(c[3]), source=source)


def predict(costs: list[PartitionCost], job: Job, machine: str | Machine = "infiniband",
            exchanges: Iterable[str] | None = None) -> list[dict]:
    """Predicted epoch of every partition (all with the same P) with each exchange (default: the job's).

    Returns
    -------
    list of dict, one per (model, exchange): ``model``, ``parts``, ``exchange``, ``ranks_per_node``,
    ``epoch`` (s), ``compute`` and ``comm`` of the slowest rank (s), ``max_bytes`` (bytes the busiest rank
    sends per step), ``max_inter_bytes`` (of a rank, on the job's nodes), ``node_inter_bytes`` (the most a
    node sends across the network per step), ``vs_rp`` (the rp partition's epoch with the same exchange /
    this one; NaN without rp), ``vs_bcast`` (this model's bcast epoch / this one), ``machine``, and the
    imbalance (max / mean - 1) of the rows, the nonzeros and the modelled compute of the ranks
    (``rows_imbalance``, ``nnz_imbalance``, ``compute_imbalance``).
    """
    m = machine_of(machine)
    exchanges = list(exchanges) if exchanges is not None else [job.exchange]
    out, epoch = [], {}
    base = baseline_exchange()
    for c in costs:
        for ex in dict.fromkeys([*exchanges, base]):
            epoch[c.model, ex] = rank_times(c, job.with_(exchange=ex), m)
    for c in costs:
        for ex in exchanges:
            j = job.with_(exchange=ex)
            t = epoch[c.model, ex]
            slow = int(np.argmax(t["total"]))
            rp = epoch.get((BASELINE, ex))
            tr = rank_traffic(c, j)
            out.append({"model": c.model, "parts": c.parts, "exchange": ex, "ranks_per_node": j.ranks_per_node,
                        "threads": j.threads,
                        "epoch": t["epoch"], "compute": float(t["compute"][slow]), "comm": float(t["comm"][slow]),
                        "rows_imbalance": _imbalance(c.rows), "nnz_imbalance": _imbalance(c.load),
                        "compute_imbalance": _imbalance(t["compute"]), "max_bytes": int(tr["bytes_sent"].max()),
                        **_node_bytes(tr, j, c.parts),
                        "vs_rp": rp["epoch"] / t["epoch"] if rp is not None else float("nan"),
                        "vs_bcast": epoch[c.model, base]["epoch"] / t["epoch"], "machine": m.name})
    return out


def _node_bytes(tr: dict[str, np.ndarray], job: Job, parts: int) -> dict[str, int]:
    """The busiest rank's and node's inter-node bytes per step (1D; 0 elsewhere)."""
    if "inter_bytes" not in tr:
        return {"max_inter_bytes": 0, "node_inter_bytes": 0}
    k = max(1, job.ranks_per_node or 1)
    node = np.arange(parts) // k
    per_node = np.bincount(node, weights=tr["inter_bytes"]).astype(np.int64)
    return {"max_inter_bytes": int(tr["inter_bytes"].max()), "node_inter_bytes": int(per_node.max())}


def predict_algorithm(costs: list[PartitionCost], job: Job, machine: str | Machine = "infiniband",
                      exchanges: Iterable[str] | None = None) -> list[dict]:
    """Predicted epoch of every partition in ``costs`` (all into the same k parts) run with the job's
    algorithm (1.5D: its replication c) and each exchange (default: the job's).

    Returns
    -------
    list of dict: ``ranks`` (P), ``parts`` (k), ``algorithm``, ``replication``, ``model``, ``exchange``,
    ``epoch``, ``compute`` and ``comm`` of the slowest rank (s), ``max_bytes`` (the busiest rank's bytes per
    step), ``inrow_bytes`` and ``matrix_bytes`` (its in-row and Â-block shares), ``memory`` (the largest
    modelled rank memory), ``machine``.
    """
    m = machine_of(machine)
    alg = ALGORITHMS.get_spec(job.algorithm)
    out = []
    for cost in costs:
        shape = alg.shape_for(cost.parts, job.replication)
        for ex in ([alg.own_exchange] if alg.own_exchange else list(exchanges) if exchanges is not None
                   else [job.exchange]):
            j = job.with_(exchange=ex)
            t = alg.times(cost, j, m.with_threads(j.threads))
            tr = alg.traffic(cost, j)
            slow = int(np.argmax(t["total"]))
            busiest = int(np.argmax(tr["bytes_sent"]))
            out.append({"ranks": shape.ranks, "parts": cost.parts, "algorithm": alg.name,
                        "replication": job.replication, "model": cost.model, "exchange": ex,
                        "epoch": t["epoch"], "compute": float(t["compute"][slow]), "comm": float(t["comm"][slow]),
                        "max_bytes": int(tr["bytes_sent"][busiest]),
                        "inrow_bytes": int(tr["inrow_bytes"][busiest]) if "inrow_bytes" in tr else 0,
                        "matrix_bytes": int(tr["matrix_bytes"][busiest]) if "matrix_bytes" in tr else 0,
                        "memory": int(alg.memory(cost, j).max()), "machine": m.name})
    return out


def recommend(rows: list[dict]) -> list[dict]:
    """For every rank count in ``rows``: the row with the lowest predicted epoch."""
    best: dict[int, dict] = {}
    for r in rows:
        if r["ranks"] not in best or r["epoch"] < best[r["ranks"]]["epoch"]:
            best[r["ranks"]] = r
    return [best[p] for p in sorted(best)]
