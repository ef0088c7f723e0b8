"""The epoch model (:mod:`.epoch`) for ``--algorithm 1.5d`` and ``2d``: the
predicted time of one training step per rank, from the exact bytes of
:mod:`.gridcost` and the same latency-bandwidth and compute models.

Per SpMM of width w on rank (i, j):

- 1.5D column exchange: ``p2p`` overlaps the rank's chunk of the diagonal
  block: ``max(α max(m_send, m_recv) + β max(b_send, b_recv), t_own) +
  t_rest``; ``alltoallv``: ``α (k-1) + β max(...)`` then the product;
  ``bcast``: one broadcast among the k ranks of the column per block the
  column carries. Then the in-row step: the reduce-scatter and the
  allgather (or the gather), each ``α (c-1) + β max(b_send, b_recv)``.
- 2D: s stages of two broadcasts among s ranks (block (i, k) of Â along the
  row, slice j of H_k along the column), then the allgather along the row.
- The SpMM's compute counts the nonzeros the rank multiplies; the dense
  work counts every row of the block row (replicated on the row's ranks),
  then one allreduce of the weight gradients among all P ranks.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .costs import exchanges, work_terms
from .grid import GridShape, slice_bounds
from .gridcost import GridCosts
from .memory import rank_bytes
from .network import ComputeModel, Network, allreduce_time, bcast_time

ITEMSIZE = 4


def _duplex(net: Network, msgs, send, recv):
    """A step in which every rank sends and receives at once."""
    return net.alpha * msgs + net.beta * np.maximum(send, recv) * ITEMSIZE


def _column_time(g: GridCosts, w: int, fold: bool, net: Network) -> np.ndarray:
    """(k, c) seconds of the column exchange of one SpMM."""
    k, c = g.shape.rows, g.shape.cols
    if g.exchange == "bcast":
        col = np.arange(k) % c
        per_col = np.array([float(np.sum(bcast_time(g.n[col == j] * w * ITEMSIZE, k, net))) for j in range(c)])
        return np.broadcast_to(per_col[None, :], (k, c)).copy() if k > 1 else np.zeros((k, c))
    send, recv, _ = g.column(w, fold)
    ms, mr = g.column(1, fold)[2], g.column(1, not fold)[2]
    msgs = np.full((k, c), k - 1) if g.exchange == "alltoallv" else np.maximum(ms, mr)
    return np.where(send + recv > 0, _duplex(net, msgs, send, recv), 0.0)


def _inrow_time(g: GridCosts, w: int, fold: bool, net: Network) -> np.ndarray:
    c = g.shape.cols
    if c == 1:
        return np.zeros((g.shape.rows, 1))
    send, recv, _ = g.inrow(w, fold)
    steps = 2 if g.combine == "reduce" else 1
    return _duplex(net, steps * (c - 1), send, recv)


def _summa_time(g: GridCosts, w: int, transposed: bool, net: Network) -> np.ndarray:
    s = g.shape.rows
    b = g.blocks.T if transposed else g.blocks
    wj = np.diff(slice_bounds(w, s))
    mat = 4 * (g.n[:, None] + 1) + 8 * b
    out = np.zeros((s, s))
    for k in range(s):  # stage k: block (i, k) along row i, slice j of H_k along column j
        out += np.asarray(bcast_time(mat[:, k], s, net))[:, None] + \
            np.asarray(bcast_time(g.n[k] * wj * ITEMSIZE, s, net))[None, :]
    n = g.n[:, None]
    return out + _duplex(net, s - 1, n * wj[None, :] * (s - 1), n * (w - wj[None, :]))


def _spmm_nonzeros(g: GridCosts) -> tuple[np.ndarray, np.ndarray]:
    """(k, c) nonzeros each rank multiplies per column of H, and those of its own (overlapped) part."""
    k, c = g.shape.rows, g.shape.cols
    diag = np.diag(g.blocks).astype(float)
    if g.shape.algorithm == "2d":
        return np.broadcast_to(g.blocks.sum(1, keepdims=True) / c, (k, c)).astype(float), np.zeros((k, c))
    own = diag[:, None] * g.chunks / np.maximum(g.n[:, None], 1)
    off = g.blocks - np.diag(diag.astype(np.int64))
    halo = np.stack([(off * (g.a == j)).sum(1) for j in range(c)], axis=1).astype(float)
    return own + halo, own


def grid_times(cost, dims: list[int], shape: GridShape, exchange: str, net: Network, compute: ComputeModel,
               combine: str = "reduce") -> dict[str, Any]:
    """As :func:`shgcn.core.epoch.rank_times`: ``compute``, ``comm``, ``total`` (P,), ``epoch``."""
    g = GridCosts(cost, shape, exchange, combine)
    fwd, bwd = exchanges("gcn", dims, cost.directed)
    nnz, own = _spmm_nonzeros(g)
    overlap = shape.algorithm == "1.5d" and exchange == "p2p"
    spmm = np.zeros(nnz.shape)
    comm = np.zeros(nnz.shape)
    for w, fold, transposed in [(w, f, False) for w, f in fwd] + [(w, f, True) for w, f in bwd]:
        t_all = compute.spmm * nnz * w
        if shape.algorithm == "2d":
            comm += _summa_time(g, w, transposed, net)
        else:
            t_own = compute.spmm * own * w if overlap else np.zeros(nnz.shape)
            col = _column_time(g, w, fold, net)
            comm += np.maximum(col, t_own) - t_own + _inrow_time(g, w, fold, net)
        spmm += t_all
    _, flops, elem = work_terms(dims)
    rows = np.broadcast_to(g.n[:, None].astype(float), nnz.shape)
    dense = compute.dense * rows * flops + compute.elem * rows * elem + compute.const
    comm += allreduce_time(ITEMSIZE * sum(a * b for a, b in zip(dims[:-1], dims[1:])), shape.ranks, net)
    total = (spmm + dense + comm).ravel()
    return {"compute": (spmm + dense).ravel(), "comm": comm.ravel(), "total": total, "epoch": float(total.max())}


def grid_memory(cost, dims: list[int], shape: GridShape, feature_dim: int, combine: str = "reduce",
                arch: str = "gcn", exchange: str = "p2p") -> np.ndarray:
    """(P,) modelled bytes per rank (:func:`shgcn.core.memory.rank_bytes`) on the grid."""
    c = shape.cols
    n = np.repeat(cost.rows.astype(np.int64), c)
    load = np.repeat(cost.load.astype(np.int64), c)
    v = cost.volume.astype(np.int64).copy()
    np.fill_diagonal(v, 0)
    if shape.algorithm == "1d":
        return np.asarray(rank_bytes(n, load, v.sum(0), feature_dim, dims, arch))
    g = GridCosts(cost, shape, exchange, combine)
    if shape.algorithm == "2d":
        return np.asarray(rank_bytes(n, g.blocks.ravel(), 0, feature_dim, dims, arch,
                                     buffer_nnz=np.repeat(g.blocks.max(1), c)))
    halo = np.repeat(v.sum(0), c) if combine == "gather" else n + g.column(1, False)[1].ravel()
    return np.asarray(rank_bytes(n, load, halo, feature_dim, dims, arch))


def predict_grid(costs: list, dims: list[int], net: Network, compute: ComputeModel, exchanges: list[str],
                 algorithm: str, replication: int = 1, feature_dim: int = 0, combine: str = "reduce") -> list[dict]:
    """Predicted epoch of every partition in ``costs`` (all into the same k parts) run
    with ``algorithm`` (1.5d: ``replication`` c) and each exchange (2d: its own, ``summa``).

    Returns
    -------
    list of dict: ``ranks`` (P), ``parts`` (k), ``algorithm``, ``replication``, ``model``,
    ``exchange``, ``epoch``, ``compute`` and ``comm`` of the slowest rank (s), ``max_bytes``
    (the busiest rank's bytes per step), ``inrow_bytes`` and ``matrix_bytes`` (its in-row and
    Â-block shares), ``memory`` (the largest modelled rank memory), ``network``.
    """
    from .epoch import rank_times, rank_traffic
    from .grid import shape_for

    out = []
    for cost in costs:
        shape = shape_for(algorithm, cost.parts, replication)
        for ex in (["p2p"] if algorithm == "2d" else exchanges):
            t = rank_times(cost, dims, ex, net, compute, algorithm, replication, combine)
            tr = rank_traffic(cost, dims, ex, "gcn", None, ITEMSIZE, algorithm, replication, combine)
            slow = int(np.argmax(t["total"]))
            busiest = int(np.argmax(tr["bytes_sent"]))
            mem = grid_memory(cost, dims, shape, feature_dim, combine, "gcn", ex)
            out.append({"ranks": shape.ranks, "parts": cost.parts, "algorithm": algorithm,
                        "replication": replication if algorithm == "1.5d" else 1, "model": cost.model,
                        "exchange": "summa" if algorithm == "2d" else ex, "epoch": t["epoch"],
                        "compute": float(t["compute"][slow]), "comm": float(t["comm"][slow]),
                        "max_bytes": int(tr["bytes_sent"][busiest]),
                        "inrow_bytes": int(tr["inrow_bytes"][busiest]) if "inrow_bytes" in tr else 0,
                        "matrix_bytes": int(tr["matrix_bytes"][busiest]) if "matrix_bytes" in tr else 0,
                        "memory": int(mem.max()), "network": net.name})
    return out


def recommend(rows: list[dict]) -> list[dict]:
    """For every rank count in ``rows``: the row with the lowest predicted epoch."""
    best: dict[int, dict] = {}
    for r in rows:
        if r["ranks"] not in best or r["epoch"] < best[r["ranks"]]["epoch"]:
            best[r["ranks"]] = r
    return [best[p] for p in sorted(best)]
