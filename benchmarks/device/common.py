"""What the device run's parts share: where the prepared folder's things are, the sizes of a real run and of a
dry run, and writing a part's JSON so that a run killed mid-way leaves a whole file."""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.common.results import versions

PREPARED = "prepared.json"
STORES = "stores.tar.xz"
WHEELS = "wheels"
RUN_SH = "run.sh"
LIMIT_MIB = 60  # what the device tool carries is 64 MiB in all
PARTS = ("gpu", "cpu", "calibration")
SHARES = {"gpu": 0.5, "cpu": 0.4, "calibration": 0.10}  # of the budget left when each part starts


@dataclass(frozen=True)
class Sizes:
    """The sizes of a run: the R-MAT scale of the stores, their part counts, the widths, epochs and threads."""
    scale: int
    parts: tuple[int, ...]
    hidden: int
    gpu_epochs: int
    gat_epochs: int
    cpu_epochs: int
    skip: int
    threads: tuple[int, ...]
    sweep_epochs: int
    cores: int  # P x T of the splits
    calibration_ranks: int
    features: int = 32
    classes: int = 16


FULL = Sizes(scale=16, parts=(1, 2, 4, 8, 16), hidden=256, gpu_epochs=40, gat_epochs=30, cpu_epochs=8, skip=10,
             threads=(1, 2, 4, 8, 16), sweep_epochs=4, cores=16, calibration_ranks=16)
DRY = Sizes(scale=8, parts=(1, 2), hidden=16, gpu_epochs=4, gat_epochs=4, cpu_epochs=4, skip=1, threads=(1, 2),
            sweep_epochs=3, cores=2, calibration_ranks=2)


def sizes(dry_run: bool) -> Sizes:
    return DRY if dry_run else FULL


def store_name(scale: int, parts: int) -> str:
    return f"rmat{scale}-p{parts}.zarr"


def build_command(scale: int, parts: int, out: Path, features: int = 32, classes: int = 16) -> list[str]:
    """``pipeline build`` of the R-MAT store of ``parts`` parts (rp: the partition does not matter here)."""
    return [sys.executable, "-m", "shgcn.pipeline", "--quiet", "build", f"rmat:scale={scale},edge_factor=8,seed=1",
            "--parts", str(parts), "--model", "rp", "--features", f"random:{features}", "--feature-dtype", "float16",
            "--labels", f"random:{classes}", "--out", str(out), "--overwrite"]


def now() -> str:
    return f"{_dt.datetime.now(_dt.UTC):%Y-%m-%d %H:%M} UTC"


def write_json(path: Path, doc: dict[str, Any]) -> None:
    """``doc`` into ``path`` whole or not at all (a temporary file renamed over it)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1, default=str) + "\n")
    os.replace(tmp, path)


def read_prepared(folder: Path) -> dict[str, Any]:
    return json.loads((folder / PREPARED).read_text())


def part_args(doc: str | None, argv: list[str] | None = None, budget: float = 216.0):
    """A part's command line (``--stores``, ``--out``, ``--budget`` seconds, ``--dry-run``), parsed."""
    import argparse

    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--stores", type=Path, required=True, help="the unpacked stores of prepare")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--budget", type=float, default=budget, help="seconds for the whole part")
    p.add_argument("--dry-run", action="store_true")
    return p.parse_args(argv)


def facts() -> dict[str, Any]:
    """This machine as a part records it: CPU, cores (this process's affinity), memory, OS, Python."""
    from benchmarks.training.gpu_bench import cores, cpu_model, git_rev, memory_gib

    mem = memory_gib()
    return {"cpu": cpu_model(), "cores": cores(), "cpu_count": os.cpu_count(), "memory_gib": mem,
            "os": f"{platform.system()} {platform.release()}", "python": platform.python_version(),
            "shgcn_rev": git_rev(), "load": list(os.getloadavg())}


def stop_on_signals() -> None:
    """SIGTERM and SIGINT raise KeyboardInterrupt here, whatever this process inherited (a shell's background job
    starts with SIGINT ignored): the driver's stop reaches the part's ``finally``, which kills its running child's
    group and writes what it measured."""
    import signal

    def stop(signum, frame) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)


class Part:
    """A part's JSON: its envelope (part, dry run, command, date, machine, budget) and what it measured so far,
    written again after every measurement (:meth:`save`)."""

    def __init__(self, name: str, out: Path, *, dry_run: bool, budget: float, extra: dict[str, Any] | None = None):
        self.path = out / f"{name}.json"
        self.t0 = time.perf_counter()
        self.budget = budget
        self.doc: dict[str, Any] = {"part": name, "dry_run": dry_run, "complete": False,
                                    "command": " ".join(["python", "-m", f"benchmarks.device.{name}", *sys.argv[1:]]),
                                    "date": now(), "budget_s": budget, "seconds": 0.0, "machine": facts(),
                                    "versions": versions("torch", "torch_geometric", "numba"),
                                    **(extra or {})}
        self.save()

    def left(self) -> float:
        return self.budget - (time.perf_counter() - self.t0)

    def save(self, complete: bool = False) -> None:
        self.doc["seconds"] = round(time.perf_counter() - self.t0, 1)
        self.doc["complete"] = complete
        write_json(self.path, self.doc)
