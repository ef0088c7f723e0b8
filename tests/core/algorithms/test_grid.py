"""The process grids (store/grid.py) and their byte and time model
(store/gridcost.py, store/gridtime.py) on graphs small enough to count by hand."""

import numpy as np
import pytest
import scipy.sparse as sp

from shgcn.core import epoch
from shgcn.core.algorithms import ALGORITHMS, assign_pairs, chunk_bounds, chunk_of, local_index, row_supports
from shgcn.core.costs import Job
from shgcn.core.epoch import predict_algorithm, recommend
from shgcn.core.errors import UserError


def grid_shape(algorithm, ranks, parts, c=1):
    return ALGORITHMS.get_spec(algorithm).shape(ranks, parts, c)


def shape_for(algorithm, parts, c=1):
    return ALGORITHMS.get_spec(algorithm).shape_for(parts, c)


def path_cost(directed=False) -> epoch.PartitionCost:
    """The path 0-1-2-3 with self loops, parts [0, 0, 1, 1]: each part sends one row to the other."""
    a = sp.csr_matrix(np.array([[1, 1, 0, 0], [1, 1, 1, 0], [0, 1, 1, 1], [0, 0, 1, 1]], np.float32))
    part = np.array([0, 0, 1, 1])
    return epoch.PartitionCost(model="hp", volume=np.array([[0, 1], [1, 0]]), load=np.array([5, 5]),
                               rows=np.array([2, 2]), own=np.array([4, 4]), directed=directed, graph=a, part=part)


@pytest.mark.parametrize("algorithm,ranks,parts,c,fragment", [
    ("1d", 2, 4, 1, "run with mpirun -n 4"), ("1.5d", 6, 4, 2, "run with mpirun -n 8 (--algorithm 1.5d: 4 parts x"),
    ("2d", 8, 2, 1, "square grid"), ("2d", 9, 2, 1, "square grid"), ("1d", 4, 4, 2, "needs --algorithm 1.5d"),
    ("3d", 8, 2, 1, "choose from")])
def test_a_job_that_is_not_a_grid_is_refused(algorithm, ranks, parts, c, fragment):
    with pytest.raises(UserError, match=fragment.replace("(", r"\(").replace("+", r"\+")):
        grid_shape(algorithm, ranks, parts, c)


def test_ranks_are_laid_out_row_by_row():
    shape = grid_shape("1.5d", 6, 3, 2)
    assert (shape.rows, shape.cols, shape.ranks) == (3, 2, 6)
    assert [shape.position(r) for r in range(6)] == [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1)]
    assert (grid_shape("2d", 9, 3).rows, grid_shape("2d", 9, 3).cols) == (3, 3)
    assert shape_for("2d", 4) == grid_shape("2d", 16, 4) and shape_for("1.5d", 4, 2) == grid_shape("1.5d", 8, 4, 2)


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


def test_chunks_hold_the_rows_in_block_order():
    assert chunk_bounds(5, 2).tolist() == [0, 2, 5] and chunk_bounds(1, 3).tolist() == [0, 0, 0, 1]
    part = np.array([1, 0, 1, 1, 0])
    assert local_index(part, 2).tolist() == [0, 0, 1, 2, 1]
    assert chunk_of(part, 2, 2).tolist() == [0, 0, 1, 1, 1]  # part 0 rows [0 | 1], part 1 rows [0 | 1, 2]
    assert chunk_of(np.array([0, 0, 0]), 1, 4).tolist() == [1, 2, 3]  # an empty first chunk


def test_row_supports_of_the_path():
    cost = path_cost()
    a = assign_pairs(cost.volume, 2)
    assert a[0, 1] == 0 and a[1, 0] == 1  # equal volumes: row 0's pair first, row 1's to the quieter column
    fwd, fold = row_supports(cost.graph, cost.part, 2, a, 2)
    # forward: row 1 (part 0, chunk 1) needs part 1 on column a[0, 1] = 0; row 2 (part 1, chunk 0) on column 1
    assert np.argwhere(fwd).tolist() == [[0, 0, 1], [1, 1, 0]]
    # fold: column 2 (part 1, chunk 0) comes back to column 0; column 1 (part 0, chunk 1) to column 1
    assert np.argwhere(fold).tolist() == [[0, 1, 1], [1, 0, 0]] and fwd.sum() == fold.sum() == 2


