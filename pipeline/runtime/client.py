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
from pathlib import Path
from typing import Any

from ..errors import UserError
from . import jobqueue
from .jobqueue import BatchConfig

log = logging.getLogger(__name__)

ENV_SCHEDULER = "DASK_SCHEDULER_ADDRESS"


@dataclass(frozen=True)
class ClusterConfig:
    """Attributes: scheduler (address of an existing scheduler; None: the
    ``DASK_SCHEDULER_ADDRESS`` environment variable, else an embedded
    cluster); workers (threads, or processes with ``processes``; 0 = all
    cores); dashboard_address (``HOST:PORT``, port 0 picks a free one; the
    embedded cluster's servers all bind to HOST); processes (worker processes
    instead of threads in this process); memory_limit (bytes, ``--memory-limit``:
    the embedded cluster's workers share it and spill their results to disk
    as they near it; None: Dask's default, this machine's memory. An existing
    scheduler's workers keep their own limits)."""

    scheduler: str | None = None
    workers: int = 0
    dashboard_address: str = "127.0.0.1:0"
    processes: bool = False
    memory_limit: int | None = None
    batch: BatchConfig | None = None  # workers as batch jobs (--cluster: shgcn.pipeline.runtime.jobqueue)

    def address(self) -> str | None:
        return self.scheduler or os.environ.get(ENV_SCHEDULER) or None


def reachable(address: str) -> None:
    """A TCP scheduler address that refuses connections is one line at once
    (Dask's client would retry until its timeout)."""
    import socket

    if not address.startswith("tcp://"):
        return
    host, _, port = address[len("tcp://"):].rpartition(":")
    try:
        with socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)), timeout=10):
            return
    except ValueError:
        raise UserError(f"--scheduler {address!r}: not a Dask scheduler address (expected tcp://HOST:PORT)") from None
    except OSError as e:
        raise UserError(f"cannot connect to the Dask scheduler at {address}: {e.strerror or e}") from None


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
    from distributed import Client

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
        reachable(address)
        try:
            client = Client(address, timeout="20s")
        except (OSError, TimeoutError, ValueError) as e:
            raise UserError(f"cannot connect to the Dask scheduler at {address}: {e}") from None
    else:
        host = _host_port(cfg.dashboard_address)[0]
        cluster = jobqueue.start(cfg.batch, cfg.dashboard_address) if cfg.batch else _local_cluster(cfg)
        client = Client(cluster)
    interrupted = False
    try:
        announce(f"Dask dashboard: {dashboard_link(client, None if address else host)}")
        if cfg.batch is not None and not address:
            jobqueue.wait_for_workers(client, cfg.batch)
        yield client
    except KeyboardInterrupt:  # the command ends the process at once; a graceful close would wait for busy workers
        interrupted = True
        raise
    finally:
        if not interrupted:
            _close(client, cluster)


