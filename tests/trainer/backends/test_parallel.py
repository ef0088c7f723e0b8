"""The parallel kernels (trainer/backends/parallel.py): the SpMM against scipy's (allclose; and bit for bit, which
makes the losses of every ``--threads`` the same) and between chunk counts (exact), on random, skewed (one hub
row) and empty-row matrices; the row chunks; the elementwise and GAT attention kernels against the serial ones;
the backend's dense products in fixed blocks: the same bits for every T (also under OpenBLAS's Haswell kernels)."""

import gc
import os
import platform
import subprocess
import sys
import threading

import numpy as np
import pytest
import scipy.sparse as sp

from shgcn.trainer.backends import kernels, parallel
from shgcn.trainer.backends.numpy import NumpyBackend

# float results of two libraries or of one library's CPU paths: .ci/run runs these under every
# ATEN_CPU_CAPABILITY and OPENBLAS_CORETYPE (pytest -m cpu_paths)
pytestmark = pytest.mark.cpu_paths

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
@pytest.mark.parametrize("ranks,mode,arch", [
    (2, "full", "gcn"), (1, "full", "gin"),  # GIN: the elementwise work between its products (arrays.py)
    pytest.param(1, "full", "gcn", marks=pytest.mark.slow), pytest.param(2, "full", "sage", marks=pytest.mark.slow),
    pytest.param(1, "full", "gat", marks=pytest.mark.slow),
    pytest.param(1, "minibatch", "sage", marks=pytest.mark.slow),
    pytest.param(2, "minibatch", "sage", marks=pytest.mark.slow)])
def test_losses_are_the_same_for_every_thread_count(mpi_stores, tmp_path, ranks, mode, arch):
    """shgcn-train --threads 1, 2, 4 (4 oversubscribes this machine: correct, not fast; 400 rows x 64 columns run
    the parallel kernels): the same losses,
    accuracies (and mini-batch step losses) bit for bit, and the header says how many threads ran."""
    from helpers.mpi import train

    kind = "step" if mode == "minibatch" else "epoch"
    seen = {}
    for t in (1, 2, 4):
        log = tmp_path / f"t{t}.jsonl"
        res = train(ranks, mpi_stores["undirected", ranks], "--epochs", 3, "--threads", t, "--mode", mode,
                    "--hidden", "64,64", "--arch", arch, log=log, timeout=600)
        assert res.returncode == 0, res.stderr
        header, seen[t] = _losses(log, kind)
        if mode == "minibatch":  # every step says where its time went, on every rank
            from helpers.mpi import read_log

            phases = read_log(log, "step")[1][0].phase_time
            assert len(phases) == ranks and {"forward", "backward", "allreduce_wait", "next_batch"} <= set(phases[0])
        assert header.threads == t and (header.threading_layer is None) == (t == 1)
        assert header.config["threads"] == t and len(seen[t]) >= 3
    assert seen[1] == seen[2] == seen[4]


# (n, k, d): a (n, k) @ (k, d) and a (n, k)ᵀ @ (n, d): rows a multiple of gemm's 512-row blocks and not, fewer than
# one block (still >= _SPLIT_MIN multiply-adds: blocked, one block), gemm_tn's 1024-row blocks a multiple and not,
# fewer than one, and more than 64 of them (blocks of 2048 rows)
DENSE_SHAPES = [(30011, 64, 16), (4096, 64, 16), (400, 256, 16), (1000, 32, 256), (8192, 16, 16), (70001, 16, 8)]


def _dense_products(threads: int, x: np.ndarray, w: np.ndarray, g: np.ndarray) -> list[np.ndarray]:
    be = NumpyBackend(threads=threads)
    return [be.gemm(x, w), be.gemm(g, w.T), be.gemm_tn(x, g), be.gemm_tn(g, x)]


@pytest.mark.parametrize("n,k,d", DENSE_SHAPES)
def test_dense_products_have_the_same_bits_for_every_thread_count(n, k, d):
    """X W, G Wᵀ (W transposed: not contiguous) and Xᵀ G both ways run as the same fixed blocks at every T, each
    one single-threaded BLAS call (the trainer's BLAS runs one thread): the same bits for T = 1, 2, 3, 4, whichever
    kernel BLAS picks for a block's shape (OPENBLAS_CORETYPE=Haswell's differ by a row's place in the block:
    :func:`test_dense_products_have_the_same_bits_under_the_haswell_kernels`), and the products numpy's."""
    from threadpoolctl import threadpool_limits  # the test extra's: pins BLAS to one thread here

    rng = np.random.default_rng(n + k + d)
    x, g = rng.standard_normal((n, k)).astype(np.float32), rng.standard_normal((n, d)).astype(np.float32)
    w = rng.standard_normal((k, d)).astype(np.float32)
    with threadpool_limits(1, user_api="blas"):
        one = _dense_products(1, x, w, g)
        for ref, got, inner in zip((x @ w, g @ w.T, x.T @ g, g.T @ x), one, (k, d, n, n)):
            assert got.dtype == np.float32 and got.shape == ref.shape
            np.testing.assert_allclose(got, ref, rtol=1e-4, atol=2e-5 * np.sqrt(inner))  # sums of `inner` N(0, 1)s
        for t in (2, 3, 4):
            for a, b in zip(one, _dense_products(t, x, w, g)):
                np.testing.assert_array_equal(a, b)
        csr = sp.csr_matrix(np.where(x > 1, x, 0))  # sparse features: the first layer's product is an SpMM
        np.testing.assert_array_equal(NumpyBackend(threads=2).gemm(csr, w), NumpyBackend(threads=1).gemm(csr, w))