@pytest.mark.parametrize("directed", [False, True])
def test_one_replica_is_1d(directed):
    cost = path_cost(directed)
    dims = [3, 4, 2]
    one = epoch.rank_traffic(cost, Job(dims, arch="sage"))
    grid = epoch.rank_traffic(cost, Job(dims, arch="sage", algorithm="1.5d", replication=1))
    for key in ("bytes_sent", "msgs_sent", "bytes_recv"):
        assert grid[key].tolist() == one[key].tolist()
    assert grid["inrow_bytes"].sum() == 0 and grid["rows_bytes"].tolist() == one["bytes_sent"].tolist()


def test_summa_bytes_by_hand():
    """2 x 2 grid, GCN [3, 2]: two SpMMs of width 2 (H W first), each rank a slice of width 1.
    Per SpMM: H's slice down the column (2 rows x 1 x 4 B), the allgather (the same), and block (i, j)
    along the row: 4 (2 + 1) B of row pointers + 8 B per nonzero (blocks 4, 1 / 1, 4)."""
    t = epoch.rank_traffic(path_cost(), Job((3, 2), algorithm="2d"))
    assert t["matrix_bytes"].tolist() == [2 * 44, 2 * 20, 2 * 20, 2 * 44]
    assert t["rows_bytes"].tolist() == t["inrow_bytes"].tolist() == [16] * 4
    assert t["bytes_sent"].tolist() == [120, 72, 72, 120] and t["msgs_sent"].tolist() == [6] * 4
    assert t["calls"].tolist() == [[60, 36, 36, 60]] * 2


def test_15d_bytes_by_hand():
    """k = 2, c = 2, GCN [3, 2] (two SpMMs of width 2, 4 B a value). Rank (0, 0) multiplies block (0, 1)
    and receives row 2 from rank (1, 0); rank (1, 1) row 1 from (0, 1). In the row, a support row outside
    the rank's own one-row chunk goes to its owner (reduce-scatter), then every chunk to the other rank."""
    t = epoch.rank_traffic(path_cost(), Job((3, 2), algorithm="1.5d", replication=2))
    assert t["rows_bytes"].tolist() == [0, 2 * 8, 2 * 8, 0]
    assert t["inrow_bytes"].tolist() == [2 * (8 + 8), 2 * 8, 2 * 8, 2 * (8 + 8)]
    assert t["msgs_sent"].tolist() == [2 * 2, 2 * (1 + 2), 2 * (1 + 2), 2 * 2]
    assert t["calls"].tolist() == [[16, 16, 16, 16]] * 2


def test_times_and_recommendation():
    cost = path_cost()
    rows = predict_algorithm([cost], Job((3, 4, 2), algorithm="1.5d", replication=2), "infiniband", ["p2p", "bcast"])
    assert [(r["ranks"], r["parts"], r["exchange"]) for r in rows] == [(4, 2, "p2p"), (4, 2, "bcast")]
    assert all(r["epoch"] > r["comm"] > 0 and r["memory"] > 0 for r in rows)
    fake = [{"ranks": 4, "epoch": 2.0, "n": 1}, {"ranks": 4, "epoch": 1.0, "n": 2}, {"ranks": 8, "epoch": 3.0, "n": 3}]
    assert [r["n"] for r in recommend(fake)] == [2, 3]


def test_replication_multiplies_the_memory():
    cost = path_cost()
    one = ALGORITHMS["1d"].memory(cost, Job((3, 4, 2)))
    two = ALGORITHMS["1.5d"].memory(cost, Job((3, 4, 2), algorithm="1.5d", replication=2, combine="gather"))
    assert two.tolist() == np.repeat(one, 2).tolist()  # every rank of a row holds its block: c times the job's
