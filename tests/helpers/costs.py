"""Partitions and machines small enough to count the cost models' bytes and seconds by hand."""

import numpy as np
import scipy.sparse as sp

from shgcn.core.machine import Channel, ComputeModel, Machine
from shgcn.core.partition import PartitionCost

NO_COMPUTE = ComputeModel(spmm=0.0, dense=0.0, elem=0.0, const=0.0, source="none")


def path_cost(directed=False) -> PartitionCost:
    """The path 0-1-2-3 with self loops, parts [0, 0, 1, 1]: each part sends one row to the other."""
    a = sp.csr_matrix(np.array([[1, 1, 0, 0], [1, 1, 1, 0], [0, 1, 1, 1], [0, 0, 1, 1]], np.float32))
    part = np.array([0, 0, 1, 1])
    return PartitionCost(model="hp", volume=np.array([[0, 1], [1, 0]]), load=np.array([5, 5]),
                         rows=np.array([2, 2]), own=np.array([4, 4]), directed=directed, graph=a, part=part)


def machine(ranks_per_node=1, intra=(1.0, 0.01), inter=(10.0, 0.1), link_rate=None, cores=4096,
            compute=NO_COMPUTE) -> Machine:
    """A machine whose paths are round numbers: ``intra`` and ``inter`` are (alpha s, beta s per byte)."""
    return Machine("hand", ranks_per_node, Channel(*intra), Channel(*inter), link_rate, cores, compute)


# 4 ranks on 2 nodes of 2 (tests/core/exchanges/test_node.py counts its messages by hand): rank r owns rows 2r, 2r + 1
NODE_OWNER = np.array([0, 0, 1, 1, 2, 2, 3, 3])
NODE_PAIRS = [(0, 1), (2, 0), (5, 3),  # (row, rank that needs it) inside a node
              (0, 2), (0, 3), (1, 3), (3, 2),  # node 0's rows node 1 needs: 0 (twice), 1, 3
              (4, 0), (6, 0), (6, 1)]  # node 1's rows node 0 needs: 4, 6 (twice)


def node_cost(directed=False) -> PartitionCost:
    """:data:`NODE_PAIRS` as a graph: vertex 2q (on rank q) needs column j, and the diagonal."""
    entries = [(2 * q, r) for r, q in NODE_PAIRS] + [(i, i) for i in range(8)]
    rows, cols = zip(*entries)
    a = sp.csr_matrix((np.ones(len(rows), np.float32), (rows, cols)), shape=(8, 8))
    volume = np.zeros((4, 4), np.int64)
    for r, q in NODE_PAIRS:
        volume[NODE_OWNER[r], q] += 1
    load = np.bincount(NODE_OWNER[a.tocoo().row], minlength=4)
    return PartitionCost("hp", volume, load, np.full(4, 2), np.full(4, 2), directed, a, NODE_OWNER)
