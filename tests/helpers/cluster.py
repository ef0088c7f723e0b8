"""An external Dask cluster for tests: a scheduler and worker processes."""

import json
import subprocess
import sys
import time
from pathlib import Path


class External:
    """A scheduler and two worker processes on loopback, started from their
    own working directory (so relative paths of the client mean nothing there)."""

    def __init__(self, root: Path, workers: int = 2, wrap: tuple[str, ...] = (), preload: str | None = None):
        """``wrap``: a command the workers run in (e.g. ``unshare ... sh -c``);
        ``preload``: a module each worker loads (``dask worker --preload``)."""
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        sfile = root / "scheduler.json"
        bin_ = Path(sys.executable).parent
        self.procs = [subprocess.Popen([str(bin_ / "dask"), "scheduler", "--host", "127.0.0.1", "--port", "0",
                                        "--dashboard-address", "127.0.0.1:0", "--scheduler-file", str(sfile)],
                                       cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
        deadline = time.time() + 60
        while not sfile.exists() and time.time() < deadline:
            time.sleep(0.2)
        time.sleep(0.5)
        self.address = json.loads(sfile.read_text())["address"]
        extra = ["--preload", preload] if preload else []
        self.workers = [subprocess.Popen([*wrap, str(bin_ / "dask"), "worker", self.address, "--nthreads", "1",
                                          "--host", "127.0.0.1", "--no-nanny", "--memory-limit", "0",
                                          "--dashboard-address", "127.0.0.1:0", *extra],
                                         cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                        for _ in range(workers)]
        self.procs += self.workers
        from distributed import Client

        with Client(self.address, timeout="30s") as c:
            c.wait_for_workers(workers, timeout=60)

    def close(self):
        for p in self.procs:
            p.kill()
            p.wait(timeout=60)
