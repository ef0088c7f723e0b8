"""What the cost models need of a partition (core/partition.py), on a hand graph."""

import numpy as np
import pytest
import scipy.sparse as sp

from shgcn.core.partition import PartitionCost, dims_of, own_nonzeros

PART = np.array([0, 0, 1, 1, 2])
# a directed pattern: row i needs column j; plus the diagonal
EDGES = [(0, 2), (1, 2), (4, 2), (4, 0), (2, 3), (3, 1), (0, 1)]


def hand_graph() -> sp.csr_matrix:
    rows, cols = zip(*EDGES, *((i, i) for i in range(5)))
    return sp.csr_matrix((np.ones(len(rows), np.float32), (rows, cols)), shape=(5, 5))


def hand_cost(graph=True) -> PartitionCost:
    volume = np.array([[0, 1, 1], [1, 0, 1], [0, 0, 0]])
    return PartitionCost("hp", volume, np.array([5, 4, 3]), np.array([2, 2, 1]), np.array([3, 3, 1]), True,
                         hand_graph() if graph else None, PART if graph else None)


def test_pairs_by_hand():
    """Row 2 (part 1) is needed by rows 0 and 1 (part 0: once) and row 4 (part 2); row 0 by row 4 (part 2);
    row 1 by row 3 (part 1); (2, 3) and (0, 1) stay inside their parts."""
    rows, dest = hand_cost().pairs()
    assert list(zip(rows.tolist(), dest.tolist())) == [(0, 2), (1, 1), (2, 0), (2, 2)]  # by (owner, row, part)
    assert rows.dtype == np.int64 and dest.dtype == np.int64
    # each pair is one row the owner sends: the volume matrix counts them
    v = np.zeros((3, 3), np.int64)
    np.add.at(v, (PART[rows], dest), 1)
    assert v.tolist() == hand_cost().volume.tolist()


def test_pairs_are_sorted_by_owner_first():
    part = np.array([1, 0])  # row 0 belongs to part 1
    a = sp.csr_matrix(np.array([[1, 1], [1, 1]], np.float32))
    cost = PartitionCost("x", np.array([[0, 1], [1, 0]]), np.array([2, 2]), np.array([1, 1]), None, False, a, part)
    rows, dest = cost.pairs()
    assert rows.tolist() == [1, 0] and dest.tolist() == [1, 0]


def test_pairs_need_the_graph():
    with pytest.raises(ValueError, match="need the partition's graph and part vector"):
        hand_cost(graph=False).pairs()


def test_parts():
    assert hand_cost().parts == 3


def test_own_nonzeros_by_hand():
    # the diagonal (2, 2, 1 per part) and (0, 1), (2, 3) inside parts 0 and 1
    assert own_nonzeros(hand_graph(), PART, 3).tolist() == [3, 3, 1]
    assert own_nonzeros(hand_graph(), PART, 4).tolist() == [3, 3, 1, 0]


def test_dims_of():
    assert dims_of(8, (16, 4), 3) == [8, 16, 4, 3]
    out = dims_of(np.int64(8), [], np.int32(2))
    assert out == [8, 2] and all(type(d) is int for d in out)
