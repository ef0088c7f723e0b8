"""A rank's stored plan as MPI neighbour lists and its local matrix by column block (trainer/plan.py), on a
3-rank split of a hand matrix."""

import numpy as np
import scipy.sparse as sp

from shgcn.pipeline.stages.layout import in_memory
from shgcn.trainer.plan import comm_plan, local_matrix


def test_plan_and_local_blocks_of_a_hand_matrix():
    # a path 0-1-2-3-4-5 with self loops, owners [0, 0, 1, 1, 2, 2]
    n = 6
    a = sp.diags([np.ones(n - 1), np.ones(n), np.ones(n - 1)], [-1, 0, 1], format="csr", dtype=np.float32)
    lay, blocks = in_memory(a, np.array([0, 0, 1, 1, 2, 2], np.int32), 3, directed=False)
    b = blocks[1]
    cp = comm_plan(b.plan, 1, lay.offsets)
    assert (cp.rank, cp.size) == (1, 3)
    # rank 1 (rows 2, 3) sends row 2 to rank 0 and row 3 to rank 2; receives row 1 from 0 and row 4 from 2
    assert [(q, rows.tolist()) for q, rows in cp.send_to] == [(0, [0]), (2, [1])]
    assert cp.recv_from == [(0, 1), (2, 1)] and cp.recv_ids.tolist() == [1, 4] and cp.recv_rows == 2
    lm = local_matrix(b.plan, cp)
    assert lm.own.toarray().tolist() == [[1, 1], [1, 1]]
    assert lm.halo[0].toarray().tolist() == [[1], [0]] and lm.halo[2].toarray().tolist() == [[0], [1]]
    assert lm.full.shape == (2, 4) and lm.halo_nnz().tolist() == [1, 1]
    np.testing.assert_array_equal(lm.own_t.toarray(), lm.own.toarray().T)
    pat = lm.pattern()
    assert pat.own.toarray().tolist() == [[0, 1], [1, 0]]  # self loops dropped
