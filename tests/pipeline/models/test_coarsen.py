"""Coarsening levels of our own before KaMinPar (:mod:`shgcn.pipeline.models.coarsen`), on hand-built ParHIP files."""

import numpy as np

from shgcn.pipeline import graphfile as gf
from shgcn.pipeline.blocks import RowBlock
from shgcn.pipeline.models import coarsen as cf

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
    assert cf.write_level(coarse, xadj, adj, ew, w, cid) == (3, 4)
    cx, cadj, cew, cw = cf.read_level(coarse)
    assert cx.tolist() == [0, 1, 3, 4] and cadj.tolist() == [1, 0, 2, 1] and cew.tolist() == [2, 2, 2, 2]
    assert cw.tolist() == [3, 7, 11]
    assert int(np.fromfile(coarse, "<u8", count=1)[0]) == cf.VERSION


def test_pieces_write_the_same_file(tmp_path, monkeypatch):
    path = tmp_path / "g.parhip"
    write(path, [1] * 6)
    xadj, adj, ew, w = cf.read_level(str(path))
    cid = np.array([0, 1, 2, 3, 4, 4], np.int32)
    cf.write_level(str(tmp_path / "whole"), xadj, adj, ew, w, cid)
    monkeypatch.setattr(cf, "PIECE", 1)
    cf.write_level(str(tmp_path / "pieces"), xadj, adj, ew, w, cid)
    assert (tmp_path / "whole").read_bytes() == (tmp_path / "pieces").read_bytes()


def test_refinement_moves_a_vertex_to_the_part_of_its_neighbours(tmp_path):
    path = tmp_path / "g.parhip"
    write(path, [1] * 6)
    part = np.array([0, 0, 1, 1, 1, 0], np.int32)  # 2 sits with the other triangle, 5 with the first one
    xadj, adj, _, w = cf.read_level(str(path))
    assert cf.refine(xadj, adj, w, part, 2, 0.5, rounds=2) == 2 and part.tolist() == [0, 0, 0, 1, 1, 1]


def test_edge_weights_decide_label_propagation():
    """A path 0-1-2 whose edge 1-2 weighs 5 and 0-1 weighs 1: 1 joins 2, not 0 (ties would keep the first)."""
    xadj = np.array([0, 1, 3, 4])
    adj = np.array([1, 0, 2, 1], np.int32)
    ew = np.array([1, 1, 5, 5], np.int32)
    w = np.ones(3, np.int64)
    assert cf.clusters(xadj, adj, ew, w, maxw=2).tolist() == [0, 1, 1]
    assert cf.clusters(xadj, adj, np.zeros(0, np.int32), w, maxw=2).tolist() == [0, 0, 1]


def test_levels_compose_and_only_the_last_file_is_left(tmp_path, monkeypatch):
    path = tmp_path / "g.parhip"
    write(path, [1] * 6)
    last, cid, sizes = cf.coarsen(str(path), 2, parts=1, eps=1.0)  # 6 vertices: below KaMinPar's limit, no level
    assert (last, cid.tolist(), sizes) == (str(path), list(range(6)), [(6, 14)])
    monkeypatch.setattr(cf, "CONTRACTION_LIMIT", 1)
    last, cid, sizes = cf.coarsen(str(path), 2, parts=1, eps=1.0)  # a cluster may weigh all: one vertex at the end
    assert sizes == [(6, 14), (2, 2), (1, 0)] and cid.tolist() == [0] * 6
    assert last == f"{path}.level2" and sorted(p.name for p in tmp_path.iterdir()) == ["g.parhip", "g.parhip.level2"]
    assert cf.read_level(last)[3].tolist() == [6]


def test_the_cluster_limit_is_kaminpars():
    assert cf.cluster_limit(64_000, 1_000_000, 64, 0.05) == 50  # eps * W / k
    assert cf.cluster_limit(64_000, 20_000, 64, 0.05) == 320  # fewer than 2000 k vertices: eps W / (n / 2000)
    assert cf.cluster_limit(100, 10, 64, 0.5) == 50  # at least one part's share
