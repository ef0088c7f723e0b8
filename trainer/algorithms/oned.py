"""``1d``: a rank per part (cost model: :mod:`shgcn.core.algorithms.oned`).
The rank's exchange (``--exchange``) moves the rows its neighbours need; its
operators are the local matrix and its pattern over that exchange."""

from __future__ import annotations

from shgcn.core.exchanges import EXCHANGES
from shgcn.core.memory import Held, rank_bytes

from ..context import Context, Local, finish
from ..exchanges import make
from ..graph import Graph, RowOperators
from ..minibatch import BatchView
from ..plan import full_local, local_matrix
from ..wire import Wire
from .base import check_memory, peers


def connect(local: Local, comm) -> Context:
    """Node layout, the exchange (collective for the node-aware one), the operators, the memory check."""
    cfg, cp, block, be = local.cfg, local.cp, local.block, local.backend
    nodes = peers(local, comm)
    # a node-aware exchange learns at setup which rows each relay carries: it reads the halo columns' pins
    options = {"local": full_local(block.plan, cp)} if EXCHANGES.get_spec(cfg.exchange).node_aware else {}
    ex = make(cfg.exchange, comm, cp, Wire(cfg.exchange_dtype), nodes, **options)
    graph = Graph(RowOperators(local_matrix(block.plan, cp), ex, local.symmetric, be),
                  local.col_gids(local.data.gids, cp.recv_ids))
    memory = int(rank_bytes(Held(block.n_own, int(block.plan.indices.shape[0]), cp.recv_rows, sent=cp.send_rows),
                              local.job))

    def batch_graph(v: BatchView) -> Graph:
        """The operators of batch view ``v`` (its plan is the exchange's inside ``ex.using(v.cp)``)."""
        return Graph(RowOperators(v.lm, ex, local.symmetric, be), local.col_gids(local.data.gids[v.rows], v.halo_new),
                     v.left)

    return finish(local, exchange=ex, graph=graph, peers=nodes, memory=memory,
                  memory_all=check_memory(local, memory, comm),
                  batch_graph=batch_graph if local.batches is not None else None)
