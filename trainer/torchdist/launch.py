"""Starting torch.distributed the way the job was launched
(:func:`init_from_env`): ``torchrun`` (its ``RANK``, ``WORLD_SIZE``,
``MASTER_ADDR``/``MASTER_PORT``), ``mpirun`` (MPICH's ``PMI_*`` or Open MPI's
``OMPI_COMM_WORLD_*``: rank 0 opens torch's key-value store on a port the
system picks and MPI broadcasts where it listens, so no other job can take
the port between choosing and binding it), ``srun`` without MPI (Slurm's
``SLURM_PROCID``, ``SLURM_STEP_NUM_TASKS``, ``SLURM_LOCALID``: rank 0 opens the
store on the step's first node, at ``MASTER_ADDR``/``MASTER_PORT`` where set,
else on a port of the job, :meth:`shgcn.trainer.slurm.Step.port`), or a single
process.

On GPUs: :func:`local_device` gives each rank its GPU (its rank on the node
modulo the node's GPUs) and :func:`choose_backend` the backend (NCCL when
every rank of the node has a GPU of its own, else gloo, whose exchanges go
through host memory)."""

from __future__ import annotations

import atexit
import os
import socket
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist

MPI_SIZE_VARS = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MPI_LOCALNRANKS")
# (rank on the node, ranks on the node) as each launcher sets them: torchrun, Open MPI, MPICH (Hydra)
LOCAL_VARS = (("LOCAL_RANK", "LOCAL_WORLD_SIZE"), ("OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"),
              ("MPI_LOCALRANKID", "MPI_LOCALNRANKS"))
# (rank, ranks) of the whole job, where no launcher says what is on the node: as if every rank ran on this node
WORLD_VARS = (("RANK", "WORLD_SIZE"), ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"), ("PMI_RANK", "PMI_SIZE"))
# backends that move device tensors themselves; with any other (gloo, MPI) they go through host buffers
DEVICE_BACKENDS = ("nccl",)
# (rank, ranks) as the MPI launchers set them (Open MPI, MPICH's Hydra): what torchrun's RANK/WORLD_SIZE must agree with
MPI_WORLD_VARS = (("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"), ("PMI_RANK", "PMI_SIZE"))


def slurm_task():
    """This process's task of an srun step of several tasks that no MPI launcher numbered (no PMI under srun:
    ``--mpi=none``, Slurm's default), else None."""
    from shgcn.trainer.slurm import step

    if launched_by_mpi() or ("RANK" in os.environ and "WORLD_SIZE" in os.environ):
        return None
    task = step(os.environ)
    return task if task is not None and task.tasks > 1 else None


def job_rank() -> int:
    """This process's rank in the job: torch.distributed's once it is started, else the launcher's (an MPI
    launcher's own variables first: a stale ``RANK`` left in the environment does not count), 0 for one
    process."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank()
    if nested_launch() and os.environ.get("LOCAL_RANK", "0").strip() != "0":  # one torchrun worker per MPI rank says
        return 1
    value = next((os.environ[r] for r, _ in (*MPI_WORLD_VARS, ("RANK", "WORLD_SIZE"), ("SLURM_PROCID", ""))
                  if os.environ.get(r)), "0")
    return int(value) if value.strip().isdigit() else 0


def launched_by_mpi() -> bool:
    """Whether an MPI launcher started more than one process."""
    return any(int(os.environ.get(v, "1") or 1) > 1 for v in MPI_SIZE_VARS)


def nested_launch() -> bool:
    """Whether torchrun started this process under an MPI launcher (``mpirun -n 2 torchrun ...``): two launchers,
    each believing it starts the job."""
    return bool(os.environ.get("TORCHELASTIC_RUN_ID")) and launched_by_mpi()


def stale_launcher_env() -> str | None:
    """Why this process's ``RANK``/``WORLD_SIZE`` cannot start a job (None when they fit, or are not both set:
    then init_from_env does not use them): not whole numbers, a rank outside the world, numbers that disagree
    with an MPI launcher's own variables (a torchrun environment left behind under mpirun), or no
    ``MASTER_ADDR``/``MASTER_PORT`` for torch's env:// rendezvous (which would otherwise fail with a
    traceback, or wait for ranks that never come)."""
    env = os.environ
    if "RANK" not in env or "WORLD_SIZE" not in env:
        return None
    given = f"RANK={env['RANK']} WORLD_SIZE={env['WORLD_SIZE']}"
    unset = "unset RANK and WORLD_SIZE to run one process or under mpirun (torchrun sets them itself)"
    rank, size = env["RANK"].strip(), env["WORLD_SIZE"].strip()
    if not (rank.isdigit() and size.isdigit() and int(rank) < int(size)):
        return f"{given} in the environment: not a rank of a world (0 <= RANK < WORLD_SIZE); {unset}"
    for rank_var, size_var in MPI_WORLD_VARS:
        if size_var in env and (env.get(rank_var, "").strip(), env[size_var].strip()) != (rank, size):
            return (f"{given} in the environment disagree with the MPI launcher's {rank_var}="
                    f"{env.get(rank_var, '')} {size_var}={env[size_var]} (stale torchrun variables?); {unset}")
    missing = [v for v in ("MASTER_ADDR", "MASTER_PORT") if not env.get(v, "").strip()]
    if missing:
        return (f"{given} in the environment but {' and '.join(missing)} not set: torch's env:// rendezvous "
                f"needs MASTER_ADDR and MASTER_PORT (torchrun sets all four); {unset}")
    return None


def _check_launcher_env() -> None:
    """Refuse a stale or partial torchrun environment before any rendezvous (a :class:`JobError`, one line).
    Under an MPI launcher the ranks agree over MPI first: one rank whose stale ``RANK`` happens to fit would
    otherwise wait for the others in torch's rendezvous."""
    if nested_launch():  # before MPI starts: MPICH's PMI_Init would abort every process of torchrun's with stacks
        from .block import JobError

        raise JobError("started by torchrun under mpirun (two launchers, each starting the job): use one, "
                       "mpirun -n N python SCRIPT or torchrun --nproc-per-node N SCRIPT")
    problem = stale_launcher_env()
    if launched_by_mpi() and "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        from mpi4py import MPI

        problems = [p for p in MPI.COMM_WORLD.allgather(problem) if p]  # a rank whose RANK disagrees says most
        problem = min(problems, key=lambda p: "disagree" not in p, default=None)
    if problem:
        from .block import JobError

        raise JobError(problem)


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


