"""Running the trainer in subprocesses, with or without mpirun."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import REPO

TRAIN = REPO / "trainer" / "train.py"


def mpirun() -> str:
    local = Path(sys.executable).parent / "mpirun"
    return str(local) if local.exists() else (shutil.which("mpirun") or "mpirun")


def train(ranks: int, store, *args, log=None, timeout=300, use_mpirun=True) -> subprocess.CompletedProcess:
    cmd = [sys.executable, str(TRAIN), str(store), "--quiet", *map(str, args)]
    if log is not None:
        cmd += ["--log", str(log)]
    if use_mpirun:
        cmd = [mpirun(), "-n", str(ranks), *cmd]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)


def read_log(path):
    lines = [json.loads(line) for line in Path(path).read_text().splitlines()]
    return lines[0], [r for r in lines[1:] if r["type"] == "epoch"]
