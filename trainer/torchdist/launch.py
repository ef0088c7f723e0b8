"""Starting torch.distributed the way the job was launched
(:func:`init_from_env`): ``torchrun`` (its ``RANK``, ``WORLD_SIZE``,
``MASTER_ADDR``/``MASTER_PORT``), ``mpirun`` (MPICH's ``PMI_*`` or Open MPI's
``OMPI_COMM_WORLD_*``: rank 0 picks a free port and MPI broadcasts where to
meet), or a single process."""

from __future__ import annotations

import os
import socket
from datetime import timedelta

import torch.distributed as dist

MPI_SIZE_VARS = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MPI_LOCALNRANKS")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("", 0))
        return int(s.getsockname()[1])


def launched_by_mpi() -> bool:
    """Whether an MPI launcher started more than one process."""
    return any(int(os.environ.get(v, "1") or 1) > 1 for v in MPI_SIZE_VARS)


def _mpi_rendezvous() -> tuple[str, int, int]:
    """(``tcp://host:port`` of rank 0, rank, size) agreed over MPI: rank 0's loopback when every rank runs on
    its host, else its host name."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    hosts = comm.allgather(socket.gethostname())
    port = comm.bcast(_free_port() if comm.rank == 0 else None, root=0)
    host = "127.0.0.1" if len(set(hosts)) == 1 else hosts[0]
    return f"tcp://{host}:{port}", comm.rank, comm.size


def init_from_env(backend: str = "gloo", timeout_s: float = 300.0) -> tuple[int, int]:
    """Initialize torch.distributed's default group (once) and return (rank, world size).

    Parameters
    ----------
    backend : ``gloo`` (CPU), ``nccl`` (GPU) or ``mpi`` (a torch built with MPI)
    timeout_s : how long a collective waits for a missing rank before failing
    """
    if dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    timeout = timedelta(seconds=timeout_s)
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:  # torchrun, or a user's own launcher
        dist.init_process_group(backend, init_method="env://", timeout=timeout)
    elif launched_by_mpi():
        url, rank, size = _mpi_rendezvous()
        dist.init_process_group(backend, init_method=url, rank=rank, world_size=size, timeout=timeout)
    else:
        dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{_free_port()}", rank=0, world_size=1,
                                timeout=timeout)
    return dist.get_rank(), dist.get_world_size()
