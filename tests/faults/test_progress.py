"""The fuzz and fault suite, progress that tells the truth (issue 24, case
16): on a terminal the bar names the stage and its running step, shows the
elapsed time and keeps moving while one long partitioner runs; log lines
print above it, each on a line of its own; in a log (no terminal) there is
no bar and the heartbeat says the same."""

import re
import subprocess
import sys

import pytest
from helpers.faults import run_in_pty

SBM = "sbm:n=300,classes=3,degree=6,features=4,seed=0"

# a partitioner that takes a few seconds: rp, slowed down (the embedded cluster runs it in this process)
SLOW_RP = """
import sys, time
import shgcn.pipeline.models.rp as rp
real = rp.random_partition
def slow(n, parts, seed):
    time.sleep(4)
    return real(n, parts, seed)
rp.random_partition = slow
from shgcn.pipeline.cli import main
sys.exit(main(sys.argv[1:]))
"""

FRAME = re.compile(r"partition: rp\s+0%\|[^|]*\| 0/1 tasks \[(\d\d:\d\d), running (.)\]")


@pytest.mark.slow  # quick-suite budget: CI runs it (-m '')
def test_the_bar_moves_during_a_long_partitioner_and_logs_print_above_it(tmp_path):
    code, out = run_in_pty([sys.executable, "-c", SLOW_RP, "build", SBM, "--parts", "2", "--model", "rp",
                            "--heartbeat", "1", "--out", str(tmp_path / "s.zarr")], timeout=300)
    text = out.decode(errors="replace")
    assert code == 0, text[-3000:]
    frames = {m.groups() for m in FRAME.finditer(text)}
    assert len(frames) >= 3, text[-3000:]  # redrawn while the one task ran: the spinner turned, the clock moved
    assert len({elapsed for elapsed, _ in frames}) >= 2
    for stage in ("ingest", "normalize", "quality", "layout", "write"):
        assert re.search(rf"\r{stage}[:\s].*100%\|", text), stage
    logs = [line.rstrip("\r") for line in text.split("\n") if " INFO: " in line]  # a terminal ends lines \r\n
    assert any("stage partition: rp: running for" in line for line in logs)
    for line in logs:  # above the bar: what follows the last carriage return is the log line alone
        assert re.match(r"\d{4}-\d\d-\d\d ", line.rsplit("\r", 1)[-1].lstrip()), repr(line)
        assert "tasks [" not in line.rsplit("\r", 1)[-1]


@pytest.mark.slow
def test_a_log_gets_heartbeats_and_no_bar(tmp_path):
    res = subprocess.run([sys.executable, "-c", SLOW_RP, "build", SBM, "--parts", "2", "--model", "rp",
                          "--heartbeat", "1", "--out", str(tmp_path / "s.zarr")], capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr
    assert "tasks [" not in res.stderr and "\r" not in res.stderr
    assert re.search(r"stage partition: rp: running for \d+ s \(0 of 1 tasks done\)", res.stderr), res.stderr
