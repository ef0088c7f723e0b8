"""What every algorithm's connect shares: the job's nodes (:func:`peers`),
the memory check before training (:func:`check_memory`), and the owner of
each local column.

An algorithm module (``oned``, ``onehalfd``, ``twod``) defines
``connect(local, comm) -> Context``: it runs on every rank once every
rank's local setup succeeded; everything it decides it derives from data
all ranks share, so a refusal is the same on every rank and ends the job
with one line.
"""

from __future__ import annotations

import numpy as np

from shgcn.core.memory import gib, machine_memory, model_bytes

from ..config import TrainError
from ..context import Local
from ..exchanges import Peers
from ..plan import CommPlan


def peers(local: Local, comm) -> Peers:
    """The node of every rank of ``comm`` (collective): ``--ranks-per-node k`` virtual nodes of k
    consecutive ranks, else the ranks that share memory (``MPI_Comm_split_type(SHARED)``), numbered by their
    lowest rank."""
    from mpi4py import MPI

    k = local.cfg.ranks_per_node
    if k:
        return Peers(np.arange(comm.size, dtype=np.int64) // k)
    node_comm = comm.Split_type(MPI.COMM_TYPE_SHARED, key=comm.rank)
    leader = node_comm.allreduce(comm.rank, op=MPI.MIN)
    node_comm.Free()
    leaders = np.asarray(comm.allgather(leader), np.int64)
    return Peers(np.unique(leaders, return_inverse=True)[1].astype(np.int64))


def check_memory(local: Local, memory: int, comm) -> tuple[int, ...]:
    """Every rank's modelled memory (returned, in rank order); a :class:`TrainError`
    when the ranks of one machine need more than ``--memory-limit`` (default: its memory)."""
    from mpi4py import MPI

    limit = local.cfg.memory_limit or machine_memory()
    memory += model_bytes(local.job)  # every rank holds the whole model
    seen = comm.allgather((MPI.Get_processor_name(), int(memory)))
    hosts: dict[str, list[int]] = {}
    for host, need in seen:
        hosts.setdefault(host, []).append(need)
    host, needs = max(hosts.items(), key=lambda h: sum(h[1]))
    if sum(needs) > limit:
        c = local.shape.replication
        more = f" (--replication {c} holds each block on {c} ranks)" if c > 1 else ""
        raise TrainError(f"{local.cfg.store}: training needs about {gib(sum(needs))} on {host} for its {len(needs)} "
                         f"rank{'s' if len(needs) != 1 else ''} (up to {gib(max(needs))} a rank{more}), more than "
                         f"the memory limit of {gib(limit)} (--memory-limit; default: the memory available when the run starts)")
    return tuple(need for _, need in seen)


def column_owner(indices: np.ndarray, n: int, cp: CommPlan) -> np.ndarray:
    """The part owning each local column (own columns first, then each sender's)."""
    out = np.full(indices.size, cp.rank, np.int64)
    halo = indices >= n
    senders = np.repeat(np.arange(cp.size), np.diff(cp.recv_start))
    out[halo] = senders[indices[halo] - n]
    return out
