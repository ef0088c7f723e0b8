"""A build's input sizes before it is read: generators in expectation, datasets as published, files by header or size."""

import gzip

import numpy as np
import pytest

from shgcn.pipeline.sources import counts
from shgcn.pipeline.sources.synthetic import rmat


@pytest.mark.parametrize("scale", [6, 10])
def test_rmat_expectation_matches_generated_graphs(scale):
    n, edges = counts.rmat_expected(scale, 16)
    seen_n, seen_e = [], []
    for seed in range(3):
        g = rmat(scale, 16, seed=seed)
        keep = g.src != g.dst
        pairs = np.unique(g.src[keep] * (1 << scale) + g.dst[keep])
        seen_n.append(np.unique(np.concatenate([g.src, g.dst])).size)
        seen_e.append(pairs.size)
    assert n == pytest.approx(np.mean(seen_n), rel=0.02)
    assert edges == pytest.approx(np.mean(seen_e), rel=0.02)


def test_rmat_measured_at_scale_20():
    """R-MAT scale 20, edge factor 16, seed 1 (benchmarks/RESULTS.md): 645,754 vertices, 16,084,260 edges."""
    n, edges = counts.rmat_expected(20)
    assert n == pytest.approx(645_754, rel=0.002) and edges == pytest.approx(16_084_260, rel=0.002)


def test_undirected_rmat_counts_both_directions_once():
    n, directed = counts.rmat_expected(10, 8)
    _, both = counts.rmat_expected(10, 8, directed=False)
    assert directed < both <= 2 * directed


def test_generators_datasets_and_options():
    c = counts.input_counts("sbm:n=1000,degree=10,features=8,classes=4")
    assert (c.n, c.edges, c.nnz, c.features, c.classes, c.directed) == (1000, 10_000, 11_000, 8, 4, False)
    c = counts.input_counts("cora", features=32, classes=3)
    assert (c.n, c.features, c.classes, c.how, c.estimated) == (2708, 32, 3, "published counts", False)
    assert counts.input_counts("rmat:scale=12").features == counts.DEFAULT_DIM


def test_the_build_defaults_are_the_nodes_modules():
    from shgcn.pipeline import nodes

    assert (counts.DEFAULT_DIM, counts.DEFAULT_CLASSES) == (nodes.DEFAULT_DIM, nodes.DEFAULT_CLASSES)


def test_a_matrix_market_header_is_exact(tmp_path):
    f = tmp_path / "g.mtx"
    f.write_text("%%MatrixMarket matrix coordinate pattern symmetric\n% a comment\n5 5 4\n1 2\n2 3\n3 4\n4 5\n")
    c = counts.input_counts(str(f))
    assert (c.n, c.edges, c.nnz, c.directed, c.estimated) == (5, 8, 13, False, False)


def test_an_edge_list_is_estimated_from_its_size(tmp_path):
    lines = "".join(f"{i} {i * 7 % 1000}\n" for i in range(20_000))
    plain, packed = tmp_path / "e.txt", tmp_path / "e.txt.gz"
    plain.write_text(lines)
    packed.write_bytes(gzip.compress(lines.encode()))
    for f in (plain, packed):
        c = counts.input_counts(str(f))
        assert c.edges == pytest.approx(20_000, rel=0.05) and c.estimated and c.n == c.edges // counts.ASSUMED_DEGREE


def test_in_memory_matrix():
    import scipy.sparse as sp

    c = counts.input_counts(sp.random(50, 50, density=0.1, format="csr", random_state=0))
    assert (c.n, c.edges, c.nnz) == (50, 250, 300)


def test_an_object_that_is_not_an_array_is_left_to_the_readers():
    c = counts.input_counts(object())
    assert c.estimated and c.n == 0
