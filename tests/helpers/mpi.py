"""Running the trainer in subprocesses, with or without mpirun: installed as :mod:`shgcn.testing.runs`
(re-exported here for the tests that import it from ``helpers``)."""

from shgcn.testing.runs import GRAPHS, TRAIN, build_stores, mpirun, read_log, train

__all__ = ["GRAPHS", "TRAIN", "build_stores", "mpirun", "read_log", "train"]
