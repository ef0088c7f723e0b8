"""The numpy backend (trainer/backends/numpy.py) under the backend conformance tests, with one thread and with
the parallel kernels (``--threads``)."""

from helpers.parts import BackendTests


class TestNumpyBackend(BackendTests):
    backend = "numpy"


class TestNumpyBackendThreads(BackendTests):
    backend = "numpy"
    threads = 3  # more than this machine's cores: the pool is capped, the chunks are still three


def _halo_block(rng, rows: int, cols: int, nonempty: int, nnz: int):
    import numpy as np
    import scipy.sparse as sp

    r = rng.choice(rng.choice(rows, nonempty, replace=False), nnz)
    c = rng.integers(0, cols, nnz)
    return sp.csr_matrix((rng.standard_normal(nnz).astype(np.float32), (r, c)), shape=(rows, cols))


def test_spmm_add_equals_adding_the_whole_product_bit_for_bit():
    """``spmm_add`` (issue 59: a halo block's product on its nonempty rows only) gives y + m x with the bits of
    ``y += spmm(m, x)``, at T = 1 and with the parallel kernel, for a sparse block, a full one and an empty one."""
    import numpy as np
    import scipy.sparse as sp

    from shgcn.trainer.backends.numpy import NumpyBackend, nonempty_rows

    rng = np.random.default_rng(7)
    x = rng.standard_normal((300, 64)).astype(np.float32)
    blocks = [_halo_block(rng, 4000, 300, 500, 1100), _halo_block(rng, 4000, 300, 500, 60_000),
              sp.csr_matrix(rng.standard_normal((50, 300)).astype(np.float32)),
              sp.csr_matrix((4000, 300), dtype=np.float32)]
    for threads in (1, 2):
        be = NumpyBackend(threads)
        for m in blocks:
            y = rng.standard_normal((m.shape[0], 64)).astype(np.float32)
            expect = y.copy()
            expect += be.spmm(m, x)
            got = be.spmm_add(y.copy(), m, x)
            assert got.tobytes() == expect.tobytes()
            rows, compact = nonempty_rows(m)
            assert (np.diff(m.indptr)[rows] > 0).all() and compact.nnz == m.nnz
            assert (compact.toarray() == m.toarray()[rows]).all()
