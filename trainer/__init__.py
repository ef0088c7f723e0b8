"""shgcn trainer: distributed GCN training on a store with MPI (see train.py)."""
