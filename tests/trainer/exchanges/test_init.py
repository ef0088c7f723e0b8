"""The exchanges' registry in the trainer (trainer/exchanges/__init__.py): make() builds each registered
exchange by its spec's path."""

import numpy as np
from mpi4py import MPI

from shgcn.core.exchanges import EXCHANGES
from shgcn.trainer.exchanges import Peers, make
from shgcn.trainer.plan import CommPlan
from shgcn.trainer.wire import Wire


def test_make_builds_every_flat_exchange_on_one_rank():
    cp = CommPlan(0, 1, np.array([0, 3]), [], [], np.zeros(2, np.int64), np.zeros(0, np.int64))
    for name, spec in EXCHANGES.items():
        if spec.node_aware:
            continue  # its setup needs the local matrix (tests/trainer/exchanges/test_node.py)
        ex = make(name, MPI.COMM_SELF, cp, Wire(), Peers.one_node(1))
        got: list = []
        ex.expand(np.ones((3, 2), np.float32), lambda got=got: got.append("local"),
                  lambda q, rows, got=got: got.append(q))
        assert ex.name == name and got == ["local"] and ex.counters.calls == [0]
