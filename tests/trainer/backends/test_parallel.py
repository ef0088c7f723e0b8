"""The parallel kernels (trainer/backends/parallel.py): the SpMM against scipy's (allclose; and bit for bit, which
makes the losses of every ``--threads`` the same) and between chunk counts (exact), on random, skewed (one hub
row) and empty-row matrices; the row chunks; the elementwise and GAT attention kernels against the serial ones."""

import gc

import numpy as np
import pytest
import scipy.sparse as sp

from shgcn.trainer.backends import kernels, parallel
from shgcn.trainer.backends.numpy import NumpyBackend

CHUNKS = (1, 2, 3, 4, 8)


def random_csr(n: int, k: int, density: float, seed: int, index=np.int32) -> sp.csr_matrix:
    rng = np.random.default_rng(seed)
    m = sp.random(n, k, density=density, format="csr", dtype=np.float32, random_state=seed)
    m.data = rng.standard_normal(m.nnz).astype(np.float32)
    m.indices, m.indptr = m.indices.astype(index), m.indptr.astype(index)
    return m


def hub_csr(n: int, seed: int) -> sp.csr_matrix:
    """A sparse matrix whose row 3 holds every column (a hub: most of the nonzeros)."""
    m = random_csr(n, n, 2.0 / n, seed).tolil()
    m[3, :] = np.random.default_rng(seed).standard_normal(n).astype(np.float32)
    return sp.csr_matrix(m, dtype=np.float32)


def run(m: sp.csr_matrix, x: np.ndarray, chunks: int) -> np.ndarray:
    out = np.full((m.shape[0], x.shape[1]), np.nan, np.float32)  # every entry must be written
    return parallel.spmm(m.indptr, m.indices, m.data, x, parallel.row_bounds(m.indptr, chunks), out)


MATRICES = {
    "random": lambda: random_csr(300, 200, 0.05, 1),
    "random-int64": lambda: random_csr(257, 300, 0.02, 2, np.int64),
    "hub": lambda: hub_csr(400, 3),
    "empty-rows": lambda: sp.csr_matrix(sp.vstack([random_csr(50, 80, 0.1, 4), sp.csr_matrix((40, 80)),
                                                   random_csr(10, 80, 0.3, 5)]), dtype=np.float32),
    "no-nonzeros": lambda: sp.csr_matrix((30, 20), dtype=np.float32),
    "no-columns": lambda: sp.csr_matrix((30, 0), dtype=np.float32),
}


@pytest.mark.parametrize("name", list(MATRICES))
@pytest.mark.parametrize("d", [1, 16, 37])
def test_spmm_equals_scipy_and_does_not_depend_on_the_chunks(name, d):
    m = MATRICES[name]()
    x = np.random.default_rng(d).standard_normal((m.shape[1], d)).astype(np.float32)
    ref = np.asarray(m @ x, np.float32)
    outs = [run(m, x, c) for c in CHUNKS]
    assert np.allclose(outs[0], ref, rtol=1e-5, atol=1e-5)
    for out in outs:
        np.testing.assert_array_equal(out, outs[0])
    # scipy sums each row in CSR order too (csr_matvecs: y += a * x per entry): the same bits, which is what
    # keeps --threads 1 (scipy's product) and --threads T (this kernel) on the same losses
    np.testing.assert_array_equal(outs[0], ref)


def test_row_bounds_split_the_nonzeros_and_keep_a_hub_whole():
    m = hub_csr(1000, 7)
    work = np.diff(m.indptr) + 1
    for chunks in CHUNKS:
        b = parallel.row_bounds(m.indptr, chunks)
        assert b.size == chunks + 1 and b[0] == 0 and b[-1] == m.shape[0] and np.all(np.diff(b) >= 0)
        per_chunk = np.array([work[lo:hi].sum() for lo, hi in zip(b[:-1], b[1:])])
        assert per_chunk.sum() == work.sum()
        assert per_chunk.max() <= work.sum() / chunks + work.max()  # a chunk's share, plus at most one row
    hub = parallel.row_bounds(m.indptr, 4)
    assert np.sum((hub[:-1] <= 3) & (hub[1:] > 3)) == 1  # row 3 (most of the nonzeros) is in exactly one chunk
    even = np.diff(parallel.row_bounds(np.arange(0, 101, dtype=np.int64) * 3, 4))
    assert even.tolist() == [25, 25, 25, 25]  # a uniform matrix: equal rows


def test_even_rows():
    assert parallel.even_rows(10, 3).tolist() == [0, 3, 6, 10] and parallel.even_rows(0, 2).tolist() == [0, 0, 0]


