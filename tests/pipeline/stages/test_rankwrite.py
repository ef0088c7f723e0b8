"""Every rank's block written in place (allocate, rank_halo, write_pieces,
write_rank): byte for byte the block the joined path (rank_rows,
rank_block, store.write_rank) writes, whatever order the blocks' cuts run
in and however often."""

import numpy as np
import pytest
from helpers.layouts import blocks

from shgcn import store
from shgcn.pipeline.stages import layout, rankwrite
from shgcn.store import _layout


def files(root, r):
    base = root / "ranks" / str(r)
    return {str(f.relative_to(base)): f.read_bytes() for f in sorted(base.rglob("*")) if f.is_file()}


def in_place(root, c, bounds, directed, order):
    p = c.lay.parts
    slots = tuple(rankwrite.allocate(str(root), r, c.lay, c.degrees, np.asarray(bounds, np.int64), c.first,
                                        directed=directed)
                  for r in range(p))
    halos = tuple(rankwrite.rank_halo(r, c.lay, *c.a) for r in range(p))
    t_halos = tuple(rankwrite.rank_halo(r, c.lay, *c.t) for r in range(p)) if directed else None
    written = [rankwrite.write_pieces(str(root), b, c.cuts[b], c.lay, slots=slots, halos=halos, t_halos=t_halos) for b in order]
    return halos, t_halos, written


@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("bounds", [(0, 70), (0, 25, 60, 70), (0, 1, 2, 3, 69, 70)])
def test_blocks_written_in_place_are_the_joined_blocks(tmp_path, directed, bounds):
    n, p = 70, 4
    c = blocks(n, p, directed, list(bounds), seed=len(bounds), multi=directed)
    order = list(reversed(range(len(bounds) - 1))) + [0]  # the last block first, and the first one twice (a rerun)
    halos, t_halos, written = in_place(tmp_path / "inplace", c, bounds, directed, order)
    assert sum(written[:-1]) == n
    rows = [layout.rank_rows(r, int(c.lay.offsets[r]), int(c.lay.offsets[r + 1]), *[x[r] for x in c.cuts])
            for r in range(p)]
    sends = layout.send_lists(c.lay.offsets, *[x.halo for x in rows])
    t_sends = layout.send_lists(c.lay.offsets, *[layout.halo_of(x, True) for x in rows]) if directed else [None] * p
    for r, x in enumerate(rows):
        assert halos[r].tobytes() == x.halo.tobytes() and halos[r].dtype == x.halo.dtype
        if directed:
            assert t_halos[r].tobytes() == layout.halo_of(x, True).tobytes()
        joined = store.write_rank(tmp_path / "joined", layout.rank_block(x, c.lay.offsets, sends[r], t_sends[r]))
        got = rankwrite.write_rank(str(tmp_path / "inplace"), (r, c.lay.offsets),
                                   (halos[r], t_halos[r] if directed else None), (sends[r], t_sends[r]), *written)
        assert got == joined
        want, have = files(tmp_path / "joined", r), files(tmp_path / "inplace", r)
        assert sorted(have) == sorted(want) and all(have[k] == want[k] for k in want), r
        indptr = store.memmap_array(tmp_path / "inplace", _layout.rank_array(r, "indptr"), "<i8")
        assert indptr[-1] == store.memmap_array(tmp_path / "inplace", _layout.rank_array(r, "indices")).size


def test_a_rank_without_rows_gets_empty_arrays(tmp_path):
    c = blocks(12, 3, False, [0, 5, 12], seed=1)
    c.lay = layout.make_layout(np.array([0] * 6 + [2] * 6, np.int32), 3)  # rank 1 owns nothing
    slots = rankwrite.allocate(str(tmp_path), 1, c.lay, c.degrees, np.array([0, 5, 12]), c.first, directed=False)
    assert slots.rows.tolist() == [0, 0, 0] and slots.a.tolist() == [0, 0, 0]
    assert store.memmap_array(tmp_path, "ranks/1/features").shape == (0, 3)
    assert rankwrite.rank_halo(1, c.lay, *c.a).size == 0


def test_a_cut_that_does_not_match_the_layout_is_refused(tmp_path):
    c = blocks(20, 2, False, [0, 10, 20], seed=1)
    slots = tuple(rankwrite.allocate(str(tmp_path), r, c.lay, c.degrees, np.array([0, 10, 20]), c.first, directed=False)
                  for r in range(2))
    halos = tuple(rankwrite.rank_halo(r, c.lay, *c.a) for r in range(2))
    with pytest.raises(ValueError, match="block 0 cut .* rows where the layout gives it"):
        rankwrite.write_pieces(str(tmp_path), 0, c.cuts[1], c.lay, slots=slots, halos=halos, t_halos=None)
