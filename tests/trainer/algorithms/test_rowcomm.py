"""Communication within a 1.5D row (trainer/algorithms/rowcomm.py) on a row of one rank: the reduce adds the
partial sums of the support rows to the chunk, the gather returns what it was given."""

import numpy as np
from mpi4py import MPI

from shgcn.trainer.algorithms.rowcomm import RowGather, RowReduce
from shgcn.trainer.exchanges import Counters


def test_a_row_of_one_rank():
    c = Counters()
    r = RowReduce(MPI.COMM_SELF, np.array([0, 4]), [np.array([1, 3])], c)
    chunk = np.ones((4, 2), np.float32)
    out = r.combine(chunk, np.array([[1, 1], [2, 2]], np.float32))
    assert out.tolist() == [[1, 1], [2, 2], [1, 1], [3, 3]] and c.bytes_sent == 0
    g = RowGather(MPI.COMM_SELF, c)
    assert g.share(np.ones((2, 2), np.float32), [2])[0].tolist() == [[1, 1], [1, 1]]
