"""``2d``, SUMMA on an s x s grid (core/algorithms/twod.py): bytes by kind, times and memory on the path
0-1-2-3 (parts [0, 0, 1, 1]; Â's blocks 4, 1 / 1, 4 nonzeros), by hand."""

import pytest
from helpers.costs import machine, path_cost

from shgcn.core import epoch
from shgcn.core.algorithms import ALGORITHMS, GridShape
from shgcn.core.algorithms.twod import Blocks
from shgcn.core.archs import MEAN, NORM, SUM
from shgcn.core.costs import Job
from shgcn.core.errors import UserError

TWOD = ALGORITHMS["2d"]


def test_the_grid_and_the_plans():
    assert TWOD.shape(9, 3) == GridShape("2d", 3, 3) == TWOD.shape_for(3)
    assert TWOD.plans(9, [2]) == [(1, 3)] and TWOD.plans(8, [2]) == []
    with pytest.raises(UserError) as e:
        TWOD.shape(4, 3)
    assert str(e.value) == ("--algorithm 2d runs on a square grid: P = s x s ranks over a store of s parts; the store "
                            "has 3 parts and the job 4 ranks; run with mpirun -n 9")
    with pytest.raises(UserError, match="needs --algorithm 1.5d"):
        TWOD.shape(4, 2, 2)


def test_attention_does_not_run_on_it():
    TWOD.check(Job((3, 2), arch="sage", algorithm="2d"), minibatch=False)
    with pytest.raises(UserError, match=r"^--arch gat does not run on --algorithm 2d"):
        TWOD.check(Job((3, 2), arch="gat", algorithm="2d"), minibatch=False)


def test_the_operators_blocks():
    b = Blocks(path_cost())
    assert b.s == 2 and b.n.tolist() == [2, 2]
    assert b.of(False, NORM).tolist() == [[4, 1], [1, 4]]
    assert b.of(False, MEAN).tolist() == b.of(False, SUM).tolist() == [[2, 1], [1, 2]]  # without the self loops
    asym = path_cost()
    asym.graph = asym.graph.tolil()
    asym.graph[0, 3] = 1  # row 0 needs column 3: block (0, 1) gains a nonzero
    t = Blocks(asym)
    assert t.of(False, NORM).tolist() == [[4, 2], [1, 4]] and t.of(True, NORM).tolist() == [[4, 1], [2, 4]]
    cost = path_cost()
    cost.part = None
    with pytest.raises(ValueError, match="need the partition's graph and part vector"):
        Blocks(cost)


def test_summa_bytes_by_hand():
    """2 x 2 grid, GCN [3, 2]: two SpMMs of width 2 (H W first), each rank a slice of width 1.
    Per SpMM: H's slice down the column (2 rows x 1 x 4 B), the allgather (the same), and block (i, j)
    along the row: 4 (2 + 1) B of row pointers + 8 B per nonzero (blocks 4, 1 / 1, 4)."""
    t = epoch.rank_traffic(path_cost(), Job((3, 2), algorithm="2d"))
    assert t["matrix_bytes"].tolist() == [2 * 44, 2 * 20, 2 * 20, 2 * 44]
    assert t["rows_bytes"].tolist() == t["inrow_bytes"].tolist() == [16] * 4
    assert t["bytes_sent"].tolist() == [120, 72, 72, 120] and t["msgs_sent"].tolist() == [6] * 4
    assert t["calls"].tolist() == [[60, 36, 36, 60]] * 2


def test_a_mean_aggregation_sends_blocks_without_the_self_loops():
    """GraphSAGE's D^-1 A: blocks 2, 1 / 1, 2, so block (i, i) is 12 + 16 = 28 B on the wire."""
    t = TWOD.traffic(path_cost(), Job((3, 2), arch="sage", algorithm="2d"))
    assert t["matrix_bytes"].tolist() == [2 * 28, 2 * 20, 2 * 20, 2 * 28]
    assert t["rows_bytes"].tolist() == [16] * 4


def test_times_by_hand():
    """A node per rank (alpha 10 s, beta 0.1 s a byte), no compute. Per SpMM (w = 2), stage k: block (i, k)
    broadcast along the row (20 + 0.1 x bytes: 44 or 20 B) and slice j of H_k down the column (20 + 0.1 x 8):
    44 + 20 + 2 x 20.8 = 88 on every rank; then the allgather, one latency and 2 x 4 B: 10.8. Two SpMMs and
    the allreduce of 24 B among 4 ranks: 40 + 3.6."""
    t = TWOD.times(path_cost(), Job((3, 2), algorithm="2d"), machine())
    assert t["comm"] == pytest.approx([2 * (88 + 10.8) + 43.6] * 4)
    assert t["compute"].tolist() == [0.0] * 4 and t["epoch"] == pytest.approx(241.2)


def test_memory_by_hand():
    """Rank (i, j) keeps block (i, j) (4 or 1 nonzeros), its block row's 2 rows, and a buffer for the largest
    block of its row (4 nonzeros): 16 nnz + 8 x 4 + 16 x 2 + 4 x 2 x 3 + (8 x 2 x 2 + 4 x 2 x 3)."""
    base = 32 + 32 + 24 + 56
    assert TWOD.memory(path_cost(), Job((3, 2), algorithm="2d")).tolist() == \
        [64 + base, 16 + base, 16 + base, 64 + base]
