"""``pipeline simulate`` refuses what it cannot predict with one line, exit 2 (issue 51, item 5): a machine spec
or file with a bad figure, an empty ``--exchange`` or ``--algorithm``, and an algorithm that has no way to run
on the ranks asked for (a header and nothing else before)."""

import json
import os

import pytest
from helpers import run_main

from shgcn.core.machine import _DIR


def refused(res, line: str) -> None:
    assert (res.returncode, res.stdout, res.stderr) == (2, "", f"pipeline: error: {line}\n")


@pytest.mark.parametrize("args, line", [
    (["--machine", "link=0GB/s"],
     "machine spec: 'link=0GB/s': the rate '0GB/s' must be finite and above 0 (no link: link=none)"),
    (["--machine", "ranks=abc"], "machine spec: 'ranks=abc': must be a whole number from 1 to 1,048,576"),
    (["--machine", "compute=this*-2"], "machine spec: 'compute=this*-2': the compute factor -2.0 must be from 1e-06 to 1e+06"),
    (["--exchange", ""], "--exchange '': name at least one of p2p, alltoallv, bcast, node"),
    (["--algorithm", ""], "--algorithm '': name at least one of 1d, 1.5d, 2d"),
    (["--algorithm", "2d", "--ranks", "3"], "nothing to predict: --algorithm 2d runs on a square number of ranks, "
                                            "and 3 is not one"),
    (["--algorithm", "1.5d", "--replication", "8"],
     "nothing to predict: --algorithm 1.5d runs on P / c parts for a --replication c > 1 that divides P, and no c of "
     "8 divides 3"),
    (["--algorithm", "1.5d", "--replication", "3", "--exchange", "node"],
     "nothing to predict: --algorithm 1.5d: --exchange node runs on --algorithm 1d only"),
])
def test_what_simulate_cannot_predict_is_one_line(built, args, line):
    refused(run_main("simulate", str(built.path), *args), line)


def test_a_machine_file_is_named_for_its_own_figures(built, tmp_path):
    d = json.loads((_DIR / "infiniband.json").read_text())
    f = tmp_path / "m.json"
    f.write_text(json.dumps({**d, "ranks_per_node": 0}))  # was blamed on a --ranks-per-node 0 never given
    refused(run_main("simulate", str(built.path), "--machine", str(f)),
            f"--machine {f}: ranks_per_node 0: must be a whole number from 1 to 1,048,576")
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)  # hung
    refused(run_main("simulate", str(built.path), "--machine", str(fifo)),
            f"--machine {fifo}: not a regular file (a directory, FIFO or device): write the machine to a file")
