"""Messages under a row partition kept move by move (pipeline/models/vb/messages.py): the pair counts on
hand-built graphs, a move that empties pairs worked out by hand, and the incremental counts against a recount
from scratch and against the volume matrix after random moves."""

import numpy as np
import pytest
from helpers.graphs import FIG2_EDGES, FIG2_PART, FIG2_VOLUME, a_hat, random_a_hat
from hypothesis import given, settings
from hypothesis import strategies as st

from shgcn.pipeline.metrics.volume import volume_matrix
from shgcn.pipeline.models.pins import PinCounts
from shgcn.pipeline.models.vb import messages as vm

# a path 0 - 1 - 2 - 3 - 4 in parts {0, 1}, {2}, {3, 4}
PATH = [(0, 1), (1, 2), (2, 3), (3, 4)]
PATH_PART = np.array([0, 0, 1, 2, 2])


def move(pc, msg, buf, v, b):
    """Move v to b in the messages and then in the pin counts (the order the search uses)."""
    vm.apply_pairs(v, b, pc.g, pc.pc, pc.part, (msg, buf))
    pc.move(v, b)


def predicted(pc, msg, v, b):
    """(dsent, drecv) of v's move to b from :func:`message_deltas`; checks that M is left as it was."""
    buf, mscr = vm.scratch(pc)
    m0 = msg[0].copy()
    nt = vm.message_deltas(v, b, pc.g, pc.pc, pc.part, (msg, buf, mscr))
    np.testing.assert_array_equal(msg[0], m0)
    dsent, drecv, mark, touched = mscr
    assert sorted(np.flatnonzero(mark).tolist()) == sorted(touched[:nt].tolist())
    return dsent.copy(), drecv.copy()


def test_pair_counts_are_the_volume_matrix_of_figure2():
    pc = PinCounts(a_hat(6, FIG2_EDGES), FIG2_PART, 3)
    m, sent, received = vm.messages(pc)
    assert m.dtype == np.int32 and m.tolist() == FIG2_VOLUME.tolist()
    assert sent.tolist() == [2, 2, 2] and received.tolist() == [2, 2, 2]


def test_one_move_empties_the_pairs_of_the_middle_part():
    # Part 0 owns net 1 {0, 1, 2}: sends row 1 to part 1. Part 1 owns net 2 {1, 2, 3}: sends row 2 to 0 and 2.
    # Part 2 owns net 3 {2, 3, 4}: sends row 3 to part 1. Moving vertex 2 to part 2: net 1 now needs row 1 in
    # part 2, net 2 is owned by part 2 and needed by part 0, net 3 is uncut: part 1 sends and receives nothing.
    pc = PinCounts(a_hat(5, PATH), PATH_PART, 3)
    msg = vm.messages(pc)
    assert msg[0].tolist() == [[0, 1, 0], [1, 0, 1], [0, 1, 0]]
    assert msg[1].tolist() == [1, 2, 1] and msg[2].tolist() == [1, 2, 1]
    dsent, drecv = predicted(pc, msg, 2, 2)
    assert dsent.tolist() == [0, -2, 0] and drecv.tolist() == [0, -2, 0]
    buf, _ = vm.scratch(pc)
    move(pc, msg, buf, 2, 2)
    assert msg[0].tolist() == [[0, 0, 1], [0, 0, 0], [1, 0, 0]]
    assert msg[1].tolist() == [1, 0, 1] and msg[2].tolist() == [1, 0, 1]
    recount = vm.messages(PinCounts(a_hat(5, PATH), pc.part, 3))
    for got, want in zip(msg, recount):
        np.testing.assert_array_equal(got, want)


def test_a_move_to_its_own_part_changes_nothing():
    pc = PinCounts(a_hat(5, PATH), PATH_PART, 3)
    buf, _ = vm.scratch(pc)
    assert vm.pair_changes(1, 0, pc.g, pc.pc, pc.part, buf) == 0


def check_moves(a, part, parts, moves):
    pc = PinCounts(a, part, parts)
    msg = vm.messages(pc)
    buf, _ = vm.scratch(pc)
    for v, b in moves:
        if pc.part[v] == b:
            continue
        dsent, drecv = predicted(pc, msg, v, b)
        before = msg[1].copy(), msg[2].copy()
        move(pc, msg, buf, v, b)
        np.testing.assert_array_equal(msg[1] - before[0], dsent)
        np.testing.assert_array_equal(msg[2] - before[1], drecv)
    vol = volume_matrix(a, pc.part, parts)
    np.testing.assert_array_equal(msg[0], vol)
    np.testing.assert_array_equal(msg[1], (vol > 0).sum(1))
    np.testing.assert_array_equal(msg[2], (vol > 0).sum(0))
    for got, want in zip(msg, vm.messages(PinCounts(a, pc.part, parts))):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("seed", range(3))
def test_incremental_pair_counts_match_a_recount(seed, directed):
    a = random_a_hat(60, 5, seed, directed)
    rng = np.random.default_rng(seed)
    n, parts = a.shape[0], 6
    check_moves(a, rng.integers(0, parts, n), parts, rng.integers(0, [n, parts], size=(300, 2)).tolist())


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10**6), st.booleans(), st.integers(2, 7),
       st.lists(st.tuples(st.integers(0, 29), st.integers(0, 6)), max_size=40))
def test_property_incremental_pair_counts_equal_a_recount(seed, directed, parts, moves):
    a = random_a_hat(30, 4, seed, directed)
    part = np.random.default_rng(seed).integers(0, parts, a.shape[0])
    check_moves(a, part, parts, [(v, b % parts) for v, b in moves])
