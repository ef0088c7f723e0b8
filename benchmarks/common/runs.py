"""Where things are, and the child processes the benchmarks start: a
store built by ``pipeline build``, its ``pipeline info``, the mpirun to use,
and the environment in which ``python -m benchmarks....`` finds this
package from any working directory."""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("SHGCN_SHARED_DATASETS", REPO.parent / "shared" / "datasets"))


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


def bench_env(env: dict | None = None) -> dict:
    """``env`` (default: this process's) with the repository first on PYTHONPATH, so that a child started as
    ``python -m benchmarks.<group>.<script>`` finds this package whatever its working directory (and
    whichever interpreter runs it, e.g. ``--pyg-python``)."""
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    return env
