"""The process grids of the distributed algorithms (core/algorithms/grid.py) on graphs small enough to count
by hand: shapes, the 1.5D assignment of column blocks, chunks, supports and block nonzeros."""

import numpy as np
import pytest
from helpers.costs import path_cost

from shgcn.core.algorithms import (
    ALGORITHMS,
    GridShape,
    assign_pairs,
    block_nnz,
    chunk_bounds,
    chunk_of,
    local_index,
    row_supports,
    slice_bounds,
)
from shgcn.core.algorithms.grid import rows_by_columns
from shgcn.core.errors import UserError


def grid_shape(algorithm, ranks, parts, c=1):
    return ALGORITHMS.get_spec(algorithm).shape(ranks, parts, c)


def shape_for(algorithm, parts, c=1):
    return ALGORITHMS.get_spec(algorithm).shape_for(parts, c)


@pytest.mark.parametrize("algorithm,ranks,parts,c,fragment", [
    ("1d", 2, 4, 1, "run with mpirun -n 4"), ("1.5d", 6, 4, 2, "run with mpirun -n 8 (--algorithm 1.5d: 4 parts x"),
    ("2d", 8, 2, 1, "square grid"), ("2d", 9, 2, 1, "square grid"), ("1d", 4, 4, 2, "needs --algorithm 1.5d"),
    ("3d", 8, 2, 1, "choose from")])
def test_a_job_that_is_not_a_grid_is_refused(algorithm, ranks, parts, c, fragment):
    with pytest.raises(UserError, match=fragment.replace("(", r"\(").replace("+", r"\+")):
        grid_shape(algorithm, ranks, parts, c)


def test_rows_by_columns_messages():
    assert rows_by_columns("1.5d", 6, 3, 2) == GridShape("1.5d", 3, 2)
    with pytest.raises(UserError) as e:
        rows_by_columns("1d", 2, 1, 1)
    assert str(e.value) == "the store has 1 part but the job has 2 ranks; run with mpirun -n 1"
    with pytest.raises(UserError) as e:
        rows_by_columns("1.5d", 1, 3, 2)
    assert str(e.value) == ("the store has 3 parts but the job has 1 rank; run with mpirun -n 6 (--algorithm 1.5d: "
                            "3 parts x --replication 2)")
    with pytest.raises(UserError, match=r"^--replication 0: must be >= 1$"):
        rows_by_columns("1.5d", 4, 4, 0)


def test_ranks_are_laid_out_row_by_row():
    shape = grid_shape("1.5d", 6, 3, 2)
    assert (shape.rows, shape.cols, shape.ranks) == (3, 2, 6)
    assert [shape.position(r) for r in range(6)] == [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1)]
    assert (grid_shape("2d", 9, 3).rows, grid_shape("2d", 9, 3).cols) == (3, 3)
    assert shape_for("2d", 4) == grid_shape("2d", 16, 4) and shape_for("1.5d", 4, 2) == grid_shape("1.5d", 8, 4, 2)


def test_grid_shape():
    g = GridShape("2d", 3, 3)
    assert (g.ranks, g.replication, g.position(np.int64(7))) == (9, 3, (2, 1))
    assert GridShape("1d", 4, 1).replication == 1 and GridShape("1d", 4, 1).position(3) == (3, 0)


def test_pairs_go_to_the_least_loaded_column():
    """Largest pair first, each to the column whose receiving and sending ranks stay lowest (by hand)."""
    v = np.array([[0, 5, 1], [4, 0, 0], [2, 3, 0]])  # v[q, i]: rows q sends to i
    a = assign_pairs(v, 2)
    # 0->1 (5): column 0; 1->0 (4): a tie, column 1 moves less; 2->1 (3): 1; 2->0 (2): 0; 0->2 (1): 1
    assert a[1, 0] == 0 and a[0, 1] == 1 and a[1, 2] == 1 and a[0, 2] == 0 and a[2, 0] == 1
    assert assign_pairs(v, 1).tolist() == np.zeros((3, 3), int).tolist()
    assert assign_pairs(v, 2, oblivious=True).tolist() == [[0, 1, 0]] * 3  # CAGNET's: block q on column q mod c


def test_greedy_assignment_splits_a_busy_row():
    v = np.zeros((5, 5), np.int64)
    v[1:, 0] = [10, 10, 10, 10]  # four parts send to part 0
    a = assign_pairs(v, 2)
    assert sorted(a[0, 1:].tolist()) == [0, 0, 1, 1]  # rank (0, 0) and (0, 1) receive 20 rows each


def test_assignment_ignores_the_diagonal():
    v = np.array([[100, 1], [1, 100]])
    assert assign_pairs(v, 2).tolist() == assign_pairs(v - np.diag([100, 100]), 2).tolist()
    assert v[0, 0] == 100  # not modified in place


def test_chunks_hold_the_rows_in_block_order():
    assert chunk_bounds(5, 2).tolist() == [0, 2, 5] and chunk_bounds(1, 3).tolist() == [0, 0, 0, 1]
    part = np.array([1, 0, 1, 1, 0])
    assert local_index(part, 2).tolist() == [0, 0, 1, 2, 1]
    assert chunk_of(part, 2, 2).tolist() == [0, 0, 1, 1, 1]  # part 0 rows [0 | 1], part 1 rows [0 | 1, 2]
    assert chunk_of(np.array([0, 0, 0]), 1, 4).tolist() == [1, 2, 3]  # an empty first chunk


def test_slice_bounds_split_the_columns():
    assert slice_bounds(5, 2).tolist() == [0, 2, 5] and slice_bounds(2, 3).tolist() == [0, 0, 1, 2]
    assert slice_bounds(16, 4).tolist() == [0, 4, 8, 12, 16]


def test_row_supports_of_the_path():
    cost = path_cost()
    a = assign_pairs(cost.volume, 2)
    assert a[0, 1] == 0 and a[1, 0] == 1  # equal volumes: row 0's pair first, row 1's to the quieter column
    fwd, fold = row_supports(cost.graph, cost.part, 2, a, 2)
    # forward: row 1 (part 0, chunk 1) needs part 1 on column a[0, 1] = 0; row 2 (part 1, chunk 0) on column 1
    assert np.argwhere(fwd).tolist() == [[0, 0, 1], [1, 1, 0]]
    # fold: column 2 (part 1, chunk 0) comes back to column 0; column 1 (part 0, chunk 1) to column 1
    assert np.argwhere(fold).tolist() == [[0, 1, 1], [1, 0, 0]] and fwd.sum() == fold.sum() == 2


def test_block_nonzeros_of_the_path():
    cost = path_cost()
    # rows 0, 1 (part 0): columns 0, 1 | 0, 1, 2; rows 2, 3 (part 1): 1, 2, 3 | 2, 3
    assert block_nnz(cost.graph, cost.part, 2).tolist() == [[4, 1], [1, 4]]
    assert block_nnz(cost.graph, np.array([0, 1, 2, 3]), 4).tolist() == \
        [[1, 1, 0, 0], [1, 1, 1, 0], [0, 1, 1, 1], [0, 0, 1, 1]]
