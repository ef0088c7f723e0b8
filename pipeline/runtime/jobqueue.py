"""The build's Dask workers from a batch system (``pipeline build ... --cluster slurm``): dask-jobqueue's
``SLURMCluster`` (or ``PBSCluster``, ``LSFCluster``, ``SGECluster``, ``OARCluster``, ``MoabCluster``) submits
``--cluster-jobs`` batch jobs, each one Dask worker of ``--cluster-cores`` threads and
``--cluster-memory``; the scheduler runs in the build's process, whose dashboard link is shown as the embedded
cluster's is. The build waits ``--cluster-wait`` seconds for the first worker (jobs queue), then runs as on any
cluster; at its end the jobs are cancelled. The plan (``--plan``) shows the memory, as for an existing
scheduler's workers, without checking it against this machine's. The workers run this Python (``sys.executable``): the batch
system's nodes must see this environment and the store's directory (a shared file system)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

from ..errors import UserError

# --cluster NAME -> dask-jobqueue's class, and the command that lists the batch system's queue (named when no
# worker joins in time)
CLUSTERS = {"slurm": ("SLURMCluster", "squeue"), "pbs": ("PBSCluster", "qstat"), "lsf": ("LSFCluster", "bjobs"),
            "sge": ("SGECluster", "qstat"), "oar": ("OARCluster", "oarstat"), "moab": ("MoabCluster", "showq")}


@dataclass(frozen=True)
class BatchConfig:
    """The batch system (``kind``: a key of :data:`CLUSTERS`) and its worker jobs: ``jobs`` of one worker each,
    ``cores`` threads and ``memory`` (dask-jobqueue's spelling: ``4GiB``) per job, ``walltime`` (``HH:MM:SS``),
    ``queue`` (None: the batch system's default), ``options`` (extra directives, e.g. ``--account=A``) and
    ``wait`` (seconds for the first worker to join)."""

    kind: str
    jobs: int = 1
    cores: int = 1
    memory: str = "4GiB"
    walltime: str = "01:00:00"
    queue: str | None = None
    options: tuple[str, ...] = ()
    wait: float = 600.0


def add_arguments(group) -> None:
    """The ``--cluster`` options, in the command's Dask group."""
    group.add_argument("--cluster", choices=sorted(CLUSTERS), help="start the Dask workers as batch jobs of this "
                       "system (dask-jobqueue; Slurm: SLURMCluster) instead of an embedded cluster")
    group.add_argument("--cluster-jobs", type=int, default=1, metavar="N", help="--cluster: worker jobs")
    group.add_argument("--cluster-cores", type=int, default=1, metavar="C", help="--cluster: threads (cores) per worker job")
    group.add_argument("--cluster-memory", default="4GiB", metavar="SIZE", help="--cluster: memory per worker job")
    group.add_argument("--cluster-walltime", default="01:00:00", metavar="HH:MM:SS", help="--cluster: each job's time limit")
    group.add_argument("--cluster-queue", default=None, metavar="Q", help="--cluster: the queue (Slurm's partition)")
    group.add_argument("--cluster-option", action="append", default=[], metavar="DIRECTIVE",
                       help="--cluster: an extra directive of each job, e.g. --cluster-option=--account=A (repeatable)")
    group.add_argument("--cluster-wait", type=float, default=600.0, metavar="S",
                       help="--cluster: seconds to wait for the first worker job to start")


def batch_config(args: argparse.Namespace) -> BatchConfig | None:
    """The batch cluster the command line asks for (None: none); a bad value is one line (exit 2)."""
    kind = getattr(args, "cluster", None)
    if kind is None:
        return None
    if getattr(args, "scheduler", None):
        raise UserError("--cluster and --scheduler: give one (--cluster starts its own scheduler)")
    if getattr(args, "workers", 0) or getattr(args, "processes", False):
        raise UserError("--workers and --processes shape the embedded cluster: with --cluster give --cluster-jobs and "
                        "--cluster-cores")
    for flag, value in (("--cluster-jobs", args.cluster_jobs), ("--cluster-cores", args.cluster_cores)):
        if value < 1:
            raise UserError(f"{flag} {value}: must be >= 1")
    if not args.cluster_wait > 0:
        raise UserError(f"--cluster-wait {args.cluster_wait}: seconds, > 0")
    _memory(args.cluster_memory)
    return BatchConfig(kind, args.cluster_jobs, args.cluster_cores, args.cluster_memory, args.cluster_walltime,
                       args.cluster_queue, tuple(args.cluster_option), args.cluster_wait)


def _memory(text: str) -> int:
    from dask.utils import parse_bytes

    try:
        value = parse_bytes(text)
    except (ValueError, TypeError):
        raise UserError(f"--cluster-memory {text!r}: not a size (e.g. 4GiB, 500MB)") from None
    if value <= 0:
        raise UserError(f"--cluster-memory {text!r}: must be > 0")
    return value


def start(cfg: BatchConfig, dashboard_address: str):
    """dask-jobqueue's cluster for ``cfg``, its jobs submitted (``scale``); its scheduler's dashboard on
    ``dashboard_address``. A batch system whose commands are absent (no ``sbatch``) is one line."""
    import shutil

    try:
        import dask_jobqueue
    except ImportError:
        raise UserError(f"--cluster {cfg.kind}: dask-jobqueue is not installed (pip install dask-jobqueue)") from None
    name, _ = CLUSTERS[cfg.kind]
    submit = getattr(dask_jobqueue, name).job_cls.submit_command
    if shutil.which(submit.split()[0]) is None:
        raise UserError(f"--cluster {cfg.kind}: {submit.split()[0]} not found (is this a {cfg.kind} login node?)")
    cluster = getattr(dask_jobqueue, name)(
        cores=cfg.cores, processes=1, memory=cfg.memory, walltime=cfg.walltime, queue=cfg.queue,
        job_extra_directives=list(cfg.options), python=sys.executable,
        scheduler_options={"dashboard_address": dashboard_address})
    try:
        _test_submit(cluster, cfg)
    except BaseException:
        cluster.close()
        raise
    cluster.scale(jobs=cfg.jobs)
    return cluster


def _test_submit(cluster, cfg: BatchConfig) -> None:
    """Slurm: the worker's job script through ``sbatch --test-only`` (validated, not queued) first, so that a job
    Slurm refuses (a partition, an account or memory it does not have) is its own one line, not a wait for a
    worker that never comes. The other batch systems have no such test: their refusals end the wait."""
    import subprocess

    if cfg.kind != "slurm":
        return
    try:
        res = subprocess.run(["sbatch", "--test-only"], input=cluster.job_script(), capture_output=True, text=True,
                             timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise UserError(f"--cluster slurm: sbatch --test-only of the worker job failed: {e}") from None
    if res.returncode != 0:
        why = [line.removeprefix("sbatch: error: ").strip() for line in res.stderr.splitlines() if line.strip()]
        raise UserError(f"--cluster slurm: Slurm refuses the worker job: {why[-1] if why else res.returncode}")


def wait_for_workers(client, cfg: BatchConfig) -> None:
    """Wait for the first worker job to join; one line naming the queue's command when none does in time."""
    try:
        client.wait_for_workers(1, timeout=cfg.wait)
    except TimeoutError:
        raise UserError(f"--cluster {cfg.kind}: no worker job started within {cfg.wait:g} s (--cluster-wait); see "
                        f"{CLUSTERS[cfg.kind][1]} for the jobs' state") from None
