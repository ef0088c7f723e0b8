"""``1.5d``, CAGNET's 1.5D with replication c (core/algorithms/onehalfd.py): bytes by kind, times and memory on
the path 0-1-2-3 (parts [0, 0, 1, 1]), by hand."""

import numpy as np
import pytest
from helpers.costs import machine, path_cost

from shgcn.core import epoch
from shgcn.core.algorithms import ALGORITHMS, COMBINES, GridShape
from shgcn.core.algorithms.onehalfd import RowGrid
from shgcn.core.costs import Job
from shgcn.core.errors import UserError

HALF = ALGORITHMS["1.5d"]


def job(**kw) -> Job:
    return Job((3, 2), algorithm="1.5d", replication=2, **kw)


def test_the_grid_and_the_plans():
    assert HALF.shape(8, 4, 2) == GridShape("1.5d", 4, 2) == HALF.shape_for(4, 2)
    assert HALF.plans(8, [1, 2, 3, 4]) == [(2, 4), (4, 2)]  # c = 1 is 1d; 3 does not divide 8


def test_how_a_row_combines():
    assert COMBINES == ("auto", "reduce", "gather")
    assert HALF.combine(job(), "auto") == "reduce" and HALF.combine(job(arch="gat"), "auto") == "gather"
    assert HALF.combine(job(), "gather") == "gather"
    with pytest.raises(UserError, match=r"^--arch gat under --algorithm 1.5d needs --row-combine gather"):
        HALF.combine(job(arch="gat"), "reduce")
    with pytest.raises(UserError, match=r"^--row-combine 'sum': choose from auto, reduce, gather$"):
        HALF.combine(job(), "sum")


def test_the_checks_of_a_job():
    HALF.check(job(exchange="bcast"), minibatch=False)
    with pytest.raises(UserError, match=r"^--exchange node runs on --algorithm 1d only$"):
        HALF.check(job(exchange="node"), minibatch=False)
    with pytest.raises(UserError, match=r"^--row-combine gather \(GAT's\) needs a sparsity-aware --exchange"):
        HALF.check(job(arch="gat", exchange="bcast", combine="auto"), minibatch=False)
    with pytest.raises(UserError, match="full batch"):
        HALF.check(job(), minibatch=True)
    with pytest.raises(UserError, match="16-bit"):
        HALF.check(job(itemsize=2), minibatch=False)


def test_the_byte_counts_need_the_graph():
    cost = path_cost()
    cost.graph = None
    with pytest.raises(ValueError, match="need the partition's graph and part vector"):
        RowGrid(cost, GridShape("1.5d", 2, 2))


@pytest.mark.parametrize("directed", [False, True])
def test_one_replica_is_1d(directed):
    cost = path_cost(directed)
    dims = [3, 4, 2]
    one = epoch.rank_traffic(cost, Job(dims, arch="sage"))
    grid = epoch.rank_traffic(cost, Job(dims, arch="sage", algorithm="1.5d", replication=1))
    for key in ("bytes_sent", "msgs_sent", "bytes_recv"):
        assert grid[key].tolist() == one[key].tolist()
    assert grid["inrow_bytes"].sum() == 0 and grid["rows_bytes"].tolist() == one["bytes_sent"].tolist()


def test_15d_bytes_by_hand():
    """k = 2, c = 2, GCN [3, 2] (two SpMMs of width 2, 4 B a value). Rank (0, 0) multiplies block (0, 1)
    and receives row 2 from rank (1, 0); rank (1, 1) row 1 from (0, 1). In the row, a support row outside
    the rank's own one-row chunk goes to its owner (reduce-scatter), then every chunk to the other rank."""
    t = epoch.rank_traffic(path_cost(), Job((3, 2), algorithm="1.5d", replication=2))
    assert t["rows_bytes"].tolist() == [0, 2 * 8, 2 * 8, 0]
    assert t["inrow_bytes"].tolist() == [2 * (8 + 8), 2 * 8, 2 * 8, 2 * (8 + 8)]
    assert t["msgs_sent"].tolist() == [2 * 2, 2 * (1 + 2), 2 * (1 + 2), 2 * 2]
    assert t["calls"].tolist() == [[16, 16, 16, 16]] * 2


