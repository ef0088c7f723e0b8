"""shgcn trainer: distributed GNN training (GCN, GraphSAGE, GIN, GAT) on a store with MPI.

Entry points: ``shgcn-train`` (console script), ``python -m shgcn.trainer``,
and ``trainer/train.py`` in a checkout; see :mod:`shgcn.trainer.cli`.
Modules: ``config`` (options), ``context`` (a rank's setup), ``loop``
(epochs, steps, evaluation, run log), ``checkpoint``, ``plan`` (MPI buffers
from the stored plan), ``exchange`` (p2p / alltoallv / bcast) and ``wire``
(the rows' type on the wire), ``spmm`` and ``graph`` (a step's operators),
``model`` (the Model interface, loss, Adam), ``archs`` (``--arch``: ``gcn``,
``sage``, ``gin``, ``gat``), ``backend`` and ``kernels`` (the local
kernels), ``minibatch`` (per-batch plans), ``grid`` (``--algorithm``: the
memory check and the grid's setup), ``spmm15`` and ``rowcomm`` (1.5D),
``summa`` (2D). Depends on :mod:`shgcn.store`
only, never on :mod:`shgcn.pipeline`.
"""
