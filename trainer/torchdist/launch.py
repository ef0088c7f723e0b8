"""Starting torch.distributed the way the job was launched
(:func:`init_from_env`): ``torchrun`` (its ``RANK``, ``WORLD_SIZE``,
``MASTER_ADDR``/``MASTER_PORT``), ``mpirun`` (MPICH's ``PMI_*`` or Open MPI's
``OMPI_COMM_WORLD_*``: rank 0 opens torch's key-value store on a port the
system picks and MPI broadcasts where it listens, so no other job can take
the port between choosing and binding it), or a single process."""

from __future__ import annotations

import atexit
import os
import socket
from datetime import timedelta

import torch.distributed as dist

MPI_SIZE_VARS = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MPI_LOCALNRANKS")


def launched_by_mpi() -> bool:
    """Whether an MPI launcher started more than one process."""
    return any(int(os.environ.get(v, "1") or 1) > 1 for v in MPI_SIZE_VARS)


def _mpi_rendezvous(timeout: timedelta) -> tuple[dist.Store, int, int]:
    """(the job's store, rank, size), agreed over MPI: rank 0 serves a TCPStore bound to port 0 (the system
    picks a free one and the store holds it from then on) and broadcasts the port; the others connect to rank
    0's loopback when every rank runs on its host, else to its host name."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    hosts = comm.allgather(socket.gethostname())
    host = "127.0.0.1" if len(set(hosts)) == 1 else hosts[0]
    server = dist.TCPStore(host, 0, comm.size, True, timeout=timeout, wait_for_workers=False) \
        if comm.rank == 0 else None
    port = comm.bcast(server.port if server is not None else None, root=0)
    store = server if server is not None else dist.TCPStore(host, port, comm.size, False, timeout=timeout)
    return store, comm.rank, comm.size


def init_from_env(backend: str = "gloo", timeout_s: float = 300.0) -> tuple[int, int]:
    """Initialize torch.distributed's default group (once) and return (rank, world size).

    Parameters
    ----------
    backend : ``gloo`` (CPU), ``nccl`` (GPU) or ``mpi`` (a torch built with MPI)
    timeout_s : how long a collective waits for a missing rank before failing
    """
    if dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    atexit.register(_shutdown)
    timeout = timedelta(seconds=timeout_s)
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:  # torchrun, or a user's own launcher
        dist.init_process_group(backend, init_method="env://", timeout=timeout)
    elif launched_by_mpi():
        store, rank, size = _mpi_rendezvous(timeout)
        dist.init_process_group(backend, store=store, rank=rank, world_size=size, timeout=timeout)
    else:  # one process: an in-memory store, no port at all
        dist.init_process_group(backend, store=dist.HashStore(), rank=0, world_size=1, timeout=timeout)
    return dist.get_rank(), dist.get_world_size()


def _shutdown() -> None:
    """At exit: destroy the default group while the interpreter still runs (left to the interpreter's
    teardown, gloo's threads could be destroyed still joinable: "terminate called without an active
    exception", a rank's exit code 134 or 15). A run that ends well calls :func:`finish` first."""
    if dist.is_initialized():
        dist.destroy_process_group()


def finish() -> None:
    """End a run that every rank completed: the ranks leave torch.distributed in turn. Under mpirun, rank 0's
    process serves the job's TCPStore, so it destroys its group last, once every other rank's group is gone
    (seen in CI: a rank killed at exit after the run's last line when rank 0 could go first). Not for a rank
    that failed: it would wait for the others (the exit's :func:`_shutdown` needs no partner)."""
    if not dist.is_initialized():
        return
    comm = _mpi_world()
    if comm is None:  # one process, or torchrun (its agent serves the store)
        dist.destroy_process_group()
        return
    comm.Barrier()
    if comm.rank != 0:
        dist.destroy_process_group()
    comm.Barrier()
    if comm.rank == 0:
        dist.destroy_process_group()


def _mpi_world():
    """MPI's world communicator when this job was launched by mpirun and MPI is still running, else None."""
    import sys

    mpi = sys.modules.get("mpi4py.MPI")  # loaded by the rendezvous (_mpi_rendezvous); not imported here
    if mpi is None or not launched_by_mpi() or mpi.Is_finalized() or not mpi.Is_initialized():
        return None
    return mpi.COMM_WORLD
