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
