"""A rank's stored plan as MPI neighbour lists and its local matrix by column block (trainer/plan.py), on a
3-rank split of a hand matrix."""

import numpy as np
import scipy.sparse as sp

from shgcn.pipeline.stages.layout import in_memory
from shgcn.trainer.plan import CommPlan, comm_plan, local_matrix, split_local


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


def test_split_by_column_slices_equals_the_split_through_csc():
    rng = np.random.default_rng(5)
    n, recv = 40, np.array([0, 0, 7, 7, 19], np.int64)  # senders 1 and 3 (7 and 12 rows); none from 2
    full = sp.random(n, n + 19, density=0.2, format="csr", dtype=np.float32, random_state=rng)
    cp = CommPlan(rank=0, size=4, offsets=np.array([0, 40, 47, 47, 59]), send_to=[], recv_from=[(1, 7), (3, 12)],
                  recv_start=recv, recv_ids=np.arange(19, dtype=np.int64))
    lm = split_local(full, cp)
    csc = full.tocsc()
    want = {"own": csc[:, :n].tocsr(), 1: csc[:, n:n + 7].tocsr(), 3: csc[:, n + 7:].tocsr()}
    got = {"own": lm.own, **lm.halo}
    assert got.keys() == want.keys()
    for k, m in want.items():
        assert got[k].shape == m.shape and got[k].has_sorted_indices
        for field in ("data", "indices", "indptr"):
            np.testing.assert_array_equal(getattr(got[k], field), getattr(m, field))
    shuffled = full.copy()
    assert shuffled.indptr[1] >= 3  # the first three nonzeros are row 0's
    shuffled.indices[:3], shuffled.data[:3] = shuffled.indices[:3][::-1].copy(), shuffled.data[:3][::-1].copy()
    shuffled.has_sorted_indices = False  # rows out of order: the blocks come back sorted all the same
    np.testing.assert_array_equal(split_local(shuffled, cp).own.toarray(), lm.own.toarray())
    assert split_local(shuffled, cp).own.has_sorted_indices
