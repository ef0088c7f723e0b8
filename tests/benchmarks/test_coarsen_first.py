"""benchmarks/build/coarsen_first.py: KaMinPar's child with coarsening levels of our own, on a hand-built file."""

import subprocess
import sys

import numpy as np
import pytest
from helpers import REPO

from shgcn.pipeline import graphfile as gf
from shgcn.pipeline.blocks import RowBlock

# two triangles {0, 1, 2} and {3, 4, 5} joined by the edge 2-3
XADJ = np.array([0, 2, 4, 7, 10, 12, 14])
ADJ = np.array([1, 2, 0, 2, 0, 1, 3, 2, 4, 5, 3, 5, 3, 4])


@pytest.mark.timeout(300)
def test_kaminpar_reads_the_coarse_file_and_the_rebalance_balances(tmp_path):
    pytest.importorskip("kaminpar")
    path = tmp_path / "g.parhip"
    with open(path, "wb") as f:
        f.write(gf.parhip_header(6, ADJ.size))
        f.truncate(gf.parhip_size(6, ADJ.size))
    gf.write_parhip_block(str(path), RowBlock(0, 6, 6, XADJ, ADJ), np.ones(6, np.int64), 0, ADJ.size)
    res = subprocess.run([sys.executable, "-m", "benchmarks.build.coarsen_first", str(path), "--parts", "2",
                          "--levels", "1", "--kaminpar-eps", "1.0", "--eps", "0.0", "--refine", "1", "--contraction-limit", "1"],
                         capture_output=True, text=True, timeout=240, cwd=REPO)
    assert res.returncode == 0, res.stderr
    assert "levels (n, adjacency entries): (6, 14) -> (2, 2)" in res.stdout
    assert "work imbalance 0.0000" in res.stdout and path.exists()  # the rebalance's exact bound; the file kept
