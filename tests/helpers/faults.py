"""Helpers of the fuzz and fault suite (tests/faults): running as a user that
obeys file modes, a pseudo-terminal, small Planetoid files, processes."""

from __future__ import annotations

import os
import pickle
import select
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np


def obeying_file_modes(cmd: list[str]) -> list[str]:
    """``cmd`` run so that a file's mode applies to it: as root (which may
    read anything), with the capabilities that bypass modes dropped."""
    if os.geteuid() != 0:
        return cmd
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        import pytest

        pytest.skip("running as root without setpriv: a file mode cannot deny this user anything")
    return [setpriv, "--bounding-set", "-dac_override,-dac_read_search", *cmd]


def planetoid(directory: Path, name: str = "t", **objects) -> Path:
    """A small valid Planetoid dataset ``ind.NAME.*`` (6 vertices, 3 classes)
    in ``directory``; ``objects`` replace a file's object (``graph=...``), or
    its bytes when given bytes. Returns the path of ``ind.NAME.graph``."""
    eye = np.eye(3, dtype=np.float32)
    files = {"x": np.ones((2, 4), np.float32), "y": eye[[0, 1]], "allx": np.ones((4, 4), np.float32),
             "ally": eye[[0, 1, 2, 0]], "tx": np.ones((2, 4), np.float32), "ty": eye[[1, 2]],
             "graph": {0: [1, 2], 1: [0], 2: [0, 3], 3: [2, 4], 4: [3, 5], 5: [4]}}
    files.update(objects)
    for ext, obj in files.items():
        data = obj if isinstance(obj, bytes) else pickle.dumps(obj, protocol=4)  # 2 writes bytes through _codecs
        (directory / f"ind.{name}.{ext}").write_bytes(data)
    (directory / f"ind.{name}.test.index").write_text(objects.get("test_index", "4\n5\n"))
    return directory / f"ind.{name}.graph"


def run_in_pty(cmd: list[str], timeout: float, env: dict | None = None) -> tuple[int, bytes]:
    """Run ``cmd`` with stdout and stderr on a pseudo-terminal (as a user's
    terminal); returns its exit code and everything it drew."""
    master, slave = os.openpty()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    out = bytearray()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # the terminal closed: the command ended
                    break
                if not chunk:
                    break
                out += chunk
            elif proc.poll() is not None:
                break
        return proc.wait(timeout=max(1.0, deadline - time.monotonic())), bytes(out)
    finally:
        proc.kill()
        os.close(master)


def processes(fragment: str) -> dict[int, str]:
    """pid -> command line of the processes whose command line holds ``fragment``."""
    out = {}
    for d in Path("/proc").glob("[0-9]*"):
        try:
            cmdline = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if fragment in cmdline and str(os.getpid()) != d.name:
            out[int(d.name)] = cmdline
    return out


def parent_of(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("PPid:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def environ_of(pid: int) -> dict[str, str]:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    return dict(item.split("=", 1) for item in raw.decode(errors="replace").split("\0") if "=" in item)


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"