_SLURM_STORE: list[dist.Store] = []  # the srun job's store (rank 0 serves it): finish() ends rank 0's group last


def _slurm_rendezvous(task, timeout: timedelta) -> tuple[dist.Store, int, int]:
    """(the job's store, rank, size) of an srun step without MPI: rank 0 serves a TCPStore on the step's first
    node (the loopback when the step has one node), at ``MASTER_ADDR``/``MASTER_PORT`` where set, else on the
    job's port (:meth:`shgcn.trainer.slurm.Step.port`); the others connect to it."""
    host = os.environ.get("MASTER_ADDR", "").strip() or ("127.0.0.1" if len(task.per_node) == 1 else task.first_host())
    port = int(os.environ.get("MASTER_PORT", "").strip() or task.port())
    store = dist.TCPStore(host, port, task.tasks, task.rank == 0, timeout=timeout, wait_for_workers=False)
    _SLURM_STORE[:] = [store]
    return store, task.rank, task.tasks


def local_world() -> tuple[int, int]:
    """(this process's rank on its node, the ranks on its node) from the launcher's environment (torchrun,
    Open MPI, MPICH); where none says, the job's rank and size, as if every rank ran on this node; (0, 1) for
    one process."""
    for rank_var, size_var in LOCAL_VARS:
        if rank_var in os.environ and size_var in os.environ:
            return int(os.environ[rank_var]), int(os.environ[size_var])
    if (task := slurm_task()) is not None:
        return task.local_rank, task.local_size
    for rank_var, size_var in WORLD_VARS:
        if rank_var in os.environ and size_var in os.environ:
            return int(os.environ[rank_var]), int(os.environ[size_var])
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def local_device(device: Any = "cpu") -> torch.device:
    """This rank's device: ``cpu``; for ``cuda``, GPU ``local rank % GPUs on the node`` (ranks share GPUs
    when the node has fewer); ``cuda:N`` as given. A GPU when torch sees none is a one-line
    :class:`~shgcn.core.errors.UserError` (exit code 2)."""
    from .block import as_device

    dev = as_device(device)
    if dev.type == "cuda" and dev.index is None:
        dev = torch.device("cuda", local_world()[0] % torch.cuda.device_count())
    return dev


