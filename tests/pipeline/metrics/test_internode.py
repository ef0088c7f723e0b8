"""What crosses between nodes (pipeline/metrics/internode.py): the rows' part sets, and the rows that cross
between nodes by hand, for the node-aware and the flat exchange."""

import numpy as np
import scipy.sparse as sp

from shgcn.pipeline.blocks import RowBlock
from shgcn.pipeline.metrics.internode import (
    Nets,
    NodeQuality,
    block_node_volume,
    flat_inter,
    flat_inter_rows,
    inter_rows,
    merge_nets,
    node_loads,
    part_nets,
)


def test_part_sets_are_merged_and_single_part_rows_dropped():
    # rows 0 and 2 travel to the same parts {0, 1}; row 1 stays in part 2; row 3 spans {1, 2, 3}
    nets = part_nets([0, 0, 0, 1, 2, 2, 3, 3, 3], [0, 1, 1, 2, 1, 0, 3, 1, 2], 4, [0, 2, 0, 3])
    sets = sorted((tuple(nets.pins[nets.ptr[i]:nets.ptr[i + 1]]), int(nets.weights[i])) for i in range(nets.count))
    assert sets == [((0, 1), 2), ((1, 2, 3), 1)]
    both = merge_nets(nets, part_nets([5, 5], [1, 0], 4, [0, 0, 0, 0, 0, 0]))
    assert sorted(both.weights.tolist()) == [1, 3] and merge_nets().count == 0 and part_nets([], [], 3, []).count == 0


def test_inter_rows_by_hand():
    nets = part_nets([0, 0, 1, 1, 1, 2, 2], [0, 3, 0, 1, 2, 2, 3], 4, [0, 0, 2])  # sets {0,3}, {0,1,2}, {2,3}
    assert inter_rows(nets, [0, 0, 1, 1]) == 1 + 1 + 0  # {0,3}: nodes 0, 1; {0,1,2}: 0, 1; {2,3}: node 1
    assert inter_rows(nets, [0, 1, 1, 0]) == 0 + 1 + 1
    assert inter_rows(Nets.empty(), [0, 1]) == 0
    # owners 0, 0, 2 on nodes [0, 0, 1, 1]: node 0 sends rows 0 and 1 across, node 1 sends none; node 1 receives both
    send, recv = node_loads(nets, [0, 0, 1, 1])
    assert send.tolist() == [2, 0] and recv.tolist() == [0, 2]
    v = np.array([[0, 2, 0, 1], [0, 0, 3, 0], [4, 0, 0, 0], [0, 0, 5, 0]])
    assert flat_inter_rows(v, [0, 0, 1, 1]) == 1 + 3 + 4 == 8


def test_node_volume_of_a_hand_block():
    """Columns 0..3 of Â (rows of Âᵀ), parts [0, 1, 2, 3], nodes of 2: column 0 is needed by parts 1 and 2
    (nodes 0 and 1), column 2 by parts 0 and 3 (nodes 0 and 1), column 3 by part 1."""
    at = sp.csr_matrix(np.array([[1, 1, 1, 0], [0, 1, 0, 0], [1, 0, 1, 1], [0, 1, 0, 1]], np.float32))
    block = RowBlock(0, 4, 4, at.indptr.astype(np.int64), at.indices.astype(np.int64))
    nv = block_node_volume(block, np.array([0, 1, 2, 3]), 2, 2)
    assert nv.tolist() == [[0, 1], [2, 0]]  # row 0 to node 1; rows 2 and 3 to node 0
    q = NodeQuality(2, nv, flat=5, block=3, how="block")
    m = q.metrics()
    assert (m["inter_volume"], m["max_node_send"], m["max_node_msgs"], m["nodes"]) == (3, 2, 1, 2)
    v = np.array([[0, 1, 1, 0], [0, 0, 0, 0], [1, 0, 0, 1], [0, 1, 0, 0]])
    assert flat_inter(v, 2) == 1 + 1 + 1
