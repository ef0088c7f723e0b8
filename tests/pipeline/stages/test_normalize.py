import numpy as np
from helpers.graphs import a_hat


def test_undirected_symmetric_normalization():
    # path 0 - 1 - 2: degrees with self loops 2, 3, 2
    a = a_hat(3, [(0, 1), (1, 2)]).toarray()
    d = np.array([2, 3, 2]) ** -0.5
    expect = (np.eye(3) + np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]])) * np.outer(d, d)
    np.testing.assert_allclose(a, expect, rtol=1e-6)
    assert a.dtype == np.float32


def test_directed_keeps_direction():
    # 0 -> 1 with loops: out-degrees (2, 1), in-degrees (1, 2); Â_ij = out_i^-1/2 in_j^-1/2
    a = a_hat(2, [(0, 1)], directed=True).toarray()
    r = 2 ** -0.5
    np.testing.assert_allclose(a, [[r, 0.5], [0, r]], rtol=1e-6)
    assert np.linalg.norm(a, 2) <= 1 + 1e-6


def test_the_blocks_of_a_hat_are_made_when_first_asked(fig2_directed):
    from shgcn.pipeline import blocks
    from shgcn.pipeline.stages.normalize import normalize_stage

    s = fig2_directed
    nrm = normalize_stage(s.tasks, s.ing, s.mon)
    assert nrm._made == {}  # nothing of Â submitted: the partition, quality and layout stages run without it
    assert nrm.patterns() == (s.ing.a, s.ing.at) and nrm.degrees() == (nrm.weights, nrm.in_deg)
    a, at = nrm.rows(s.tasks)
    assert nrm.rows(s.tasks) == (a, at)  # made once
    whole, whole_t = (blocks.full_matrix(*s.tasks.gather(list(x))).toarray() for x in (a, at))
    np.testing.assert_array_equal(whole_t, whole.T)
    np.testing.assert_allclose(whole, a_hat(6, list(zip(*blocks.full_matrix(*s.tasks.gather(list(s.ing.a))).nonzero())),
                                            directed=True).toarray(), rtol=1e-6)