def choose_backend(device: Any = "cpu", local_size: int | None = None, device_count: int | None = None) -> str:
    """The process group's backend for ranks computing on ``device``: ``nccl`` for a CUDA device when every
    rank on the node has a GPU of its own (``local_size`` ranks on the node, :func:`local_world`'s by default,
    at most ``device_count`` GPUs, torch's count by default) and torch has NCCL; else ``gloo`` (the CPU, or
    ranks sharing a GPU, which NCCL refuses: the exchanges then go through pinned host buffers)."""
    if torch.device(device).type != "cuda":
        return "gloo"
    local = local_world()[1] if local_size is None else local_size
    gpus = torch.cuda.device_count() if device_count is None else device_count
    return "nccl" if dist.is_nccl_available() and 0 < local <= gpus else "gloo"


def device_backend(device: Any, group: Any = None) -> str | None:
    """The name of the backend that ``group`` (None: the default one) uses for tensors on ``device`` (from
    its ``cpu:gloo,cuda:nccl`` configuration); None when it has none for that kind of device."""
    kind = torch.device(device).type
    config = getattr(dist, "get_backend_config", dist.get_backend)(group)  # get_backend_config: torch >= 2.2
    for entry in str(config).split(","):
        on, _, name = entry.strip().partition(":")
        if not name:  # one backend for every device
            return on
        if on == kind:
            return name
    return None


def stages_through_host(device: Any, group: Any = None) -> bool:
    """Whether tensors on ``device`` cross ``group`` through host buffers: a GPU's tensors over gloo or MPI
    (NCCL sends them from the device)."""
    return torch.device(device).type not in ("cpu", "meta") and device_backend(device, group) not in DEVICE_BACKENDS


def init_from_env(backend: str = "gloo", timeout_s: float = 300.0, device: Any = None) -> tuple[int, int]:
    """Initialize torch.distributed's default group (once) and return (rank, world size).

    Parameters
    ----------
    backend : ``gloo`` (CPU), ``nccl`` (GPU) or ``mpi`` (a torch built with MPI); :func:`choose_backend` picks
        one for a device. ``nccl`` makes a group with gloo beside it for CPU tensors (``cpu:gloo,cuda:nccl``)
    timeout_s : how long a collective waits for a missing rank before failing
    device : this rank's GPU (:func:`local_device`), made the current one; with ``nccl`` its communicator is
        set up at once (so the first halo exchange, which not every rank takes part in, finds it). None or
        the CPU: nothing
    """
    if backend not in ("gloo", "nccl", "mpi"):  # else torch's ValueError, or a RuntimeError at the rendezvous
        from .block import JobError

        raise JobError(f"init_from_env(backend={backend!r}): choose gloo, nccl or mpi (td.choose_backend(device) "
                       "picks one)")
    if not 0 < timeout_s < 10**7:
        from .block import JobError

        raise JobError(f"init_from_env(timeout_s={timeout_s!r}): seconds, more than 0 and below 1e7")
    if dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    kw: dict[str, Any] = {"timeout": timedelta(seconds=timeout_s)}
    if device is not None and torch.device(device).type == "cuda":
        from .block import as_device

        dev = as_device(device)
        if dev.index is None:
            dev = torch.device("cuda", torch.cuda.current_device())
        torch.cuda.set_device(dev)
        if backend == "nccl":
            kw["device_id"] = dev
    if backend == "nccl":
        backend = "cpu:gloo,cuda:nccl"
    _check_launcher_env()  # before any rendezvous: a stale RANK/WORLD_SIZE would fail with a traceback, or hang
    atexit.register(_shutdown)
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:  # torchrun, or a user's own launcher
        dist.init_process_group(backend, init_method="env://", **kw)
    elif launched_by_mpi():
        store, rank, size = _mpi_rendezvous(kw["timeout"])
        dist.init_process_group(backend, store=store, rank=rank, world_size=size, **kw)
    elif (task := slurm_task()) is not None:  # srun without MPI
        store, rank, size = _slurm_rendezvous(task, kw["timeout"])
        dist.init_process_group(backend, store=store, rank=rank, world_size=size, **kw)
    else:  # one process: an in-memory store, no port at all
        dist.init_process_group(backend, store=dist.HashStore(), rank=0, world_size=1, **kw)
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
    if comm is None and _SLURM_STORE and dist.get_world_size() > 1:
        _finish_srun(_SLURM_STORE[0])
        return
    if comm is None:  # one process, or torchrun (its agent serves the store)
        dist.destroy_process_group()
        return
    comm.Barrier()
    if comm.rank != 0:
        dist.destroy_process_group()
    comm.Barrier()
    if comm.rank == 0:
        dist.destroy_process_group()


