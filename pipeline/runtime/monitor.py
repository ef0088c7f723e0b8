"""What a build shows while it runs and records when it is done: the wall
time of each stage, a heartbeat log line while a stage runs, a progress bar
per stage, and the peak memory of every process that works (client,
scheduler, each worker, each partitioner child) per stage.

Peak memory per stage: at the start of a stage every process resets its
kernel high-water mark (``/proc/self/clear_refs``, Linux); at the end each
reports ``VmHWM``. Where that is not available the figure is the process's
peak so far (``getrusage``), a running maximum. A stage may mark when its
partitioners start (:meth:`Monitor.partitioning_starts`): the processes'
peaks from then on are recorded apart too (``while_partitioning``), since the
build's process holds less while a child runs than before it starts.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
import time
from collections.abc import Iterator

from shgcn.core.memory import peak_resident

from .progress import REDRAW, StageBar, label

log = logging.getLogger(__name__)

CLIENT = "client"


def reset_peak() -> bool:
    """Reset this process's peak RSS (Linux); False where unsupported."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def trim_and_reset() -> bool:
    """:func:`shgcn.core.malloc.trim`, then :func:`reset_peak`."""
    from shgcn.core.malloc import trim

    trim()
    return reset_peak()


def peak_rss_mib() -> float:
    """Peak resident memory of this process since the last reset, MiB."""
    return round(peak_resident() / 2**20, 1)


