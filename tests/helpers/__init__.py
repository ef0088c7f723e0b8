"""Test helpers shared by every test package: where the repository and the
shared datasets are, and how to run the ``pipeline`` command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("SHGCN_SHARED_DATASETS", REPO.parent / "shared" / "datasets"))


def run_cli(*args: str, cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run ``python -m shgcn.pipeline ARGS`` and capture its output."""
    return subprocess.run([sys.executable, "-m", "shgcn.pipeline", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=timeout)


def one_line(res, *fragments, code=2):
    """Exit ``code`` with one line on stderr naming every fragment, no traceback."""
    assert res.returncode == code, (res.returncode, res.stderr[-2000:])
    lines = [x for x in res.stderr.splitlines() if x.strip() and " INFO: " not in x and " WARNING: " not in x]
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr[-2000:]
    for f in fragments:
        assert f in lines[0], (f, lines[0])


def build_cli(*args, cwd=None, timeout=300):
    return run_cli("build", *args, cwd=cwd, timeout=timeout)