def _finish_srun(store: dist.Store, timeout_s: float = 60.0) -> None:
    """:func:`finish` under srun without MPI: every other rank leaves and says so in the store; rank 0, whose
    process serves it, leaves last (or after ``timeout_s`` without the others' word)."""
    import time

    dist.barrier()
    rank, size = dist.get_rank(), dist.get_world_size()
    if rank != 0:
        dist.destroy_process_group()
        store.add("shgcn/finished", 1)
        return
    end = time.monotonic() + timeout_s
    while store.add("shgcn/finished", 0) < size - 1 and time.monotonic() < end:
        time.sleep(0.05)
    dist.destroy_process_group()


def run_main(main: Callable[[], int | None], prog: str) -> int:
    """Run an entry point's ``main()`` and end the job as ``shgcn-train`` ends one; returns the exit code.

    - ``main``'s return (None: 0);
    - a :class:`~shgcn.core.errors.UserError` that every rank raised alike (before torch.distributed starts,
      or a :class:`~.block.JobError`): rank 0's one line ``PROG: error: ...``, exit 2 on every rank;
    - one rank's own failure once the job runs (a ``UserError``: exit 2; any other exception, a bug: exit 1):
      one line naming the rank and the error, and every other rank ended at once (``MPI_Abort`` under
      mpirun, the trainer's :func:`~shgcn.trainer.watchdog.abort_job`), not left waiting in its next
      collective for torch.distributed's timeout, nor printing its own traceback of a peer that vanished.
      Under torchrun the rank exits and torchrun stops the others;
    - Ctrl-C: rank 0 says the run was interrupted, exit 130.
    """
    from shgcn.core.errors import UserError

    try:
        code = main()
        return 0 if code is None else int(code)
    except SystemExit:  # argparse's --help and usage errors
        raise
    except KeyboardInterrupt:
        if job_rank() == 0:
            _say(f"{prog}: interrupted; the run stopped (a --checkpoint keeps what it last wrote)")
        return 130
    except UserError as e:
        if getattr(e, "every_rank", False) or not (dist.is_available() and dist.is_initialized()):
            if job_rank() == 0:
                _say(f"{prog}: error: {e}")
            return e.exit_code
        return _end_job(prog, f"error: {e}", e.exit_code)
    except BaseException as e:  # noqa: BLE001 - any failure must end the whole job, not leave it waiting
        return _end_job(prog, failure_text(e), 1)


PEER_GONE = ("Connection closed by peer", "Connection reset by peer", "Broken pipe")  # gloo's, when a peer exits


def failure_text(e: BaseException) -> str:
    """A rank's own failure in one line: its type and message, or, when gloo says a peer's connection closed
    (another rank exited: its own code, or killed), that rank named as the cause, not gloo."""
    text = f"{type(e).__name__}: {e}"
    if any(words in text for words in PEER_GONE):
        return ("another rank left the job (its connection closed: it exited or was killed; its own output, or "
                "the launcher's, says why); this rank stopped")
    if "Timed out" in text:  # gloo's words: this rank waited out the collective's timeout (init_from_env's)
        text += " (another rank stopped answering, or fell that far behind)"
    return text


def _end_job(prog: str, text: str, code: int) -> int:
    """This rank's one line, then every rank's end: MPI_Abort under mpirun (the launcher kills the others
    while they wait in a collective); elsewhere the exit code, returned."""
    several = dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1
    _say(f"{prog}: {f'rank {job_rank()}: ' if several else ''}{text}")
    if several and launched_by_mpi():
        from shgcn.trainer.watchdog import abort_job

        abort_job(code)
    return code


def _say(line: str) -> None:
    from shgcn.trainer.watchdog import say

    say(line)  # one whole line in one write: the ranks share the launcher's stderr


def _mpi_world():
    """MPI's world communicator when this job was launched by mpirun and MPI is still running, else None."""
    import sys

    mpi = sys.modules.get("mpi4py.MPI")  # loaded by the rendezvous (_mpi_rendezvous); not imported here
    if mpi is None or not launched_by_mpi() or mpi.Is_finalized() or not mpi.Is_initialized():
        return None
    return mpi.COMM_WORLD
