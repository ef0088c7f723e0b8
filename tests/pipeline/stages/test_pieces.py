"""The layout's pieces saved in the temporary area come back as they were
cut, array for array, rank by rank, and a rank's halo from them is the one
from the pieces in memory."""

import numpy as np
import pytest
from helpers.layouts import cut

from shgcn.pipeline.blocks import RowBlock
from shgcn.pipeline.nodes import NodeBlock
from shgcn.pipeline.stages import layout, pieces


def same_rows(x, y):
    assert np.array_equal(x.indptr, y.indptr)
    assert x.cols.dtype == y.cols.dtype and np.array_equal(x.cols, y.cols)
    assert x.data.dtype == y.data.dtype and np.array_equal(x.data, y.data)


@pytest.mark.parametrize("directed", [False, True])
def test_a_saved_block_opens_as_its_pieces(tmp_path, directed):
    n, p = 50, 5
    lay, cuts = cut(n, p, directed, [0, 17, 50], seed=3, multi=directed)
    for b, c in enumerate(cuts):
        block = pieces.save_pieces(c, str(tmp_path / f"b{b}"))
        assert block.rows.tolist() == np.cumsum([0] + [x.node_index.size for x in c]).tolist()
        assert (block.t_nnz is None) == (not directed)
        for r in range(p):
            got, want = block.piece(r), c[r]
            same_rows(got.a, want.a)
            if directed:
                same_rows(got.t, want.t)
            else:
                assert got.t is None
            for k in pieces.NODE_ARRAYS:
                g, w = getattr(got.nodes, k), getattr(want.nodes, k)
                assert g.dtype == w.dtype and g.shape == w.shape and np.array_equal(g, w), k
            assert np.array_equal(got.node_index, want.node_index)


def test_a_rank_without_rows_in_a_block_opens_empty(tmp_path):
    lay = layout.make_layout(np.array([0] * 6 + [2] * 6, np.int32), 3)  # rank 1 owns nothing
    a = RowBlock(0, 12, 12, np.arange(13, dtype=np.int64), np.arange(12, dtype=np.int64), np.ones(12, np.float32))
    nb = NodeBlock(0, 12, np.zeros((12, 2), np.float32), np.zeros(12, np.int32), *(np.zeros(12, bool),) * 3)
    c = layout.rank_pieces(a, None, nb, lay)
    block = pieces.save_pieces(c, str(tmp_path / "b0"))
    empty = block.piece(1)
    assert empty.a.indptr.tolist() == [0] and empty.a.cols.size == 0 and empty.nodes.features.shape == (0, 2)
    assert block.piece(2).a.cols.tolist() == lay.inverse[6:12].tolist()


@pytest.mark.parametrize("transpose", [False, True])
def test_the_halo_from_saved_pieces_is_the_halo_from_pieces_in_memory(tmp_path, transpose):
    n, p = 60, 4
    lay, cuts = cut(n, p, True, [0, 20, 41, 60], seed=7)
    saved = [pieces.save_pieces(c, str(tmp_path / f"b{b}")) for b, c in enumerate(cuts)]
    for r in range(p):
        lo, hi = int(lay.offsets[r]), int(lay.offsets[r + 1])
        want = layout.pieces_halo(lo, hi, transpose, *[c[r] for c in cuts])
        got = layout.pieces_halo(lo, hi, transpose, *[layout.piece(s, r) for s in saved])
        assert got.tolist() == want.tolist() and want.size > 0
