"""shgcn trainer: distributed GCN training on a store with MPI.

Entry points: ``shgcn-train`` (console script), ``python -m shgcn.trainer``,
and ``trainer/train.py`` in a checkout; see :mod:`shgcn.trainer.cli`.
Modules: ``config`` (options), ``context`` (a rank's setup), ``loop``
(epochs, evaluation, run log), ``checkpoint``, ``plan`` (MPI buffers from the
stored plan), ``exchange`` (p2p / alltoallv / bcast), ``spmm``, ``model``
(GCN, Adam), ``minibatch`` (per-batch plans). Depends on :mod:`shgcn.store`
only, never on :mod:`shgcn.pipeline`.
"""
