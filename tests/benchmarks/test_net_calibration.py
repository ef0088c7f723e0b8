"""benchmarks/training/net_calibration.py (issue 58): the patterns' messages counted by hand, the prediction
built from them, and a quick run under mpirun -n 2 that writes its rows (what the GPU machine's run calls)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from helpers import REPO
from helpers.mpi import mpirun

if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.training import net_calibration as nc  # noqa: E402


def test_the_patterns_by_hand():
    """3 ranks: the heavy rank sends 700 KB in 500 messages of 1,400 B, a light one 100 KB in 500 of 200 B, each
    spread over the others in turn."""
    m = nc.plan("unequal", 3)
    by = {r: [x for x in m if x[0] == r] for r in range(3)}
    assert len(by[0]) == 500 and {b for _, _, b in by[0]} == {1400} and sum(b for *_, b in by[0]) == 700_000
    assert len(by[1]) == 500 and {b for _, _, b in by[1]} == {200} and sum(b for *_, b in by[1]) == 100_000
    assert [d for _, d, _ in by[1][:4]] == [2, 0, 2, 0] and all(s != d for s, d, _ in m)
    r = nc.plan("reverse", 3)
    assert sum(b for s, _, b in r if s == 0) == 100_000 and sum(b for s, _, b in r if s == 2) == 700_000
    assert {b for *_, b in nc.plan("equal", 4)} == {200} and len(nc.plan("equal", 4, 0.1)) == 4 * 50


def test_the_prediction_counts_the_latency_once_and_the_overhead_per_message_on_each_end():
    """2 ranks, equal: each sends 500 messages of 200 B and receives 500: alpha + 999 x overhead of latency (each
    message sent and received), 100 KB at beta, on both ranks (no oversubscription with 2 cores or more)."""
    if (os.cpu_count() or 1) < 2:
        pytest.skip("one core: the prediction adds the oversubscription delay")
    t = nc.predicted("equal", 2, 1.0, alpha=1e-5, beta=1e-9, overhead=1e-6)
    assert t == pytest.approx(np.full(2, 1e-5 + 999e-6 + 100_000e-9))
    t = nc.predicted("equal", 2, 1.0, alpha=1e-5, beta=1e-9, overhead=None)  # every message a full latency
    assert t == pytest.approx(np.full(2, 500e-5 + 100_000e-9))


@pytest.mark.mpi
def test_a_quick_run_writes_its_rows(tmp_path):
    out = tmp_path / "calibration.json"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    res = subprocess.run([mpirun(), "-n", "2", sys.executable, "-m", "benchmarks.training.net_calibration", "--quick",
                          "--json", str(out)], capture_output=True, text=True, timeout=300, cwd=REPO, env=env)
    assert res.returncode == 0, res.stderr[-2000:]
    d = json.loads(out.read_text())
    assert [r["pattern"] for r in d["rows"]] == list(nc.PATTERNS)
    assert all(r["measured ms"] > 0 and r["predicted ms (model)"] > 0 for r in d["rows"])
    assert d["constants"]["ranks"] == 2 and d["constants"]["alpha_s"] >= 0
