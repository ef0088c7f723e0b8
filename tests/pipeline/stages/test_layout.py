import numpy as np
import pytest
import scipy.sparse as sp
from helpers.graphs import FIG2_EDGES, FIG2_PART, a_hat

from shgcn.pipeline.metrics import volume as quality
from shgcn.pipeline.nodes import NodeData
from shgcn.pipeline.stages import layout


def nodes(n, d=3):
    x = np.arange(n * d, dtype=np.float32).reshape(n, d)
    z = np.zeros(n, bool)
    return NodeData(x, np.arange(n, dtype=np.int32), z, z, z)


def blocks(a, part, p, directed=False):
    """The build's layout functions on one process; and P Â P^T for checking."""
    lay, bs = layout.in_memory(a, part, p, nodes(a.shape[0]), directed)
    a_new = a[lay.perm][:, lay.perm].tocsr()
    a_new.sort_indices()
    return lay, a_new, bs


def test_figure2_plans():
    a = a_hat(6, FIG2_EDGES)
    lay, a_new, bs = blocks(a, FIG2_PART, 3)
    assert lay.offsets.tolist() == [0, 2, 4, 6]
    assert lay.perm.tolist() == [0, 1, 2, 3, 4, 5]
    # rank 0 receives rows 2, 3 from rank 1 and row 4 from rank 2
    assert bs[0].plan.recv_ids.tolist() == [2, 3, 4]
    assert bs[0].plan.recv_ptr.tolist() == [0, 0, 2, 3]
    # rank 0 sends its rows 0 and 1 to rank 1, row 1 to rank 2
    assert bs[0].plan.send_ptr.tolist() == [0, 0, 2, 3]
    assert bs[0].plan.send_rows.tolist() == [0, 1, 1]
    q = quality.partition_quality(a, FIG2_PART, 3)
    for r, b in enumerate(bs):
        assert b.plan.send_volume().tolist() == q.volume[r].tolist()
        assert b.plan.recv_volume().tolist() == q.volume[:, r].tolist()


@pytest.mark.parametrize("directed", [False, True])
def test_blocks_reassemble_the_permuted_matrix(directed):
    rng = np.random.default_rng(1)
    n, p = 80, 4
    a = a_hat(n, [tuple(e) for e in rng.integers(0, n, (300, 2))], directed=directed)
    part = rng.integers(0, p, n).astype(np.int32)
    lay, a_new, bs = blocks(a, part, p, directed)
    rows = []
    for b in bs:
        # local column -> global new id: own range, then received ids
        col_global = np.concatenate([np.arange(b.offset, b.offset + b.n_own), b.plan.recv_ids])
        m = sp.csr_matrix((b.plan.data, col_global[b.plan.indices], b.plan.indptr), shape=(b.n_own, n))
        rows.append(m)
        # what q sends to r is exactly r's received ids from q, in order
        for q in range(p):
            sent = bs[q].plan.send_rows[bs[q].plan.send_ptr[b.rank]:bs[q].plan.send_ptr[b.rank + 1]] + bs[q].offset
            got = b.plan.recv_ids[b.plan.recv_ptr[q]:b.plan.recv_ptr[q + 1]]
            assert sent.tolist() == got.tolist()
        np.testing.assert_array_equal(b.features, nodes(n).features[lay.perm[b.offset:b.offset + b.n_own]])
    assert (sp.vstack(rows).tocsr() != a_new).nnz == 0
    if directed:  # and Â^T's plans reassemble (P Â P^T)^T
        t_rows = [sp.csr_matrix((b.transpose.data, np.concatenate([np.arange(b.offset, b.offset + b.n_own),
                                                                     b.transpose.recv_ids])[b.transpose.indices],
                                 b.transpose.indptr), shape=(b.n_own, n)) for b in bs]
        assert (sp.vstack(t_rows).tocsr() != a_new.T.tocsr()).nnz == 0


def test_spmm_through_the_plan_equals_global_spmm():
    rng = np.random.default_rng(2)
    n, p = 50, 3
    a = a_hat(n, [tuple(e) for e in rng.integers(0, n, (150, 2))])
    part = rng.integers(0, p, n).astype(np.int32)
    lay, a_new, bs = blocks(a, part, p)
    h = rng.standard_normal((n, 4)).astype(np.float32)
    h_new = h[lay.perm]
    for b in bs:
        own = h_new[b.offset:b.offset + b.n_own]
        received = [h_new[bs[q].offset + bs[q].plan.send_rows[bs[q].plan.send_ptr[b.rank]:bs[q].plan.send_ptr[b.rank + 1]]]
                    for q in range(p)]
        local = np.vstack([own] + received)
        m = sp.csr_matrix((b.plan.data, b.plan.indices, b.plan.indptr), shape=(b.n_own, local.shape[0]))
        np.testing.assert_allclose(m @ local, (a_new @ h_new)[b.offset:b.offset + b.n_own], rtol=1e-5, atol=1e-6)
