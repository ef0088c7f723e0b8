"""benchmarks/build/coarsen_first.py: our own coarsening levels before KaMinPar, on hand-built ParHIP files."""

import subprocess
import sys

import numpy as np
import pytest
from helpers import REPO

if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.build import coarsen_first as cf  # noqa: E402
from shgcn.pipeline import graphfile as gf  # noqa: E402
from shgcn.pipeline.blocks import RowBlock  # noqa: E402

# two triangles {0, 1, 2} and {3, 4, 5} joined by the edge 2-3
XADJ = np.array([0, 2, 4, 7, 10, 12, 14])
ADJ = np.array([1, 2, 0, 2, 0, 1, 3, 2, 4, 5, 3, 5, 3, 4])


def write(path, weights):
    with open(path, "wb") as f:
        f.write(gf.parhip_header(6, ADJ.size))
        f.truncate(gf.parhip_size(6, ADJ.size))
    gf.write_parhip_block(str(path), RowBlock(0, 6, 6, XADJ, ADJ), np.asarray(weights, np.int64), 0, ADJ.size)


def test_label_propagation_finds_the_triangles_within_the_weight_limit(tmp_path):
    path = tmp_path / "g.parhip"
    write(path, [1] * 6)
    xadj, adj, ew, w = cf.read_level(str(path))
    assert xadj.tolist() == XADJ.tolist() and adj.tolist() == ADJ.tolist() and ew.size == 0
    cid = cf.clusters(xadj, adj, ew, w, maxw=3, rounds=5)
    assert cid.tolist() == [0, 0, 0, 1, 1, 1]
    assert cf.clusters(xadj, adj, ew, w, maxw=1, rounds=5).tolist() == list(range(6))  # nothing may merge


def test_the_contracted_file_has_the_summed_weights_and_reads_back(tmp_path):
    path, coarse = tmp_path / "g.parhip", str(tmp_path / "c.parhip")
    write(path, [1, 2, 3, 4, 5, 6])
    xadj, adj, ew, w = cf.read_level(str(path))
    cid = np.array([0, 0, 1, 1, 2, 2], np.int32)  # {0,1} {2,3} {4,5}: 0-2 twice (0-2, 1-2), 2-4 twice (3-4, 3-5)
    assert cf.write_coarse(coarse, xadj, adj, ew, w, cid) == (3, 4)
    cx, cadj, cew, cw = cf.read_level(coarse)
    assert cx.tolist() == [0, 1, 3, 4] and cadj.tolist() == [1, 0, 2, 1] and cew.tolist() == [2, 2, 2, 2]
    assert cw.tolist() == [3, 7, 11]
    assert int(np.fromfile(coarse, "<u8", count=1)[0]) == cf.VERSION


def test_pieces_write_the_same_file(tmp_path, monkeypatch):
    path = tmp_path / "g.parhip"
    write(path, [1] * 6)
    xadj, adj, ew, w = cf.read_level(str(path))
    cid = np.array([0, 1, 2, 3, 4, 4], np.int32)
    cf.write_coarse(str(tmp_path / "whole"), xadj, adj, ew, w, cid)
    monkeypatch.setattr(cf, "PIECE", 1)
    cf.write_coarse(str(tmp_path / "pieces"), xadj, adj, ew, w, cid)
    assert (tmp_path / "whole").read_bytes() == (tmp_path / "pieces").read_bytes()


def test_refinement_moves_a_vertex_to_the_part_of_its_neighbours(tmp_path):
    path = tmp_path / "g.parhip"
    write(path, [1] * 6)
    part = np.array([0, 0, 1, 1, 1, 0], np.int32)  # 2 sits with the other triangle, 5 with the first one
    assert cf.refine(str(path), part, 2, 0.5, 2) == 2 and part.tolist() == [0, 0, 0, 1, 1, 1]


@pytest.mark.timeout(300)
def test_kaminpar_reads_the_coarse_file_and_the_run_cuts_the_bridge(tmp_path):
    pytest.importorskip("kaminpar")
    path = tmp_path / "g.parhip"
    write(path, [1] * 6)
    res = subprocess.run([sys.executable, "-m", "benchmarks.build.coarsen_first", str(path), "--parts", "2",
                          "--kaminpar-eps", "0.5", "--eps", "0.0", "--refine", "1"],
                         capture_output=True, text=True, timeout=240, cwd=REPO)
    assert res.returncode == 0, res.stderr
    assert "levels (n, adjacency entries): (6, 14) -> (2, 2)" in res.stdout
    assert "edge cut 1, work imbalance 0.0000" in res.stdout
