"""Shared helpers of the benchmarks: machine and version facts, and writing
one named section of benchmarks/RESULTS.md (other sections are kept)."""

from __future__ import annotations

import datetime as _dt
import importlib.metadata as md
import os
import platform
import re
import shlex
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("SHGCN_SHARED_DATASETS", REPO.parent / "shared" / "datasets"))


def machine() -> str:
    mem = "?"
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem = f"{int(line.split()[1]) / 2**20:.1f} GiB"
    except OSError:
        pass
    cpu = platform.processor() or platform.machine()
    return f"{os.cpu_count()} cores ({cpu}), {mem} memory, {platform.system()} {platform.release()}"


def versions(*pkgs: str) -> str:
    out = [f"python {platform.python_version()}"]
    for p in ("shgcn", "numpy", "scipy", "dask", "zarr", "pymetis", "mtkahypar", "mpi4py", "mpich", *pkgs):
        try:
            out.append(f"{p} {md.version(p)}")
        except md.PackageNotFoundError:
            pass
    return ", ".join(dict.fromkeys(out))


def header(title: str) -> str:
    cmd = "python " + shlex.join([os.path.relpath(sys.argv[0], REPO), *sys.argv[1:]])
    return (f"## {title}\n\n- command: `{cmd}`\n- date: {_dt.datetime.now(_dt.UTC):%Y-%m-%d %H:%M} UTC\n"
            f"- machine: {machine()}\n- versions: {versions()}\n")


def write_section(title: str, body: str) -> None:
    """Replace (or append) the section ``## title`` of RESULTS.md."""
    intro = "# Benchmark results\n\nWritten by the scripts in benchmarks/; each section says how it was made.\n"
    text = RESULTS.read_text() if RESULTS.exists() else intro
    section = header(title) + "\n" + body.rstrip() + "\n"
    pattern = re.compile(rf"^## {re.escape(title)}\n.*?(?=^## |\Z)", re.S | re.M)
    text = pattern.sub(lambda _: section + "\n", text) if pattern.search(text) else text.rstrip() + "\n\n" + section
    RESULTS.write_text(text)
    print(section)


def table(rows: list[dict], cols: list[tuple[str, str]]) -> str:
    head = "| " + " | ".join(h for _, h in cols) + " |\n|" + "---|" * len(cols) + "\n"
    return head + "".join("| " + " | ".join(str(r.get(k, "")) for k, _ in cols) + " |\n" for r in rows)


def build_store(source: str, out: Path, parts: int, *args: str) -> None:
    """``pipeline build SOURCE --parts P --out OUT ARGS`` in a fresh process."""
    import subprocess
    subprocess.run([sys.executable, "-m", "shgcn.pipeline", "--quiet", "build", source, "--parts", str(parts),
                    "--out", str(out), *args], check=True, capture_output=True, text=True)


def store_info(path: Path) -> dict:
    """``pipeline info PATH --json``."""
    import json
    import subprocess
    return json.loads(subprocess.run([sys.executable, "-m", "shgcn.pipeline", "info", str(path), "--json"], check=True,
                                     capture_output=True, text=True).stdout)


def mpirun() -> str:
    """The mpirun next to this Python (the mpich wheel's), else the one on PATH."""
    local = Path(sys.executable).parent / "mpirun"
    return str(local) if local.exists() else "mpirun"
