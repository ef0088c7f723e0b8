"""Shared fixtures: one in-process Dask cluster for the session, the shared
datasets directory (tests that need it skip when it is absent), helpers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("SHGCN_SHARED_DATASETS", REPO.parent / "shared" / "datasets"))


@pytest.fixture(scope="session")
def client():
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address="127.0.0.1:0") as cluster, \
            Client(cluster) as c:
        yield c


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not (SHARED / "README.md").exists():
        pytest.skip(f"shared datasets not found at {SHARED}")
    return SHARED


def run_cli(*args: str, cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run ``python -m shgcn.pipeline ARGS`` and capture its output."""
    return subprocess.run([sys.executable, "-m", "shgcn.pipeline", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=timeout)