def test_the_dense_blocks_depend_on_the_shape_only(monkeypatch):
    """gemm cuts a's rows into blocks of 512, gemm_tn the inner dimension into blocks of 1024 (more where that
    would make more than 64): bounds from the shape alone; without numpy's sgemm in reach of the numba kernels
    (trainer/backends/blas.py, tested in test_blas.py) every T runs each block once on Python threads (T = 1 on
    its own thread, without a pool)."""
    from shgcn.trainer.backends import blas
    from shgcn.trainer.backends import numpy as backend_module

    monkeypatch.setattr(blas, "AVAILABLE", False)
    blocks = backend_module.dense_blocks
    assert blocks(1100, 512) == [(0, 512), (512, 1024), (1024, 1100)] and blocks(1024, 512) == [(0, 512), (512, 1024)]
    assert blocks(300, 512) == [(0, 300)] and blocks(0, 512) == []
    assert [backend_module.tn_rows(n) for n in (1, 40000, 65536, 65537, 131073)] == [1024, 1024, 1024, 2048, 3072]
    made: list[tuple[int, int]] = []
    monkeypatch.setattr(backend_module, "dense_blocks", lambda rows, size: made.append((rows, size)) or blocks(rows, size))
    real_run = NumpyBackend._run_blocks
    ran: list[tuple[int, int, str]] = []

    def run_blocks(self, count, block):
        def spy(i):
            ran.append((count, i, threading.current_thread().name))  # list.append: atomic under the GIL
            block(i)
        real_run(self, count, spy)

    monkeypatch.setattr(NumpyBackend, "_run_blocks", run_blocks)
    x, w, g = np.ones((3000, 64), np.float32), np.ones((64, 16), np.float32), np.ones((3000, 16), np.float32)
    seen = {}
    for t in (1, 2, 3, 4):
        made.clear()
        ran.clear()
        be = NumpyBackend(threads=t)
        be.gemm(x, w)  # 6 blocks of rows: 5 x 512, 440
        be.gemm_tn(x, g)  # 3 blocks of the inner dimension: 2 x 1024, 952
        assert sorted((c, i) for c, i, _ in ran) == sorted([(6, i) for i in range(6)] + [(3, i) for i in range(3)])
        main = threading.main_thread().name
        threads = {name for *_, name in ran}
        assert threads == {main} if t == 1 else main not in threads
        assert hasattr(be, "_pool") == (t > 1)
        seen[t] = list(made)
    assert seen[1] == seen[2] == seen[3] == seen[4] == [(3000, 512), (3000, 1024)]


_HASWELL = """
import numpy as np
from threadpoolctl import threadpool_info
from shgcn.trainer.backends.numpy import NumpyBackend

if threadpool_info()[0].get("architecture") != "Haswell":
    print("not Haswell")
    raise SystemExit
rng = np.random.default_rng(5)
x, g = rng.standard_normal((30011, 64)).astype(np.float32), rng.standard_normal((30011, 16)).astype(np.float32)
w = rng.standard_normal((64, 16)).astype(np.float32)
whole = (x @ w)[5:517]
assert not np.array_equal(whole, x[5:517] @ w), "the Haswell kernels' rows no longer depend on the block"
out = [[be.gemm(x, w), be.gemm(g, w.T), be.gemm_tn(x, g), be.gemm_tn(g, x)] for be in map(NumpyBackend, (1, 2, 3, 4))]
print(all(np.array_equal(a, b) for r in out[1:] for a, b in zip(out[0], r)))
"""


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="OpenBLAS's x86 kernels")
def test_dense_products_have_the_same_bits_under_the_haswell_kernels():
    """Under OPENBLAS_CORETYPE=Haswell (some machines set it) a row of a product depends on its place in the
    block BLAS computes (checked here, so the test still tests something): the fixed blocks give every T the
    same bits (issue 50; the old split into T row ranges differed from the whole call in a third of them)."""
    env = {**os.environ, "OPENBLAS_CORETYPE": "Haswell", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    res = subprocess.run([sys.executable, "-c", _HASWELL], env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    if res.stdout.strip() == "not Haswell":
        pytest.skip("this numpy's OpenBLAS does not take OPENBLAS_CORETYPE=Haswell (not DYNAMIC_ARCH, or no AVX2)")
    assert res.stdout.strip() == "True", res.stdout
