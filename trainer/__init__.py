"""shgcn trainer: distributed GNN training (GCN, GraphSAGE, GIN, GAT) on a store with MPI.

Entry points: ``shgcn-train`` (console script), ``python -m shgcn.trainer``,
and ``trainer/train.py`` in a checkout; see :mod:`.cli`.

- a run: :mod:`.config` (options), :mod:`.outputs` (what it writes, checked
  first), :mod:`.context` (a rank's setup), :mod:`.loop` (epochs, steps,
  evaluation, run log), :mod:`.checkpoint`, :mod:`.summary`, :mod:`.watchdog`,
  :mod:`.mpicheck` (mpi4py's MPI against the launcher);
- a step: :mod:`.plan` (MPI buffers from the stored plan), :mod:`.spmm` and
  :mod:`.graph` (a step's operators), :mod:`.minibatch` (per-batch plans),
  :mod:`.wire` (the rows' type on the wire), :mod:`.targets` (loss and score),
  :mod:`.optim` (Adam), :mod:`.phases` (where a step's time goes);
- the parts, each one declared object (:mod:`.parts`: a spec of
  :mod:`shgcn.core`'s registries, with its options and cost model, joined to
  its implementation): :mod:`.archs` (``--arch``), :mod:`.exchanges`
  (``--exchange``), :mod:`.algorithms` (``--algorithm``: 1D, 1.5D, 2D),
  :mod:`.backends` (``--backend``/``--device``: the local kernels); parts
  declared outside the tree load as :mod:`shgcn.core.plugins` (on a registry's first lookup);
- :mod:`.torchdist`: a store's blocks and halo exchange for your own PyTorch
  model.

Depends on :mod:`shgcn.store` and :mod:`shgcn.core`, never on
:mod:`shgcn.pipeline`.
"""
