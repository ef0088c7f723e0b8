import numpy as np
import pytest
from helpers.graphs import FIG2_EDGES, FIG2_PART, FIG2_VOLUME, a_hat, graph

from shgcn.core.tables import format_table, table_from_dataset
from shgcn.pipeline.metrics import volume as quality
from shgcn.pipeline.metrics.hypergraph import column_net, connectivity, connectivity_minus_one


def test_figure2_volume_matrix_and_connectivity():
    a = a_hat(6, FIG2_EDGES)
    q = quality.partition_quality(a, FIG2_PART, 3)
    np.testing.assert_array_equal(q.volume, FIG2_VOLUME)
    lam = connectivity(column_net(a, drop_single_pin=False), FIG2_PART, 3)
    assert lam.tolist() == [2, 3, 2, 3, 3, 2]  # λ(n2) = λ(n4) = 3 (1-based)
    assert q.total_volume == q.km1 == 9
    assert q.edge_cut == 5  # the graph model's 2 x 5 = 10 over-counts
    assert q.send.tolist() == [3, 3, 3] and q.recv.tolist() == [3, 4, 2]
    assert q.send_msgs.tolist() == [2, 2, 2]
    # nonzeros of Â per part: degree + 1 of (0, 1), (2, 3), (4, 5) = (3 + 4), (3 + 5), (3 + 2)
    assert q.load.tolist() == [7, 8, 5]


def test_directed_volume_follows_columns():
    # 0 -> 1 -> 2, rows need their out-neighbours' features
    a = a_hat(3, [(0, 1), (1, 2)], directed=True)
    part = np.array([0, 1, 1])
    q = quality.partition_quality(a, part, 2)
    # row 0 (part 0) needs column 1 (part 1): part 1 sends one row to part 0
    np.testing.assert_array_equal(q.volume, [[0, 0], [1, 0]])
    assert q.km1 == 1


def test_one_part_has_no_communication():
    a = a_hat(6, FIG2_EDGES)
    q = quality.partition_quality(a, np.zeros(6, np.int32), 1)
    assert q.total_volume == 0 and q.edge_cut == 0 and q.imbalance == 0


@pytest.mark.parametrize("seed", range(5))
def test_km1_equals_total_volume_on_random_graphs(seed):
    rng = np.random.default_rng(seed)
    n = 60
    edges = rng.integers(0, n, (200, 2))
    directed = bool(seed % 2)
    a = a_hat(n, [tuple(e) for e in edges], directed=directed)
    part = rng.integers(0, 5, a.shape[0]).astype(np.int32)
    q = quality.partition_quality(a, part, 5)
    assert q.total_volume == q.km1 == connectivity_minus_one(column_net(a), part, 5)
    # brute force: each column j is sent once to every other part holding a row that needs it
    dense = a.toarray() != 0
    expect = np.zeros((5, 5), int)
    for j in range(a.shape[0]):
        for p in set(part[dense[:, j]]) - {part[j]}:
            expect[part[j], p] += 1
    np.testing.assert_array_equal(q.volume, expect)


def test_table_normalizes_to_rp():
    a = a_hat(6, FIG2_EDGES)
    qs = [quality.partition_quality(a, np.array([0, 1, 2, 0, 1, 2]), 3, "rp"),
          quality.partition_quality(a, FIG2_PART, 3, "hp")]
    ds = quality.to_dataset(qs)
    rows = table_from_dataset(ds)
    assert rows[0]["total_volume_vs_rp"] == 1.0
    assert rows[1]["total_volume_vs_rp"] == pytest.approx(9 / qs[0].total_volume)
    assert "vol/rp" in format_table(rows)
    assert ds["volume"].sel(model="hp").values.tolist() == FIG2_VOLUME.tolist()


def test_edge_cut_counts_pairs_once_for_directed_graphs():
    g = graph(3, [(0, 1), (1, 0), (1, 2)], directed=True)
    assert quality.edge_cut(g.adj, np.array([0, 1, 1])) == 1


@pytest.mark.parametrize("directed", [False, True])
def test_block_quality_in_pieces_is_the_same(directed):
    from shgcn.pipeline.blocks import RowBlock

    g = graph(40, [tuple(e) for e in np.random.default_rng(6).integers(0, 40, (160, 2)) if e[0] != e[1]],
              directed=directed)
    a = a_hat(40, list(zip(*g.adj.nonzero())), directed=directed).tocsr()
    a.sort_indices()
    t = a.T.tocsr()
    t.sort_indices()
    lo, hi = 3, 29
    block = [RowBlock(lo, hi, 40, m[lo:hi].indptr.astype(np.int64), m[lo:hi].indices, m[lo:hi].data) for m in (a, t)]
    part = np.random.default_rng(7).integers(0, 4, 40).astype(np.int32)
    whole = quality.block_quality(*block, part, 4, directed, limit=10**9)
    assert whole.km1 > 0 and whole.edge_cut > 0
    for limit in (1, 9, 40):
        q = quality.block_quality(*block, part, 4, directed, limit=limit)
        assert (q.volume.tolist(), q.km1, q.edge_cut) == (whole.volume.tolist(), whole.km1, whole.edge_cut)


@pytest.mark.parametrize("directed", [False, True])
def test_block_quality_of_the_pattern_is_that_of_a_hat(directed):
    # the quality stage measures on A's pattern (no diagonal, no values): the same volume, km1 and edge cut as on Â
    from shgcn.pipeline.blocks import RowBlock

    g = graph(30, [tuple(e) for e in np.random.default_rng(8).integers(0, 30, (120, 2)) if e[0] != e[1]],
              directed=directed)
    a = a_hat(30, list(zip(*g.adj.nonzero())), directed=directed).tocsr()
    pat = g.adj.tocsr()

    def rows(m):
        m = m.tocsr()
        m.sort_indices()
        return RowBlock(0, 30, 30, m.indptr.astype(np.int64), m.indices, m.data if m is a else None)

    part = np.random.default_rng(9).integers(0, 3, 30).astype(np.int32)
    qa = quality.block_quality(rows(a), rows(a.T), part, 3, directed)
    qp = quality.block_quality(rows(pat), rows(pat.T), part, 3, directed)
    assert (qp.volume.tolist(), qp.km1, qp.edge_cut) == (qa.volume.tolist(), qa.km1, qa.edge_cut) and qa.km1 > 0
