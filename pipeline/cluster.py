"""The Dask client of a build: an embedded LocalCluster, or an existing scheduler."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ClusterConfig:
    """Attributes: scheduler (address of an existing scheduler, or None for an
    embedded cluster); workers (threads, or processes with ``processes``;
    0 = all cores); dashboard_address (``:0`` picks a free port); processes
    (worker processes instead of threads in this process)."""

    scheduler: str | None = None
    workers: int = 0
    dashboard_address: str = "127.0.0.1:0"
    processes: bool = False


@contextlib.contextmanager
def dask_client(cfg: ClusterConfig, announce=print) -> Iterator:
    """Yield a ``distributed.Client``; the embedded cluster is closed on exit.

    The embedded cluster defaults to one worker with one thread per core in
    this process: the stages hand large numpy arrays to each other and
    spend their time in numpy and scipy, which release the GIL, so threads
    avoid copying arrays between processes. (Mt-KaHyPar does not release it:
    large hypergraphs are partitioned in a child process, see
    ``partition.kahypar_partition``.)
    """
    from distributed import Client, LocalCluster

    if not log.isEnabledFor(logging.DEBUG):
        # a failing task is reported once, by the CLI; the workers' own
        # "Compute Failed" tracebacks would repeat it
        for name in ("distributed", "bokeh", "tornado"):
            logging.getLogger(name).setLevel(logging.CRITICAL)
    cores = cfg.workers or os.cpu_count() or 1
    if cfg.scheduler:
        try:
            client = Client(cfg.scheduler, timeout="20s")
        except (OSError, TimeoutError) as e:
            from .errors import UserError
            raise UserError(f"cannot connect to the Dask scheduler at {cfg.scheduler}: {e}") from None
        cluster = None
    else:
        if cfg.processes:
            cluster = LocalCluster(n_workers=cores, threads_per_worker=1, processes=True,
                                   dashboard_address=cfg.dashboard_address)
        else:
            cluster = LocalCluster(n_workers=1, threads_per_worker=cores, processes=False,
                                   dashboard_address=cfg.dashboard_address)
        client = Client(cluster)
    try:
        announce(f"Dask dashboard: {client.dashboard_link}")
        sys.stdout.flush()
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
