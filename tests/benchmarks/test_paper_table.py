"""benchmarks/training/paper_table.py's pure parts (issue 53): the preset with one cited constant replaced, and
rp with its busiest rank scaled (the graph itself is the benchmark's, not a test's)."""

import sys
from dataclasses import replace

import numpy as np
import pytest
from helpers import REPO
from helpers.costs import machine

if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.training import paper_table as pt  # noqa: E402
from shgcn.core.costs import Job  # noqa: E402
from shgcn.core.machine import machine_of  # noqa: E402
from shgcn.core.partition import PartitionCost  # noqa: E402


def test_machine_with_replaces_one_constant_at_a_time():
    base = machine_of("paper")
    assert pt.machine_with(base, {}) == base
    m = pt.machine_with(base, {"inter latency us": 2.9})
    assert m.inter.alpha == pytest.approx(2.9e-6) and m.inter.beta == base.inter.beta and m.intra == base.intra
    m = pt.machine_with(base, {"link GB/s": 4.95, "contention": "maxmin", "intra GB/s": 4.0})
    assert (m.link_rate, m.contention) == (4.95e9, "maxmin") and m.intra.beta == pytest.approx(1 / 4e9)
    assert pt.machine_with(base, {"compute factor": 2.0}).compute.spmm == pytest.approx(2 * base.compute.spmm)
    assert {r.name for r in pt.RANGES} >= {"contention", "link GB/s", "inter latency us", "hidden"}
    assert all(r.values[0] == v for r, v in zip(pt.RANGES[1:4], (0.98, 12.32, 12.30)))  # the preset's first
    assert pt.RANGES[0].values[0] == "fluid" and pt.machine_with(base, {"message rate M/s": None}).message_rate is None
    assert pt.machine_with(base, {"message rate M/s": 15.9}).message_rate == pytest.approx(15.9e6)


def test_no_target_decides_met():
    """No target derived from the paper's answer (issue 58): the rows carry the model's R, the paper's and the gap."""
    assert not hasattr(pt, "TARGETS")
    v = np.full((8, 8), 10)
    v[0] = 12
    np.fill_diagonal(v, 0)
    rp = PartitionCost("rp", v, np.full(8, 50), np.full(8, 20), np.zeros(8, np.int64), False)
    m = machine(ranks_per_node=4, link_rate=100.0)
    mine, theirs = pt.ratio_rows({"rp": rp}, pt.paper_rows(rp), Job((2, 2, 2)), m)
    assert all("met" not in r and "target" not in r for r in mine + theirs)
    assert [r["paper R"] for r in theirs] == ["0.75", "2.02"]
    assert all(float(r["gap"]) == pytest.approx(float(r["R"]) - float(r["paper R"]), abs=2e-3) for r in theirs)


def test_the_busiest_rank_scaled_rises_with_its_share_of_the_link():
    """4 ranks, 2 a node; rank 0 sends the most. Scaled 1x to 3x with the others as they are, its link term grows
    by the same bytes / share each time, and the epoch with it."""
    v = np.array([[0, 2, 4, 4], [1, 0, 1, 1], [1, 1, 0, 1], [1, 1, 1, 0]])
    rp = PartitionCost("rp", v, np.full(4, 5), np.full(4, 2), np.zeros(4, np.int64), False)
    m = replace(machine(ranks_per_node=2, link_rate=100.0), contention="share")
    rows = pt.busiest_rows(rp, Job((2, 2, 2)), m, scales=(1, 2, 3))
    link = [float(r["its link send ms"]) for r in rows]
    assert [r["busiest rank's rows per SpMM"] for r in rows] == ["10", "20", "30"]
    assert link[2] - link[1] == pytest.approx(link[1] - link[0], rel=1e-3) and link[1] > link[0]
    assert [float(r["epoch / 1x"]) for r in rows][0] == 1.0 and float(rows[2]["epoch / 1x"]) > 1.0