def worker_memory(cfg: ClusterConfig, workers: int) -> tuple[int | str, dict[str, Any]]:
    """The embedded cluster's ``memory_limit`` per worker and the Dask
    configuration it is created under.

    With ``--memory-limit`` the workers share the limit, and none pauses:
    a paused worker runs nothing until its process's memory falls below the
    pause threshold, and in the in-process cluster that memory is the whole
    build's (the client's arrays too, which no spilling frees), so a pause
    could wait forever. Spilling (results to disk from 60% of the limit, by
    Dask's defaults) is what keeps a worker under it. Without a limit:
    Dask's defaults (``"auto"``: this machine's memory)."""
    if cfg.memory_limit is None:
        return "auto", {}
    return max(1, cfg.memory_limit // workers), {"distributed.worker.memory.pause": False}


def _local_cluster(cfg: ClusterConfig):
    """The embedded cluster: one worker with a thread per core in this process, or (``processes``) one worker
    process per core; every server binds to the dashboard's host."""
    import dask
    from distributed import LocalCluster

    host, port = _host_port(cfg.dashboard_address)
    cores = cfg.workers or os.cpu_count() or 1
    limit, config = worker_memory(cfg, cores if cfg.processes else 1)
    with dask.config.set(config):
        if cfg.processes:  # every server (scheduler, workers, their HTTP) on HOST
            return LocalCluster(n_workers=cores, threads_per_worker=1, processes=True, host=host,
                                dashboard_address=f"{host}:{port}", worker_dashboard_address=f"{host}:0",
                                memory_limit=limit)
        # in-process: only the dashboard listens, on HOST
        return LocalCluster(n_workers=1, threads_per_worker=cores, processes=False, memory_limit=limit,
                            dashboard_address=f"{host}:{port}", worker_dashboard_address=f"{host}:0")


def scheduler_lost(client, e: BaseException) -> bool:
    """``e`` (raised by a build on ``client``) means the scheduler is gone."""
    from distributed.comm.core import CommClosedError

    status = str(getattr(client, "status", "running"))
    return isinstance(e, CommClosedError) or "scheduler-connection-lost" in str(e) or \
        status in ("closing", "closed", "connecting")


def _close(client, cluster) -> None:
    """Close the client and the embedded cluster; a scheduler that is gone
    (killed mid-build) is not waited for, and its errors are not the user's."""
    with contextlib.suppress(Exception):
        client.close(timeout=10)
    if cluster is not None:
        with contextlib.suppress(Exception):
            cluster.close(timeout=10)


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

    def settle(self, keys: list, timeout: float = 30.0) -> bool:
        """Wait until the workers hold none of ``keys`` (futures this build
        let go of: the client tells the scheduler, which tells the workers,
        while the build goes on). Before a partitioner's child starts, what
        the build no longer needs must have left its memory, or the two
        overlap at the child's peak. True when settled; False after
        ``timeout`` seconds (a key some holder still keeps: nothing fails)."""
        import time

        wanted = [k if isinstance(k, str) else list(k) for k in keys]  # a tuple key travels as a list
        deadline = time.monotonic() + timeout
        while True:
            held = self.client.run_on_scheduler(_held_keys, keys=wanted)
            if not held or time.monotonic() > deadline:
                if held:
                    log.debug("%d of %d released keys still held after %.0f s", held, len(wanted), timeout)
                return not held
            time.sleep(0.05)

    def release(self) -> None:
        """Forget every future of this build still alive (the cluster frees their data)."""
        alive = [f for r in self._futures.values() if (f := r()) is not None]
        self._futures = {}
        for f in alive:  # release, not cancel: cancelling a key another future released crashes the scheduler
            with contextlib.suppress(Exception):
                f.release()


def _held_keys(dask_scheduler, keys: list) -> int:
    """On the scheduler: how many of ``keys`` some worker still holds in memory."""
    tasks = dask_scheduler.tasks
    return sum(1 for k in keys if (ts := tasks.get(k if isinstance(k, str) else tuple(k))) is not None and ts.who_has)


def _see_paths(read: dict[str, tuple[int, int] | None], marker: str, token: str) -> list[str]:
    """On a worker: what it does not see as the client does (an input missing
    or different, the output's working directory missing)."""
    problems = []
    for p, sig in read.items():
        try:
            st = os.stat(p)
        except OSError:
            problems.append(f"cannot read {p}")
            continue
        if sig is not None and (st.st_size, int(st.st_mtime)) != tuple(sig):
            problems.append(f"sees another {p} than this machine (its size or date differ)")
    if marker:
        try:
            seen = Path(marker).read_text() == token
        except OSError:
            seen = False
        if not seen:
            problems.append(f"does not see the store being written under {Path(marker).parent.parent.parent}")
    return problems


def signature(path: str) -> tuple[int, int] | None:
    """(size, modification second) of a file: what the workers must see too
    (None: the client does not see it; the workers must)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size, int(st.st_mtime)


def check_paths(client, read: list[str], marker: str = "") -> None:
    """Every worker must see the input files and the output being written
    (``marker``: a file in the build's partial directory, whose content only
    this build knows) at the same absolute paths as the client: one line
    naming the first worker and path that does not. Writes the marker."""
    token = uuid.uuid4().hex
    if marker:
        Path(marker).parent.mkdir(parents=True, exist_ok=True)
        Path(marker).write_text(token)
    found = client.run(_see_paths, {p: signature(p) for p in read}, marker, token)
    for worker, problems in sorted(found.items()):
        if problems:
            raise UserError(f"Dask worker {worker} {problems[0]}: the workers need the input and the output directory "
                            "at the same paths as this machine (a shared file system)")
