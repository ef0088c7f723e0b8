"""What every algorithm's connect shares (trainer/algorithms/base.py): the owner of each local column, and
nodes from --ranks-per-node (the memory check and SHARED nodes run in the MPI tests)."""

import numpy as np
from mpi4py import MPI

from shgcn.trainer.algorithms.base import column_owner, peers
from shgcn.trainer.config import TrainConfig
from shgcn.trainer.plan import CommPlan


def test_column_owner():
    cp = CommPlan(1, 3, np.array([0, 2, 4, 6]), [], [(0, 1), (2, 2)], np.array([0, 1, 1, 3]), np.array([1, 4, 5]))
    assert column_owner(np.array([0, 1, 2, 3, 4]), 2, cp).tolist() == [1, 1, 0, 2, 2]


def test_virtual_nodes_need_no_communication():
    class Local:
        cfg = TrainConfig(store="s", ranks_per_node=2)

    assert peers(Local(), MPI.COMM_SELF).node.tolist() == [0]
    assert peers(type("L", (), {"cfg": TrainConfig(store="s")})(), MPI.COMM_SELF).node.tolist() == [0]
