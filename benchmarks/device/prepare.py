"""``python -m benchmarks.device prepare DIR``: everything the GPU machine needs and lacks, into DIR.

- ``DIR/wheels/``: the store reader's wheels (zarr, numcodecs, donfig, google-crc32c, PyYAML) for the GPU
  machine's Python (``--python-version``, default 3.12) and shgcn's own, made by
  ``benchmarks/training/gpu_wheels.sh`` (its pins); ``--wheels-from FOLDER`` copies a folder of them instead;
- ``DIR/stores.tar.xz``: the R-MAT stores (scale 16, 1, 2, 4, 8 and 16 parts; the dry run: scale 8, 1 and 2
  parts), built by ``pipeline build`` and packed with xz's largest dictionary (the stores share their graph);
- ``DIR/run.sh`` (benchmarks/device/run.sh) and ``DIR/prepared.json`` (what was prepared, for run.sh).

Then the sizes are checked: DIR at most ``--limit-mib`` (60; the device tool carries 64 MiB) or exit 2.
DIR should be git-ignored (``.device/`` is): the device tool carries ignored paths only when named in ``carry``.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.common import REPO
from benchmarks.device.common import (
    LIMIT_MIB,
    PREPARED,
    RUN_SH,
    STORES,
    WHEELS,
    build_command,
    now,
    sizes,
    store_name,
    write_json,
)

log = logging.getLogger("benchmarks.device.prepare")
WANTED = ("zarr", "numcodecs", "donfig", "google_crc32c", "pyyaml", "shgcn")  # wheel name prefixes, lowercase


class PrepareError(Exception):
    """What stops a prepare: said in one line, exit 2."""


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def missing_wheels(names: list[str]) -> list[str]:
    """The packages of :data:`WANTED` that none of the wheel file ``names`` holds."""
    have = {n.split("-", 1)[0].lower() for n in names if n.endswith(".whl")}
    return [w for w in WANTED if w not in have]


def ignored(path: Path) -> bool | None:
    """Whether git ignores ``path`` in this checkout (None: outside it, or no git)."""
    try:
        path.resolve().relative_to(REPO)
    except ValueError:
        return None
    try:
        res = subprocess.run(["git", "-C", str(REPO), "check-ignore", "-q", str(path.resolve())], timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return res.returncode == 0 if res.returncode in (0, 1) else None


def wheels(dest: Path, python_version: str, wheels_from: Path | None) -> list[str]:
    dest.mkdir(parents=True, exist_ok=True)
    if wheels_from is not None:
        if not wheels_from.is_dir():
            raise PrepareError(f"--wheels-from {wheels_from}: no such folder")
        for w in sorted(wheels_from.glob("*.whl")):
            shutil.copy2(w, dest / w.name)
    else:
        # the script's python3 is this Python (its pip; a test may run without the environment activated)
        env = {**os.environ, "WHL_DIR": str(dest.resolve()),
               "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])}
        res = subprocess.run(["bash", str(REPO / "benchmarks" / "training" / "gpu_wheels.sh"), python_version],
                             env=env, capture_output=True, text=True, timeout=900)
        if res.returncode != 0:
            tail = " / ".join((res.stderr.strip() or res.stdout.strip()).splitlines()[-2:])
            raise PrepareError(f"gpu_wheels.sh {python_version} failed (exit {res.returncode}): {tail}")
    names = sorted(p.name for p in dest.glob("*.whl"))
    gone = missing_wheels(names)
    if gone:
        raise PrepareError(f"{dest}: no wheel of {', '.join(gone)}")
    return names


def stores(dest: Path, scale: int, parts: tuple[int, ...], features: int, classes: int) -> dict[str, str]:
    """Build the stores in a temporary folder and pack them into ``dest`` (tar, xz preset 9: a 64 MiB dictionary,
    so the stores' common arrays are stored about once)."""
    names = {str(p): store_name(scale, p) for p in parts}
    with tempfile.TemporaryDirectory(prefix="shgcn-prepare-") as tmp:
        for p in parts:
            out = Path(tmp) / names[str(p)]
            log.info("building %s", out.name)
            res = subprocess.run(build_command(scale, p, out, features, classes), capture_output=True, text=True,
                                 timeout=1800)
            if res.returncode != 0:
                tail = " / ".join((res.stderr.strip() or res.stdout.strip()).splitlines()[-2:])
                raise PrepareError(f"pipeline build of {out.name} failed (exit {res.returncode}): {tail}")
        log.info("packing the stores into %s", dest.name)
        with tarfile.open(dest, "w:xz", preset=9) as tar:
            for p in parts:
                tar.add(Path(tmp) / names[str(p)], arcname=names[str(p)])
    return names


def prepare(folder: Path, *, dry_run: bool = False, python_version: str = "3.12", wheels_from: Path | None = None,
            limit_mib: float = LIMIT_MIB) -> dict:
    """Fill ``folder``; return what ``prepared.json`` says. Raises :class:`PrepareError`."""
    if folder.exists() and not folder.is_dir():
        raise PrepareError(f"{folder}: exists and is not a folder")
    folder.mkdir(parents=True, exist_ok=True)  # first: git tells an ignored folder by its being one
    if ignored(folder) is False:
        log.warning("%s is not git-ignored: it would be committed and carried as part of the working tree "
                    "(put it under .device/)", folder)
    for old in (folder / WHEELS, folder / "out"):
        shutil.rmtree(old, ignore_errors=True)
    sz = sizes(dry_run)
    names = wheels(folder / WHEELS, python_version, wheels_from)
    stored = stores(folder / STORES, sz.scale, sz.parts, sz.features, sz.classes)
    shutil.copy2(REPO / "benchmarks" / "device" / RUN_SH, folder / RUN_SH)
    (folder / RUN_SH).chmod(0o755)
    doc: dict[str, Any] = {"dry_run": dry_run, "date": now(), "repo": str(REPO), "python_version": python_version,
           "wheels": names, "stores": stored, "scale": sz.scale, "limit_mib": limit_mib}
    write_json(folder / PREPARED, doc)
    total = folder_bytes(folder)
    doc["bytes"] = {"wheels": folder_bytes(folder / WHEELS), "stores": (folder / STORES).stat().st_size, "total": total}
    write_json(folder / PREPARED, doc)
    total = folder_bytes(folder)
    if total > limit_mib * 2**20:
        raise PrepareError(f"{folder}: {total / 2**20:.1f} MiB, above the limit of {limit_mib:g} MiB "
                           f"(wheels {doc['bytes']['wheels'] / 2**20:.1f}, stores {doc['bytes']['stores'] / 2**20:.1f})")
    print(f"prepared {folder}: {total / 2**20:.1f} MiB of at most {limit_mib:g} (wheels "
          f"{doc['bytes']['wheels'] / 2**20:.1f} MiB for Python {python_version}, stores "
          f"{doc['bytes']['stores'] / 2**20:.1f} MiB: {', '.join(stored.values())}); on the GPU machine: "
          f"bash {folder}/{RUN_SH}{' --dry-run' if dry_run else ''}", file=sys.stderr)
    return doc
