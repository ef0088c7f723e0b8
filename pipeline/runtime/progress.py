"""The progress bar of a stage on a terminal (tqdm): the stage and its
running step, the tasks done of those started, the elapsed time, and a
spinner that turns every time the bar is redrawn (every half second), so a
single long task (a partitioner) shows that the build is alive. Log lines
are printed above the bar (``logging_redirect_tqdm``), never through it."""

from __future__ import annotations

import shutil
import sys
import threading

SPINNER = "|/-\\"
REDRAW = 0.5  # seconds between redraws


def label(stage: str, step: str) -> str:
    """``partition: hp`` for the step ``partition: hp`` or ``hp`` of stage ``partition``."""
    return step if step.startswith(stage) else f"{stage}: {step}" if step else stage


class StageBar:
    """One stage's bar; :meth:`show` redraws it, :meth:`close` leaves it on
    its last state. Thread-safe (the monitor's clock thread redraws)."""

    def __init__(self, stage: str, file=None):
        from tqdm import tqdm
        from tqdm.contrib.logging import logging_redirect_tqdm

        self.stage = stage
        self._lock = threading.Lock()
        self._turn = 0
        size = shutil.get_terminal_size((100, 24))  # a terminal that says 0 x 0 (a pty): 100 x 24, else tqdm hides it
        self._bar = tqdm(total=0, desc=stage, file=file or sys.stderr, ncols=max(size.columns, 60),
                         nrows=max(size.lines, 24), leave=True,
                         bar_format="{desc} {percentage:3.0f}%|{bar:24}| {n}/{total} tasks [{elapsed}{postfix}]")
        self._redirect = logging_redirect_tqdm()  # log lines above the bar
        self._redirect.__enter__()

    def show(self, done: int, total: int, step: str = "", running: bool = True) -> None:
        with self._lock:
            self._turn += 1
            self._bar.total = max(total, done)
            self._bar.n = done
            self._bar.set_description_str(label(self.stage, step), refresh=False)
            self._bar.set_postfix_str(f"running {SPINNER[self._turn % len(SPINNER)]}" if running and done < total
                                      else "", refresh=False)
            self._bar.refresh()

    def close(self, done: int, total: int, step: str = "") -> None:
        self.show(done, total, step, running=False)
        with self._lock:
            self._redirect.__exit__(None, None, None)
            self._bar.close()
