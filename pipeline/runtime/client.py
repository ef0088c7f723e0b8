"""The Dask side of a build: the client (an embedded LocalCluster, or an
existing scheduler), task submission with keys that name the stage, and the
checks an external cluster needs (can its workers see the files?)."""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import uuid
import weakref
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ..errors import UserError

log = logging.getLogger(__name__)

ENV_SCHEDULER = "DASK_SCHEDULER_ADDRESS"


@dataclass(frozen=True)
class ClusterConfig:
    """Attributes: scheduler (address of an existing scheduler; None: the
    ``DASK_SCHEDULER_ADDRESS`` environment variable, else an embedded
    cluster); workers (threads, or processes with ``processes``; 0 = all
    cores); dashboard_address (``HOST:PORT``, port 0 picks a free one; the
    embedded cluster's servers all bind to HOST); processes (worker processes
    instead of threads in this process)."""

    scheduler: str | None = None
    workers: int = 0
    dashboard_address: str = "127.0.0.1:0"
    processes: bool = False

    def address(self) -> str | None:
        return self.scheduler or os.environ.get(ENV_SCHEDULER) or None


def _host_port(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    try:
        return host or "127.0.0.1", int(port or 0)
    except ValueError:
        raise UserError(f"--dashboard-address {address!r}: expected HOST:PORT, e.g. 127.0.0.1:8787") from None


def dashboard_link(client, host: str | None = None) -> str:
    """The dashboard's URL. For the embedded cluster: the host it is bound to
    (Dask's own link names the machine's address, where nothing listens)."""
    cluster = getattr(client, "cluster", None)
    http = getattr(getattr(cluster, "scheduler", None), "http_server", None)
    if host is not None and http is not None and getattr(http, "port", None):
        return f"http://{host}:{http.port}/status"
    return str(client.dashboard_link)


@contextlib.contextmanager
def dask_client(cfg: ClusterConfig, announce: Callable[[str], Any] = print) -> Iterator:
    """Yield a ``distributed.Client``; the embedded cluster is closed on exit.

    The embedded cluster defaults to one worker with one thread per core in
    this process: the stages hand numpy arrays to each other and spend their
    time in numpy and scipy, which release the GIL. Native partitioners that
    hold the GIL run in child processes (see :mod:`.child`).
    """
    from distributed import Client, LocalCluster

    if not log.isEnabledFor(logging.DEBUG):
        # a failing task is reported once, by the CLI; the workers' own
        # "Compute Failed" tracebacks would repeat it
        for name in ("distributed", "bokeh", "tornado", "asyncio"):  # asyncio: shutdown noise after an error
            logging.getLogger(name).setLevel(logging.CRITICAL)
    address = cfg.address()
    cluster = None
    if address:
        if "://" in address and not address.startswith(("tcp://", "tls://", "inproc://", "ucx://", "ws://", "wss://")):
            raise UserError(f"--scheduler {address!r}: not a Dask scheduler address (expected tcp://HOST:PORT)")
        try:
            client = Client(address, timeout="20s")
        except (OSError, TimeoutError, ValueError) as e:
            raise UserError(f"cannot connect to the Dask scheduler at {address}: {e}") from None
    else:
        host, port = _host_port(cfg.dashboard_address)
        cores = cfg.workers or os.cpu_count() or 1
        if cfg.processes:  # every server (scheduler, workers, their HTTP) on HOST
            cluster = LocalCluster(n_workers=cores, threads_per_worker=1, processes=True, host=host,
                                   dashboard_address=f"{host}:{port}", worker_dashboard_address=f"{host}:0")
        else:  # in-process: only the dashboard listens, on HOST
            cluster = LocalCluster(n_workers=1, threads_per_worker=cores, processes=False,
                                   dashboard_address=f"{host}:{port}", worker_dashboard_address=f"{host}:0")
        client = Client(cluster)
    try:
        announce(f"Dask dashboard: {dashboard_link(client, None if address else host)}")
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


class Tasks:
    """Submits tasks whose keys name their stage (``ingest-parse-<token>``,
    ``partition-hp-<token>``...), so the dashboard's task stream reads like
    the pipeline.

    Tasks are pure functions of their inputs: a worker lost mid-build costs a
    recompute of what it held, not the build. The futures are tracked weakly:
    an intermediate result (parsed chunks, shuffled pieces, a rank's rows)
    is freed on the workers as soon as no stage holds its future and its
    dependents are done (the scheduler keeps its task, so a lost dependent is
    still recomputed); :meth:`release` cancels whatever is left.
    """

    def __init__(self, client, token: str | None = None):
        self.client = client
        self.token = token or uuid.uuid4().hex[:8]
        self._count: dict[str, itertools.count] = defaultdict(itertools.count)
        self._futures: dict[str, weakref.ref] = {}

    def submit(self, stage: str, fn: Callable, *args, index: int | None = None, **kwargs):
        """``fn(*args, **kwargs)`` as a task of ``stage`` (futures among the
        arguments are resolved on the worker: data moves worker to worker)."""
        key = (f"{stage}-{self.token}", next(self._count[stage]))
        f = self.client.submit(fn, *args, key=key, pure=False, **kwargs)
        self._futures[str(key)] = weakref.ref(f)
        return f

    def gather(self, futures: list) -> list:
        return self.client.gather(futures)

    def release(self) -> None:
        """Forget every future of this build still alive (the cluster frees their data)."""
        alive = [f for r in self._futures.values() if (f := r()) is not None]
        self._futures = {}
        for f in alive:  # release, not cancel: cancelling a key another future released crashes the scheduler
            with contextlib.suppress(Exception):
                f.release()


def _see_paths(read: list[str], write: str) -> list[str]:
    """On a worker: which of the paths it cannot use."""
    problems = [f"cannot read {p}" for p in read if not os.path.exists(p)]
    if write and not os.access(write, os.W_OK):
        problems.append(f"cannot write into {write}")
    return problems


def check_paths(client, read: list[str], write: str) -> None:
    """Every worker must see the input files and the output directory at the
    same (absolute) paths as the client: one line naming the first that does not."""
    found = client.run(_see_paths, read, write)
    for worker, problems in sorted(found.items()):
        if problems:
            raise UserError(f"Dask worker {worker} {problems[0]}: the workers need the input and the output directory "
                            "at the same paths as this machine (a shared file system)")