def test_oblivious_bytes_by_hand():
    """--exchange bcast: grid column j broadcasts the blocks q = j mod c: rank (0, 0) sends block 0's 2 rows to
    (1, 0), rank (1, 1) block 1's to (0, 1); in the row every row is reduced (1 out of the rank's chunk) and
    gathered (1): per SpMM of width 2, rows 2 x 2 x 4 B from the roots, in-row 2 x 2 x 4 B from everyone."""
    t = HALF.traffic(path_cost(), job(exchange="bcast"))
    assert t["rows_bytes"].tolist() == [32, 0, 0, 32] and t["inrow_bytes"].tolist() == [32] * 4
    assert t["msgs_sent"].tolist() == [6, 4, 4, 6] and t["matrix_bytes"].tolist() == [0] * 4
    assert t["bytes_recv"].tolist() == [32, 64, 64, 32]  # a root receives no block from its column
    # directed: the backward reduces onto the roots instead: (0, 1) and (1, 0) send the other root's block
    d = HALF.traffic(path_cost(directed=True), job(exchange="bcast"))
    assert d["rows_bytes"].tolist() == [16] * 4 and d["msgs_sent"].tolist() == [5] * 4


def test_gather_bytes_by_hand():
    """--row-combine gather: a rank sends the rows it received from its column to the other rank of its row:
    (0, 0) and (1, 1) received one row each (2 wide, 4 B) per SpMM."""
    t = HALF.traffic(path_cost(), job(combine="gather"))
    assert t["inrow_bytes"].tolist() == [16, 0, 0, 16] and t["rows_bytes"].tolist() == [0, 16, 16, 0]
    assert t["msgs_sent"].tolist() == [2, 4, 4, 2]  # one in-row message per SpMM, empty or not


def test_times_by_hand():
    """A node per rank (alpha 10 s, beta 0.1 s a byte), no compute. Per SpMM (w = 2): the column exchange, one
    message each way at most, 1 row: 10 + 0.1 x 2 x 4; the in-row reduce-scatter and allgather, 2 steps, 2 rows
    the busier direction: 20 + 0.1 x 4 x 4. Two SpMMs, then the allreduce of 24 B among 4: 2 x 10 x 2 + 3.6."""
    t = HALF.times(path_cost(), job(), machine())
    assert t["comm"] == pytest.approx([2 * (10.8 + 21.6) + 43.6] * 4)
    assert t["compute"].tolist() == [0.0] * 4 and t["epoch"] == pytest.approx(108.4)


def test_replication_multiplies_the_memory():
    cost = path_cost()
    one = ALGORITHMS["1d"].memory(cost, Job((3, 4, 2)))
    two = ALGORITHMS["1.5d"].memory(cost, Job((3, 4, 2), algorithm="1.5d", replication=2, combine="gather"))
    # every rank of a row holds its block (c times the job's), but only the rank whose grid column carries a pair
    # packs its row to send (block 0's row 1 goes over column 1, block 1's row 2 over column 0): 4 x 1 x 3 less
    # on (0, 0) and (1, 1) than 1d's
    assert two.tolist() == (np.repeat(one, 2) - 4 * 3 * np.array([1, 0, 0, 1])).tolist()


def test_reduce_memory_counts_the_block_row_and_the_rows_received():
    """GCN [3, 2] (widest exchange 2): 2 rows, 5 nonzeros; halo = the block row's 2 rows + rows received (1 on
    (0, 0) and (1, 1)): 16 x 5 + 16 x 2 + 4 x 2 x 3 + (8 x 2 x 2 + 4 x 2 x 3) + 4 x halo x 2; and one row packed
    to send on every rank (4 x 1 x 2): (0, 1) and (1, 0) their column exchange's, (0, 0) and (1, 1) their partial
    sum for the other chunk's row."""
    base = 80 + 32 + 24 + 56 + 8
    assert HALF.memory(path_cost(), job()).tolist() == [base + 24, base + 16, base + 16, base + 24]