@pytest.mark.parametrize("act", [0, 1, 2])
def test_dropout_kernels_equal_the_serial_ones(act):
    rng = np.random.default_rng(act)
    h = rng.standard_normal((203, 21)).astype(np.float32)
    gids = rng.permutation(1000)[:203].astype(np.int64)
    key, ctr = np.array([9, 0], np.uint64), np.array([2, 1], np.uint64)
    args = (gids, key, ctr, np.uint64(20000), 1.4, act)
    keep_s, keep_p = np.empty(h.shape, np.uint8), np.empty(h.shape, np.uint8)
    serial = kernels.dropout_dense(h, *args, np.empty_like(h), keep_s)
    for chunks in CHUNKS:
        par = parallel.dropout_dense(h, *args, np.empty_like(h), keep_p, parallel.even_rows(h.shape[0], chunks))
        np.testing.assert_array_equal(par, serial)
        np.testing.assert_array_equal(keep_p, keep_s)
    g = rng.standard_normal(h.shape).astype(np.float32)
    bounds = parallel.even_rows(h.shape[0], 3)
    np.testing.assert_array_equal(parallel.relu_dropout_grad(g.copy(), serial, 1.4, bounds),
                                  kernels.relu_dropout_grad(g.copy(), serial, 1.4))
    np.testing.assert_array_equal(parallel.elu_dropout_grad(g.copy(), serial, keep_s, 1.4, bounds),
                                  kernels.elu_dropout_grad(g.copy(), serial, keep_s, 1.4))


def _attention(seed: int, hub: bool):
    """A GAT layer's inputs over a CSR with more columns than rows (received ones), self loops, maybe a hub."""
    rng = np.random.default_rng(seed)
    n, m, heads, d = 60 + 7 * seed, 90 + 5 * seed, 1 + seed % 3, 4 + seed
    csr = (sp.random(n, m, density=0.06, random_state=seed, format="lil") + sp.eye(n, m, format="lil")).tolil()
    if hub:
        csr[3, :] = 1.0
    csr = csr.tocsr()
    csr.sort_indices()
    z = rng.standard_normal((m, heads * d)).astype(np.float32)
    scores = rng.standard_normal((m, heads)).astype(np.float32), rng.standard_normal((n, heads)).astype(np.float32)
    gids = rng.permutation(10 * m)[:n].astype(np.int64), rng.permutation(10 * m)[:m].astype(np.int64)
    g = rng.standard_normal((n, heads * d)).astype(np.float32)
    return csr.indptr.astype(np.int64), csr.indices.astype(np.int64), z, scores, gids, g


@pytest.mark.parametrize("seed,hub", [(0, False), (1, True), (2, True)])
@pytest.mark.parametrize("threshold", [0, 20000])
def test_attention_kernels_equal_the_serial_ones(seed, hub, threshold):
    """GAT's forward over row chunks and its backward (rows, then columns through the CSC) give the serial
    kernels' bits for any chunk count, attention dropout on and off, a hub row included."""
    indptr, indices, z, (s_src, s_dst), (rgid, cgid), g = _attention(seed, hub)
    n, heads = s_dst.shape
    rows = np.arange(n, dtype=np.int64)[::-1].copy()  # any order of rows: the forward takes them as given

    def layer(chunks):
        alpha, alpha_d = np.empty((indices.size, heads), np.float32), np.empty((indices.size, heads), np.float32)
        out = np.full((n, z.shape[1]), np.nan, np.float32)
        fwd = (rows, indptr, indices, z, s_src, s_dst, np.float32(0.2), rgid, cgid, np.array([9, 1], np.uint64),
               np.array([3, 5], np.uint64), np.uint64(threshold), np.float32(1.5), alpha, alpha_d, out)
        grads = np.zeros_like(z), np.zeros_like(s_src), np.zeros_like(s_dst)
        bwd = (indptr, indices, z, g, s_src, s_dst, np.float32(0.2), alpha, alpha_d, *grads)
        if chunks is None:
            kernels.gat_forward(*fwd)
            kernels.gat_backward(*bwd)
        else:
            deg = np.diff(indptr)[rows]
            parallel.gat_forward(*fwd, parallel.row_bounds(np.concatenate([[0], np.cumsum(deg)]), chunks))
            col_ptr, col_edge, col_row = parallel.columns(indptr, indices, z.shape[0])
            parallel.gat_backward(*bwd, parallel.row_bounds(indptr, chunks), col_ptr, col_edge, col_row,
                                  parallel.row_bounds(col_ptr, chunks))
        return alpha, alpha_d, out, *grads

    serial = layer(None)
    assert not np.isnan(serial[2]).any() and (serial[1] == 0).any() == (threshold > 0)
    for chunks in CHUNKS:
        for a, b in zip(layer(chunks), serial):
            np.testing.assert_array_equal(a, b)


def test_the_backends_attention_with_threads_equals_one_thread(monkeypatch):
    """Through the backend: forward of two row sets (interior, then boundary, as the GAT layer calls it) and
    the backward twice (the second reuses the cached columns), on 2 threads against 1, bit for bit."""
    from shgcn.trainer.backends import numpy as backend_module
    from shgcn.trainer.backends.base import Attention

    monkeypatch.setattr(backend_module, "_PARALLEL_MIN", 0)  # this small layer runs the threaded kernels too
    indptr, indices, z, (s_src, s_dst), (rgid, cgid), g = _attention(1, True)
    n, heads = s_dst.shape
    csr = sp.csr_matrix((np.ones(indices.size, np.float32), indices, indptr), shape=(n, z.shape[0]))
    results = []
    for threads in (1, 2):
        be = NumpyBackend(threads=threads)
        att = Attention(csr, z, s_src, s_dst, 0.2, rgid, cgid, None, 0, np.empty((csr.nnz, heads), np.float32),
                        np.empty((csr.nnz, heads), np.float32), np.empty((n, z.shape[1]), np.float32))
        be.gat_forward(np.arange(0, n, 2, dtype=np.int64), att)
        be.gat_forward(np.arange(1, n, 2, dtype=np.int64), att)
        first, second = be.gat_backward(att, g), be.gat_backward(att, g)
        assert all(np.array_equal(a, b) for a, b in zip(first, second))
        results.append((att.alpha, att.out, *first))
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


