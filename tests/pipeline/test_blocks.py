"""Row blocks (pipeline/blocks.py): edges cut by block, blocks assembled, normalized, sliced and joined; the
whole matrix from its blocks."""

import numpy as np
import scipy.sparse as sp

from shgcn.pipeline import blocks
from shgcn.pipeline.blocks import RowBlock
from shgcn.pipeline.sources.records import ParsedChunk

EDGES = ParsedChunk(np.array([0, 1, 3, 3, 4, 2]), np.array([1, 1, 0, 4, 2, 3]), 6)  # (1, 1) a self loop


def test_block_bounds_are_equal_ranges():
    assert blocks.block_bounds(10, 3).tolist() == [0, 4, 8, 10]
    assert blocks.block_bounds(3, 10).tolist() == [0, 1, 2, 3]  # at least one row each
    assert blocks.block_bounds(5, 1).tolist() == [0, 5]


def test_split_edges_by_the_block_of_their_row():
    bounds = np.array([0, 3, 5])
    p = blocks.split_edges(EDGES, bounds, symmetrize=False)
    assert p.loops == 1
    assert [r.tolist() for r in p.rows] == [[0, 2], [3, 3, 4]] and [c.tolist() for c in p.cols] == [[1, 3], [0, 4, 2]]
    t = blocks.split_edges(EDGES, bounds, symmetrize=False, transpose=True)  # the rows of A^T
    assert [r.tolist() for r in t.rows] == [[1, 0, 2], [4, 3]] and [c.tolist() for c in t.cols] == [[0, 3, 4], [3, 2]]
    s = blocks.split_edges(EDGES, bounds, symmetrize=True)
    assert sum(r.size for r in s.rows) == 10 and blocks.piece(s, 0)[0].tolist() == [0, 2, 1, 0, 2]  # both ways
    assert blocks.pieces_loops(s) == 1


def test_assemble_merges_duplicates_and_sorts_columns():
    b = blocks.assemble(3, 5, 6, (np.array([4, 3]), np.array([2, 5])), (np.array([3, 4, 3]), np.array([0, 2, 5])))
    assert (b.lo, b.hi, b.n, b.indptr.tolist(), b.indices.tolist()) == (3, 5, 6, [0, 2, 3], [0, 5, 2])
    assert blocks.row_counts(b).tolist() == [2, 1] and b.row_ids().tolist() == [3, 3, 4] and b.rows == 2
    empty = blocks.assemble(0, 2, 2)
    assert empty.nnz == 0 and empty.indptr.tolist() == [0, 0, 0]


def test_normalize_adds_the_diagonal_and_scales_by_degrees():
    b = RowBlock(0, 2, 2, np.array([0, 1, 1]), np.array([1]))  # 0 -> 1, directed
    row_deg, col_deg = np.array([2, 1]), np.array([1, 2])  # degrees of A + I: out (rows), in (columns)
    nb = blocks.normalize(b, row_deg, col_deg)
    np.testing.assert_allclose(nb.csr().toarray(), [[2 ** -0.5 * 1, 2 ** -0.5 * 2 ** -0.5], [0, 1 * 2 ** -0.5]],
                               rtol=1e-6)
    assert nb.data.dtype == np.float32 and nb.indices.tolist() == [0, 1, 1]


def test_slices_join_back_and_the_full_matrix():
    m = sp.random(7, 7, density=0.4, format="csr", random_state=np.random.default_rng(2), dtype=np.float32)
    m.sort_indices()
    whole = RowBlock(0, 7, 7, m.indptr.astype(np.int64), m.indices, m.data)
    parts = [blocks.slice_rows(whole, lo, hi) for lo, hi in ((0, 2), (2, 3), (3, 7))]
    assert parts[1].lo == 2 and parts[1].csr().toarray().tolist() == m[2:3].toarray().tolist()
    joined = blocks.join_rows(*parts)
    assert joined.indptr.tolist() == m.indptr.tolist() and joined.data.tolist() == m.data.tolist()
    assert (blocks.full_matrix(*parts) != m).nnz == 0
    pattern = blocks.full_matrix(RowBlock(0, 2, 2, np.array([0, 1, 2]), np.array([1, 0])))
    assert pattern.toarray().tolist() == [[0, 1], [1, 0]] and pattern.dtype == np.float32


def test_pieces_of_a_range():
    bounds = np.array([0, 4, 8, 10])
    assert blocks.pieces_of_range(bounds, 2, 9) == [(0, 2, 4), (1, 4, 8), (2, 8, 9)]
    assert blocks.pieces_of_range(bounds, 4, 8) == [(1, 4, 8)]