class Monitor:
    """Stage clock, heartbeat and memory of a build on ``client``.

    ``heartbeat``: seconds between "still running" log lines (at least one
    every 30 s by default); ``progress``: a progress bar per stage (terminal).
    """

    def __init__(self, client, heartbeat: float = 30.0, progress: bool = False):
        self.client = client
        self.heartbeat = heartbeat
        self.progress = progress
        self.times: dict[str, float] = {}
        self.peaks: dict[str, dict[str, float]] = {}
        self.children: dict[str, float] = {}
        self.while_partitioning: dict[str, dict[str, float]] = {}  # by stage: the peaks from the mark on
        self._before: dict[str, float] | None = None  # the stage's peaks up to the mark
        self._stage: str | None = None
        self._t0: float | None = None
        self._step = ""  # what the stage runs now (a bar's name: "partition: hp")
        self._watched = self._finished = 0  # the running stage's futures: counted, never held (:meth:`watch`)
        self._generation = 0  # which stage a future's callback counts for
        self._lock = threading.Lock()
        self.news: dict[str, str] = {}  # the running stage's children's latest progress, by what they run
        self.embedded = _embedded(client)

    # --- memory of every process
    def _reset_all(self) -> None:
        """Every process's high-water mark reset, after the heap's free pages are given back (:func:`shgcn.core.malloc.trim`:
        what the stage before let go of, not what it still holds, leaves the next stage's peak)."""
        trim_and_reset()
        if self.embedded:
            return
        with contextlib.suppress(Exception):
            self.client.run(trim_and_reset)
        with contextlib.suppress(Exception):
            self.client.run_on_scheduler(trim_and_reset)

    def _peaks(self) -> dict[str, float]:
        if self.embedded:
            return {"client+scheduler+worker (one process)": peak_rss_mib()}
        out = {CLIENT: peak_rss_mib()}
        with contextlib.suppress(Exception):
            out["scheduler"] = float(self.client.run_on_scheduler(peak_rss_mib))
        with contextlib.suppress(Exception):
            for i, (_, mib) in enumerate(sorted(self.client.run(peak_rss_mib).items())):
                out[f"worker {i}"] = float(mib)
        return out

    def record_child(self, name: str, mib: float) -> None:
        """Record a partitioner child's peak memory (it reports its own)."""
        if mib:
            self.children[name] = max(self.children.get(name, 0.0), mib)

    def partitioning_starts(self) -> None:
        """Mark the moment the stage's partitioners start: the peaks so far are
        kept and every high-water mark reset, so that the stage records both
        its peaks and, in :attr:`while_partitioning`, those from here on."""
        if self._stage is None or self._before is not None:
            return
        self._before = self._peaks()
        self._reset_all()

    def _stage_peaks(self, name: str) -> dict[str, float]:
        """The stage's peak per process (the larger of before and after the mark, if any)."""
        peaks = self._peaks()
        if self._before is not None:
            self.while_partitioning[name] = dict(peaks)
            peaks = {k: max(v, self._before.get(k, 0.0)) for k, v in peaks.items()}
        self._before = None
        return peaks

    # --- stages
    def watch(self, futures: list) -> None:
        """Futures of the running stage (progress and heartbeat count them).

        Counted, not held: each is kept by its done-callback until it
        finishes, then let go. A list of them held to the stage's end kept
        every intermediate result it named on the workers (the ingest's
        vertex ids of every chunk, held through the whole ingest)."""
        gen = self._generation
        with self._lock:
            self._watched += len(futures)
        for f in futures:
            f.add_done_callback(functools.partial(self._one_finished, gen))

    def _one_finished(self, generation: int, _future) -> None:
        with self._lock:
            if generation == self._generation:  # not a future of a stage that has ended
                self._finished += 1

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[None]:
        self._stage, self._step = name, ""
        with self._lock:
            self._generation += 1
            self._watched = self._finished = 0
        self.children, self.news, self._before = {}, {}, None
        self._reset_all()
        self._listen(True)
        stop = threading.Event()
        bar = StageBar(name) if self.progress else None
        beat = threading.Thread(target=self._beat, args=(name, stop, bar), daemon=True, name=f"heartbeat-{name}")
        t0 = self._t0 = time.perf_counter()
        beat.start()
        try:
            yield
        finally:
            stop.set()
            beat.join()
            self._listen(False)
            self._settle()
            if bar is not None:
                bar.close(*self._counts(), self._step)
        self.times[name] = round(time.perf_counter() - t0, 3)
        peaks = self._stage_peaks(name)
        for child, mib in self.children.items():
            peaks[f"child {child}"] = mib
        self.peaks[name] = peaks
        log.info("stage %s: %.2f s, peak memory %s", name, self.times[name],
                 ", ".join(f"{k} {v:,.0f} MiB" for k, v in peaks.items()))

    def snapshot(self) -> None:
        """Record the running stage's time and memory so far (its end
        overwrites them)."""
        if self._stage is not None and self._t0 is not None:
            self.times[self._stage] = round(time.perf_counter() - self._t0, 3)
            self.peaks[self._stage] = self._peaks()

    def _settle(self, timeout: float = 1.0) -> None:
        """Wait (briefly) for the done-callbacks of what has finished: they run on Dask's callback thread, a
        moment after the futures the stage waited for, and the stage's last line counts them."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            done, total = self._counts()
            if done >= total:
                return
            time.sleep(0.01)

    def _counts(self) -> tuple[int, int]:
        with self._lock:
            return self._finished, self._watched

    def _beat(self, name: str, stop: threading.Event, bar: StageBar | None) -> None:
        """The stage's clock: the bar redrawn every half second (elapsed time
        and spinner move even while one long task runs), and a heartbeat log
        line every ``heartbeat`` seconds, printed above the bar."""
        t0 = last = time.perf_counter()
        while not stop.wait(REDRAW if bar is not None else self.heartbeat):
            done, total = self._counts()
            news = "; ".join(f"{what}: {text}" for what, text in sorted(self.news.items()))
            if bar is not None:
                bar.show(done, total, f"{self._step} ({news})" if news else self._step)
            now = time.perf_counter()
            if now - last >= self.heartbeat - 1e-3:
                last = now
                log.info("stage %s: running for %.0f s (%d of %d tasks done)%s", label(name, self._step), now - t0,
                         done, total, f"; {news}" if news else "")

    def _listen(self, on: bool) -> None:
        """Subscribe to (or leave) the children's progress events (:func:`.child.forward`) for the stage."""
        from .child import PROGRESS_TOPIC

        with contextlib.suppress(Exception):  # informational only: a client without events shows none
            if on:
                self.client.subscribe_topic(PROGRESS_TOPIC, self._on_news)
            else:
                self.client.unsubscribe_topic(PROGRESS_TOPIC)

    def _on_news(self, event) -> None:
        """A progress event: (timestamp, {"what": ..., "text": ...})."""
        msg = event[1] if isinstance(event, tuple) else event
        if isinstance(msg, dict) and "what" in msg:
            self.news[str(msg["what"])] = str(msg.get("text", ""))

    def bar(self, futures: list, name: str) -> None:
        """Show ``futures`` as the stage's running step ``name``; on a terminal
        (``progress``), wait for them while the stage's bar shows them."""
        self.watch(futures)
        self._step = name
        if self.progress and futures:
            from distributed import wait

            wait(futures)

    def peak_overall(self) -> float:
        return max((v for p in self.peaks.values() for v in p.values()), default=0.0)


def _embedded(client) -> bool:
    try:
        workers = client.scheduler_info()["workers"]
        return bool(workers) and all(str(w).startswith("inproc://") for w in workers)
    except Exception:  # noqa: BLE001 - informational only
        return False
