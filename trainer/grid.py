"""A job's ranks on the process grid of ``--algorithm`` (:mod:`shgcn.core.grid`):
the memory check before training, and the collective part of the setup
(communicators, the 1.5D assignment of column blocks, the products).

:func:`connect` runs on every rank once every rank's local setup succeeded
(``cli._run``); everything it decides it derives from data all ranks share
(an allgather), so a refusal is the same on every rank and ends the job
with one line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from shgcn.core.grid import assign_pairs, chunk_bounds
from shgcn.core.memory import gib, machine_memory, rank_bytes

from .config import TrainError
from .exchange import STRATEGIES, Counting
from .graph import Graph
from .plan import CommPlan, local_matrix
from .rowcomm import RowReduce
from .spmm15 import GatherExchange, ReduceGraph, column_plan, fold_supports, forward_supports
from .summa import Summa, SummaGraph
from .wire import Wire

if TYPE_CHECKING:
    from .context import Context


def _block(ctx: Context):
    if ctx.block is None:
        raise RuntimeError("the rank's block is not open (setup runs first)")
    return ctx.block


def memory_estimate(ctx: Context) -> int:
    """Modelled bytes this rank holds while training (:func:`shgcn.core.memory.rank_bytes`)."""
    cfg, cp, block = ctx.cfg, ctx.cp, _block(ctx)
    n, nnz = block.n_own, int(block.plan.indices.shape[0])
    halo, buffer = cp.recv_rows, 0
    if ctx.shape.algorithm == "2d":
        sender = _column_owner(np.asarray(block.plan.indices), n, cp)
        per_block = np.bincount(sender, minlength=cp.size)
        nnz, halo, buffer = int(per_block[ctx.position[1]]), 0, int(per_block.max())
    elif ctx.shape.algorithm == "1.5d" and cfg.combine == "reduce" and ctx.column_rows is not None:
        halo = n + ctx.column_rows  # the partial sums, and the rows of my column blocks
    return int(rank_bytes(n, nnz, halo, int(ctx.s.attrs["feature_dim"]), ctx.model.dims, cfg.arch, cfg.heads,
                          cfg.out_heads, buffer))


def _column_owner(indices: np.ndarray, n: int, cp: CommPlan) -> np.ndarray:
    """The part owning each local column (own columns first, then each sender's)."""
    out = np.full(indices.size, cp.rank, np.int64)
    halo = indices >= n
    senders = np.repeat(np.arange(cp.size), np.diff(cp.recv_start))
    out[halo] = senders[indices[halo] - n]
    return out


def check_memory(ctx: Context, comm) -> list[int]:
    """Every rank's modelled memory (returned, in rank order); a :class:`TrainError`
    when the ranks of one machine need more than ``--memory-limit`` (default: its memory)."""
    from mpi4py import MPI

    limit = ctx.cfg.memory_limit or machine_memory()
    seen = comm.allgather((MPI.Get_processor_name(), ctx.memory))
    hosts: dict[str, list[int]] = {}
    for host, need in seen:
        hosts.setdefault(host, []).append(need)
    host, needs = max(hosts.items(), key=lambda h: sum(h[1]))
    if sum(needs) > limit:
        c = ctx.shape.replication
        more = f" (--replication {c} holds each block on {c} ranks)" if ctx.shape.algorithm == "1.5d" and c > 1 else ""
        raise TrainError(f"{ctx.cfg.store}: training needs about {gib(sum(needs))} on {host} for its {len(needs)} "
                         f"rank{'s' if len(needs) != 1 else ''} (up to {gib(max(needs))} a rank{more}), more than "
                         f"the memory limit of {gib(limit)} (--memory-limit; default: this machine's memory)")
    return [need for _, need in seen]


def connect(ctx: Context, comm) -> list[int]:
    """The collective setup: the memory check, then (1.5d, 2d) the grid's communicators
    and products in ``ctx.exchange`` and ``ctx.graph``. Returns every rank's modelled memory."""
    if ctx.shape.algorithm == "1d":
        return check_memory(ctx, comm)
    i, j = ctx.position
    row = comm.Split(i, j)  # the c (or s) ranks of block row i, ranked by grid column
    col = comm.Split(j, i)  # the k ranks of grid column j, ranked by block row
    if ctx.shape.algorithm == "2d":
        _connect_2d(ctx, row, col)
    else:
        sends = np.diff(np.asarray(_block(ctx).plan.send_ptr)).astype(np.int64)  # rows block i sends to each part
        volume = np.array(comm.allgather(sends), np.int64)[::ctx.shape.cols]
        _connect_15d(ctx, row, col, volume)
    ctx.memory = memory_estimate(ctx)
    return check_memory(ctx, comm)


def _connect_15d(ctx: Context, row, col, volume: np.ndarray) -> None:
    cfg, cp = ctx.cfg, ctx.cp
    i, j = ctx.position
    c = ctx.shape.cols
    oblivious = cfg.exchange == "bcast"
    a = assign_pairs(volume, c, oblivious=oblivious)
    col_cp = column_plan(cp, a, i, j)
    col_ex = STRATEGIES[cfg.exchange](col, col_cp, Wire(cfg.exchange_dtype))
    ctx.column_rows = sum(n for _, n in col_cp.recv_from)
    if oblivious:
        col_ex.roots = [q for q in range(cp.size) if q % c == j]  # type: ignore[attr-defined]
        ctx.column_rows = int(sum(cp.offsets[q + 1] - cp.offsets[q] for q in col_ex.roots if q != i))  # type: ignore[attr-defined]
    lm = local_matrix(_block(ctx).plan, cp)
    gids = ctx.col_gids(ctx.data.gids, cp.recv_ids)
    if cfg.combine == "gather":
        ctx.exchange = GatherExchange(col_ex, row, cp, a, fold_supports(cp, a, c))
        ctx.graph = Graph(lm, ctx.exchange, ctx.symmetric, gids)
        return
    n = lm.n_own
    if oblivious:  # CAGNET's: every row of the block is reduced
        fwd_sup = fold_sup = [np.arange(n, dtype=np.int64)] * c
    else:
        fwd_sup, fold_sup = forward_supports(lm, a, i, c), fold_supports(cp, a, c)
    ctx.exchange = Counting(None, cp)
    counters = ctx.exchange.counters
    bounds = chunk_bounds(n, c)
    mine = sorted(q for q in lm.halo if a[i, q] == j)
    ctx.graph = ReduceGraph(lm, ctx.exchange, ctx.symmetric, gids,
                            (col_ex, mine, bounds, RowReduce(row, bounds, fwd_sup, counters),
                             RowReduce(row, bounds, fold_sup, counters), counters))


def _connect_2d(ctx: Context, row, col) -> None:
    from .plan import comm_plan

    cp, block = ctx.cp, _block(ctx)
    i, j = ctx.position
    ctx.exchange = Counting(None, cp)
    summa = Summa(row, col, i, j, np.diff(cp.offsets), ctx.exchange.counters)
    lm = local_matrix(block.plan, cp)
    cp_t = comm_plan(block.transpose, i, cp.offsets) if block.transpose is not None else None
    lm_t = local_matrix(block.transpose, cp_t) if block.transpose is not None and cp_t is not None else None
    ctx.graph = SummaGraph(lm, lm_t, cp, cp_t, ctx.exchange, summa, ctx.col_gids(ctx.data.gids, cp.recv_ids))