def test_the_columns_of_a_pattern_list_each_columns_rows_in_order():
    indptr, indices = np.array([0, 2, 3, 5]), np.array([1, 2, 0, 1, 2])  # rows: {1, 2}, {0}, {1, 2}
    col_ptr, col_edge, col_row = parallel.columns(indptr, indices, 4)
    assert col_ptr.tolist() == [0, 1, 3, 5, 5] and col_edge.tolist() == [2, 0, 3, 1, 4]
    assert col_row.tolist() == [1, 0, 2, 0, 2]


def test_the_backend_caches_a_matrix_chunks_until_the_matrix_goes():
    be = NumpyBackend(threads=2)
    m = random_csr(100, 100, 0.05, 8)
    x = np.ones((100, 4), np.float32)
    np.testing.assert_array_equal(be.spmm(m, x), m @ x)
    first = be._row_bounds(m)
    assert be._row_bounds(m) is first and be.threading_layer in ("omp", "tbb", "workqueue")
    del m
    gc.collect()
    assert be._bounds == {}
    assert NumpyBackend(threads=1).threading_layer is None  # one thread: scipy's product, numba's serial kernels


def _losses(path, kind):
    from helpers.mpi import read_log

    header, recs = read_log(path, kind)
    return header, [(r.loss, getattr(r, "train_acc", None), getattr(r, "val_acc", None)) for r in recs]


@pytest.mark.mpi
@pytest.mark.parametrize("ranks,mode", [
    (2, "full"),
    pytest.param(1, "full", marks=pytest.mark.slow), pytest.param(1, "minibatch", marks=pytest.mark.slow),
    pytest.param(2, "minibatch", marks=pytest.mark.slow)])
def test_losses_are_the_same_for_every_thread_count(mpi_stores, tmp_path, ranks, mode):
    """shgcn-train --threads 1, 2, 4 (4 oversubscribes this machine: correct, not fast; 400 rows x 64 columns run
    the parallel kernels): the same losses,
    accuracies (and mini-batch step losses) bit for bit, and the header says how many threads ran."""
    from helpers.mpi import train

    kind = "step" if mode == "minibatch" else "epoch"
    seen = {}
    for t in (1, 2, 4):
        log = tmp_path / f"t{t}.jsonl"
        res = train(ranks, mpi_stores["undirected", ranks], "--epochs", 3, "--threads", t, "--mode", mode,
                    "--hidden", "64,64", "--arch", "sage" if mode == "minibatch" else "gcn", log=log, timeout=600)
        assert res.returncode == 0, res.stderr
        header, seen[t] = _losses(log, kind)
        if mode == "minibatch":  # every step says where its time went, on every rank
            from helpers.mpi import read_log

            phases = read_log(log, "step")[1][0].phase_time
            assert len(phases) == ranks and {"forward", "backward", "allreduce_wait", "next_batch"} <= set(phases[0])
        assert header.threads == t and (header.threading_layer is None) == (t == 1)
        assert header.config["threads"] == t and len(seen[t]) >= 3
    assert seen[1] == seen[2] == seen[4]


def test_dense_products_split_by_rows_equal_the_whole_product():
    """With threads, X W and Xᵀ G run as T row ranges of the result, each one single-threaded BLAS call (the
    trainer's BLAS runs one thread): the same bits as the whole call, for skinny results too (the shapes
    whose inner dimension a multi-threaded OpenBLAS splits), and for any T."""
    from threadpoolctl import threadpool_limits  # the test extra's: pins BLAS to one thread here

    rng = np.random.default_rng(5)
    x = rng.standard_normal((30011, 64)).astype(np.float32)
    w = rng.standard_normal((64, 16)).astype(np.float32)
    g = rng.standard_normal((30011, 16)).astype(np.float32)
    with threadpool_limits(1, user_api="blas"):
        whole = NumpyBackend(threads=1)
        for t in (2, 3, 4):
            be = NumpyBackend(threads=t)
            np.testing.assert_array_equal(be.gemm(x, w), whole.gemm(x, w))
            np.testing.assert_array_equal(be.gemm_tn(x, g), whole.gemm_tn(x, g))
            np.testing.assert_array_equal(be.gemm_tn(g, x), whole.gemm_tn(g, x))
        csr = sp.csr_matrix(np.where(x > 1, x, 0))  # sparse features: the first layer's product is an SpMM
        np.testing.assert_array_equal(NumpyBackend(threads=2).gemm(csr, w), whole.gemm(csr, w))
