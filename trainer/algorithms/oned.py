"""``1d``: a rank per part (cost model: :mod:`shgcn.core.algorithms.oned`).
The rank's exchange (``--exchange``) moves the rows its neighbours need; its
operators are the local matrix and its pattern over that exchange."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from shgcn.core.memory import Held, rank_bytes

from ..config import TrainError
from ..context import Context, Local, finish
from ..exchanges import EXCHANGES, make
from ..graph import Graph, RowOperators
from ..minibatch import BatchView
from ..outofcore import OutOfCoreBatches
from ..plan import LocalMatrix, full_local, local_matrix
from ..wire import Wire
from .base import check_memory, peers


def connect(local: Local, comm) -> Context:
    """Node layout, the exchange (collective for the node-aware one), the operators, the memory check."""
    cfg, cp, block, be = local.cfg, local.cp, local.block, local.backend
    nodes = peers(local, comm)
    # an exchange that reads the rank's matrix at setup (the node-aware one: the halo columns' pins) asks for it
    batches = local.batches
    out_of_core = isinstance(batches, OutOfCoreBatches)

    def whole():  # an exchange that reads the rank's whole matrix at setup cannot run out of core
        if out_of_core:
            raise TrainError(f"--exchange {cfg.exchange}: its setup reads the rank's whole block, which "
                             "--out-of-core leaves in the store; choose another --exchange")
        return full_local(block.plan, cp)

    ex = make(cfg.exchange, comm, cp, Wire(cfg.exchange_dtype), nodes, local=whole,
              **EXCHANGES.get(cfg.exchange).own(cfg.options))
    if isinstance(batches, OutOfCoreBatches):  # no full-batch operators: the block stays in the store
        graph = Graph(RowOperators(LocalMatrix(own=sp.csr_matrix((0, 0), dtype=np.float32), halo={}), ex,
                                   local.symmetric, be), np.zeros(0, np.int64))
        memory = batches.memory(local.job)
    else:
        graph = Graph(RowOperators(local_matrix(block.plan, cp), ex, local.symmetric, be),
                      local.col_gids(local.data.gids, cp.recv_ids))
        memory = int(rank_bytes(Held(block.n_own, int(block.plan.indices.shape[0]), cp.recv_rows,
                                     sent=cp.send_rows), local.job))

    def batch_graph(v: BatchView) -> Graph:
        """The operators of batch view ``v`` (its plan is the exchange's inside ``ex.using(v.cp)``)."""
        return Graph(RowOperators(v.lm, ex, local.symmetric, be), local.col_gids(local.data.gids[v.rows], v.halo_new),
                     v.left)

    return finish(local, counters=ex.counters, graph=graph, peers=nodes, memory=memory,
                  memory_all=check_memory(local, memory, comm), exchange=ex, batch_graph=batch_graph)