def _random_block(seed: int, n: int = 40, lo: int = 5, hi: int = 31) -> RowBlock:
    m = sp.random(hi - lo, n, density=0.2, format="csr", random_state=np.random.default_rng(seed))
    m.setdiag(0, k=lo)  # no self loops (row r is vertex lo + r)
    m.eliminate_zeros()
    m.sort_indices()
    return RowBlock(lo, hi, n, m.indptr.astype(np.int64), m.indices.astype(np.int32))


def test_normalize_in_pieces_is_byte_identical():
    b = _random_block(3)
    deg = np.random.default_rng(4).integers(1, 9, b.n)
    for transpose in (False, True):
        whole = blocks.normalize(b, deg, deg[::-1].copy(), transpose, limit=10**9)
        for limit in (1, 7, 30):
            cut = blocks.normalize(b, deg, deg[::-1].copy(), transpose, limit=limit)
            assert cut.indptr.tobytes() == whole.indptr.tobytes() and cut.indices.tobytes() == whole.indices.tobytes()
            assert cut.data.tobytes() == whole.data.tobytes() and cut.indices.dtype == np.int32


def test_transpose_pieces_give_the_blocks_of_a_transpose_from_the_chunks():
    """A^T's blocks cut from A's blocks (the chunks gone) are those cut from the chunks, array for array."""
    rng = np.random.default_rng(5)
    n, bounds = 40, blocks.block_bounds(40, 3)
    chunks = [ParsedChunk(rng.integers(0, n, 90), rng.integers(0, n, 90), 90) for _ in range(3)]  # loops, duplicates

    def made(split):
        return [blocks.assemble(int(bounds[b]), int(bounds[b + 1]), n, *[blocks.piece(s, b) for s in split])
                for b in range(bounds.size - 1)]

    a = made([blocks.split_edges(c, bounds, symmetrize=False) for c in chunks])
    want = made([blocks.split_edges(c, bounds, symmetrize=False, transpose=True) for c in chunks])
    got = made([blocks.transpose_pieces(b, bounds) for b in a])
    for g, w in zip(got, want):
        assert (g.lo, g.hi) == (w.lo, w.hi) and g.indptr.dtype == w.indptr.dtype and g.indices.dtype == w.indices.dtype
        assert g.indptr.tolist() == w.indptr.tolist() and g.indices.tolist() == w.indices.tolist()
    p = blocks.transpose_pieces(a[0], bounds)
    assert p.loops == 0 and all(r.dtype == np.int32 for r in p.rows)
    # each block's piece is its own array, not a view of the chunk's: it goes when its block is assembled
    assert all(r.base is None or r.base.size == r.size for r in p.rows)


def test_the_upper_triangle_and_its_transpose_make_the_symmetrized_blocks():
    # undirected: each edge cut once as (smaller, larger), deduplicated, then A = U + U^T: the blocks symmetrize gives
    chunk = ParsedChunk(np.array([0, 1, 3, 3, 4, 2, 1, 4]), np.array([1, 1, 0, 4, 2, 3, 0, 3]), 8)
    bounds = np.array([0, 3, 5])
    u = blocks.split_edges(chunk, bounds, symmetrize=True, upper=True)
    assert u.loops == 1 and [r.tolist() for r in u.rows] == [[0, 0, 2, 2, 0], [3, 3]]
    assert [c.tolist() for c in u.cols] == [[1, 3, 4, 3, 1], [4, 4]]  # (1, 0) is (0, 1) again; (4, 3) is (3, 4)
    ranges = list(enumerate(zip(bounds.tolist(), bounds[1:].tolist())))
    ub = [blocks.assemble(lo, hi, 5, blocks.piece(u, b)) for b, (lo, hi) in ranges]
    assert [b.nnz for b in ub] == [4, 1]  # deduplicated before the transpose is cut
    lower = [blocks.transpose_pieces(b, bounds) for b in ub]
    got = [blocks.symmetric(lo, hi, 5, ub[b], *(blocks.piece(t, b) for t in lower)) for b, (lo, hi) in ranges]
    s = blocks.split_edges(chunk, bounds, symmetrize=True)
    want = [blocks.assemble(lo, hi, 5, blocks.piece(s, b)) for b, (lo, hi) in ranges]
    for g, w in zip(got, want):
        assert g.indptr.tobytes() == w.indptr.tobytes() and g.indices.tobytes() == w.indices.tobytes()
        assert g.indices.dtype == w.indices.dtype
    assert got[0].indptr.tolist() == [0, 2, 3, 5] and got[0].indices.tolist() == [1, 3, 0, 3, 4]
    assert got[1].indptr.tolist() == [0, 3, 5] and got[1].indices.tolist() == [0, 2, 4, 2, 3]
