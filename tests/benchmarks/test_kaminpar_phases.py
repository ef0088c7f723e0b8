"""benchmarks/build/kaminpar_phases.py: the edge cut and work imbalance it reports, read from a ParHIP file by
row pieces, against a direct count; one small run of the phases (KaMinPar, the rebalance)."""

import subprocess
import sys

import numpy as np
import scipy.sparse as sp
from helpers import REPO

if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.build import kaminpar_phases as kp  # noqa: E402


def graph_file(tmp_path, n=300, seed=0):
    from shgcn.pipeline.models.gp import symmetric_pattern, write_parhip

    rng = np.random.default_rng(seed)
    a = sp.random(n, n, density=0.03, random_state=seed, format="csr")
    weights = rng.integers(1, 5, n)
    path = str(tmp_path / "g.parhip")
    write_parhip(a, weights, path)
    return path, symmetric_pattern(a), weights


def test_edge_cut_by_pieces_is_the_direct_count(tmp_path):
    path, (xadj, adjncy), _ = graph_file(tmp_path)
    part = np.random.default_rng(1).integers(0, 4, xadj.size - 1).astype(np.int32)
    src = np.repeat(np.arange(xadj.size - 1), np.diff(xadj))
    direct = int(np.count_nonzero(part[src] != part[adjncy])) // 2
    assert kp.entries(path) == adjncy.size
    assert kp.edge_cut(path, part) == direct
    assert kp.edge_cut(path, part, piece=7) == direct  # many pieces, some of one row


def test_work_imbalance_is_the_heaviest_part_over_the_mean(tmp_path):
    path, (xadj, _), w = graph_file(tmp_path)
    part = (np.arange(xadj.size - 1) % 3).astype(np.int32)
    load = np.bincount(part, weights=w, minlength=3)
    assert np.isclose(kp.work_imbalance(path, part, 3), load.max() / load.mean() - 1)


def test_the_phases_run_and_report_each_peak(tmp_path):
    # in a process of its own: the phases reset the process's high-water mark (/proc/self/clear_refs)
    path, _, _ = graph_file(tmp_path)
    run = subprocess.run([sys.executable, "-m", "benchmarks.build.kaminpar_phases", path, "--parts", "4",
                          "--kaminpar-eps", "0.03", "--eps", "0.03", "--cut", "--nnz", "3000"], cwd=REPO,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    out = run.stdout
    for phase in ("load: peak ", "partition: peak ", "rebalance: peak ", "edge cut "):
        assert phase in out, out
    imbalance = float(out.split("work imbalance ")[1].split()[0])
    assert imbalance <= 0.03 + 1e-4
    assert out.splitlines()[-1].startswith("| preset `default`, KaMinPar's eps 0.03 | ")


def test_a_row_of_the_table(tmp_path):
    got = {"load_peak": 699.0, "held_after_load": 184.0, "partition_peak": 1648.0, "rebalance_peak": 213.0}
    assert kp.row("default", got, 33_662_993, 29_725_718) == (
        "| default | 699 MiB | 184 MiB | **1,648 MiB** | 213 MiB | 51.3 | 29,725,718 |")
