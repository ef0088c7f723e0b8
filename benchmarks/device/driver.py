"""``python -m benchmarks.device run DIR`` (what ``DIR/run.sh`` calls once the wheels are in place): unpack the
stores, then the parts in their fixed order (gpu, cpu, calibration), each a child process under its share of
the budget left (:data:`.common.SHARES`): time a part does not use goes to the next. A part past its time gets
SIGTERM (it kills its running child, writes what it has and stops), 20 s later SIGKILL; its JSON holds what it
measured by then either way. ``OUT/run.json``: the parts' exit codes and seconds, the machine, the budget."""

from __future__ import annotations

import json
import logging
import os
import shlex
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import REPO
from benchmarks.common.results import versions
from benchmarks.device.common import PARTS, SHARES, STORES, facts, now, read_prepared, sizes, write_json
from benchmarks.training.gpu_bench import launcher

log = logging.getLogger("benchmarks.device.driver")
GRACE = 20.0  # seconds between a part's SIGTERM and its SIGKILL
RESERVE = 15.0  # seconds of the budget kept for the end (run.json, the run tool's copy back)
CALIBRATION = REPO / "benchmarks" / "training" / "net_calibration.py"


def share(left: float, part: str, remaining: tuple[str, ...]) -> float:
    """The seconds ``part`` may take of ``left``: its share among the parts still to run (``remaining``, itself
    included)."""
    total = sum(SHARES[p] for p in remaining)
    return max(0.0, left * SHARES[part] / total)


def unpack(folder: Path, work: Path) -> Path:
    dest = work / "stores"
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(folder / STORES, "r:xz") as tar:
        tar.extractall(dest, filter="data")
    return dest


def child(cmd: list[str], timeout: float) -> tuple[int, float, str]:
    """(exit code, seconds, last lines of stderr) of ``cmd`` in a session of its own: SIGTERM at ``timeout``,
    SIGKILL to its whole group :data:`GRACE` seconds later. Its stdout goes to this process's stderr."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=sys.stderr, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _, err = proc.communicate(timeout=max(1.0, timeout))
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            _, err = proc.communicate(timeout=GRACE)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            _, err = proc.communicate(timeout=30)
    sys.stderr.write(err or "")
    tail = " / ".join((err or "").strip().splitlines()[-3:])[-400:]
    return proc.returncode, time.perf_counter() - t0, tail


def _shown(path: Path) -> str:
    try:
        return str(path.relative_to(REPO))
    except ValueError:
        return str(path)


def calibration(out: Path, budget: float, dry_run: bool, script: Path = CALIBRATION,
                module: str = "benchmarks.training.net_calibration") -> tuple[int, float, str]:
    """``mpirun -n 16 python -m benchmarks.training.net_calibration --json OUT/calibration.json`` (the dry run:
    ``-n 2 ... --quick``), or, when the checkout has no such benchmark, calibration.json saying why not. A run
    that writes no JSON leaves one with its exit code and the end of its error output."""
    path = out / "calibration.json"
    if not script.exists():
        write_json(path, {"part": "calibration", "dry_run": dry_run, "date": now(), "complete": False,
                          "skipped": f"{_shown(script)} is not in this checkout (issue 58)"})
        return 0, 0.0, "skipped"
    n = sizes(dry_run).calibration_ranks
    cmd = [*launcher(None), "-n", str(n), sys.executable, "-m", module, "--json", str(path),
           *(["--quick"] if dry_run else [])]
    path.unlink(missing_ok=True)  # an earlier run's: what is there afterwards is this run's
    started = now()
    rc, sec, tail = child(cmd, budget)
    envelope = {"part": "calibration", "dry_run": dry_run, "date": started, "complete": rc == 0, "rc": rc,
                "seconds": round(sec, 1), "command": shlex.join(["mpirun", "-n", str(n), "python", *cmd[cmd.index("-m"):]])}
    try:
        got = json.loads(path.read_text())
    except (OSError, ValueError):
        got = None
    if not isinstance(got, dict):  # none, or not what the benchmark writes
        write_json(path, {**envelope, "error": f"exit {rc} after {sec:.0f} s, no JSON: {tail}"})
    else:  # the benchmark's own figures, with the envelope the report reads
        write_json(path, {**got, **envelope})
    return rc, sec, tail


def run(folder: Path, out: Path, work: Path, *, budget: float, started: float, dry_run: bool) -> int:
    prepared = read_prepared(folder)
    if bool(prepared.get("dry_run")) != dry_run:
        was = bool(prepared.get("dry_run"))
        print(f"run.sh: error: {folder} was prepared {'with' if was else 'without'} --dry-run; run it "
              f"{'with' if was else 'without'} --dry-run, or prepare it again", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    doc: dict[str, Any] = {"part": "run", "dry_run": dry_run, "date": now(), "budget_s": budget, "prepared": prepared,
           "machine": facts(), "versions": versions("torch", "torch_geometric", "numba"), "parts": []}
    write_json(out / "run.json", doc)
    stores = unpack(folder, work)
    flag = ["--dry-run"] if dry_run else []
    for k, part in enumerate(PARTS):
        left = budget - (time.time() - started) - RESERVE
        mine = share(left, part, PARTS[k:])
        if mine < 10:
            entry = {"part": part, "skipped": f"the budget is spent ({left:.0f} s left)"}
            doc["parts"].append(entry)
            write_json(out / "run.json", doc)
            continue
        print(f"[{time.time() - started:5.0f} s] part {part}: {mine:.0f} s", file=sys.stderr, flush=True)
        if part == "calibration":
            rc, sec, tail = calibration(out, mine, dry_run)
        else:
            rc, sec, tail = child([sys.executable, "-m", f"benchmarks.device.{part}", "--stores", str(stores),
                                   "--out", str(out), "--budget", f"{mine:.0f}", *flag], mine + GRACE)
        doc["parts"].append({"part": part, "budget_s": round(mine), "seconds": round(sec, 1), "rc": rc,
                             **({"stderr_tail": tail} if rc else {})})
        doc["seconds"] = round(time.time() - started, 1)
        write_json(out / "run.json", doc)
    doc["seconds"] = round(time.time() - started, 1)
    doc["complete"] = True
    write_json(out / "run.json", doc)
    print(f"[{doc['seconds']:5.0f} s] done: {', '.join(p.name for p in sorted(out.glob('*.json')))} in {out}",
          file=sys.stderr)
    return 0
