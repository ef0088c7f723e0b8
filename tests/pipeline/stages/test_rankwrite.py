"""The write-rank task writes a rank's block piece by piece: byte for byte the
block the joined path (rank_rows, rank_block, store.write_rank) writes."""

import pytest
from helpers.layouts import cut

from shgcn import store
from shgcn.pipeline.stages import layout, pieces, rankwrite
from shgcn.store import _layout


def files(root, r):
    base = root / "ranks" / str(r)
    return {str(f.relative_to(base)): f.read_bytes() for f in sorted(base.rglob("*")) if f.is_file()}


@pytest.mark.parametrize("spilled", [False, True])
@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("bounds", [(0, 70), (0, 25, 60, 70), (0, 1, 2, 3, 69, 70)])
def test_streamed_block_equals_the_joined_block(tmp_path, directed, bounds, spilled):
    n, p = 70, 4
    lay, cuts = cut(n, p, directed, list(bounds), seed=len(bounds), multi=directed)
    # the write reads each piece from the temporary area when the cut blocks were saved there
    refs = [[(pieces.save_pieces(c, str(tmp_path / "work" / f"b{b}")), r) for r in range(p)] for b, c in enumerate(cuts)] \
        if spilled else cuts
    rows = [layout.rank_rows(r, int(lay.offsets[r]), int(lay.offsets[r + 1]), *[c[r] for c in cuts])
            for r in range(p)]
    sends = layout.send_lists(lay.offsets, *[x.halo for x in rows])
    t_sends = layout.send_lists(lay.offsets, *[layout.halo_of(x, True) for x in rows]) if directed else [None] * p
    for r, x in enumerate(rows):
        joined = store.write_rank(tmp_path / "joined", layout.rank_block(x, lay.offsets, sends[r], t_sends[r]))
        streamed = rankwrite.write_rank(str(tmp_path / "streamed"), (r, lay.offsets),
                                        (x.halo, x.t_halo if directed else None), (sends[r], t_sends[r]),
                                        *[c[r] for c in refs])
        assert streamed == joined
        want, got = files(tmp_path / "joined", r), files(tmp_path / "streamed", r)
        assert sorted(got) == sorted(want) and all(got[k] == want[k] for k in want), r
        indptr = store.memmap_array(tmp_path / "streamed", _layout.rank_array(r, "indptr"), "<i8")
        assert indptr[-1] == store.memmap_array(tmp_path / "streamed", _layout.rank_array(r, "indices")).size


def test_pieces_that_do_not_cover_the_rank_are_refused(tmp_path):
    lay, cuts = cut(20, 2, False, [0, 20], seed=1)
    lo, hi = int(lay.offsets[0]), int(lay.offsets[1])
    x = layout.rank_rows(0, lo, hi, cuts[0][0])
    with pytest.raises(ValueError, match="rank 0: pieces hold"):
        rankwrite.write_rank(str(tmp_path), (0, lay.offsets), (x.halo, None), (None, None), cuts[0][1])

