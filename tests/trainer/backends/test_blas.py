"""The dense products' blocks on numba's threads (trainer/backends/blas.py): numpy's sgemm found and called once per
fixed block, every block numpy's own bits (the kernels against the blocks through numpy's matmul: equal), the same
bits for every T, every layout numpy's product takes (C order, a transposed operand, a row block of a wider array),
and the layouts BLAS cannot take left to numpy."""

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from shgcn.trainer.backends import blas
from shgcn.trainer.backends import numpy as backend_module
from shgcn.trainer.backends.numpy import NumpyBackend

needs_sgemm = pytest.mark.skipif(not blas.AVAILABLE, reason="numpy's ILP64 sgemm not found (not numpy's OpenBLAS)")


def _operands(n: int, k: int, d: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n, k)).astype(np.float32), rng.standard_normal((k, d)).astype(np.float32),
            rng.standard_normal((n, d)).astype(np.float32))


def _products(be: NumpyBackend, x: np.ndarray, w: np.ndarray, g: np.ndarray) -> list[np.ndarray]:
    wide = np.concatenate([x, x[:, :3]], axis=1)[:, :x.shape[1]]  # rows of a wider array: lda > k
    return [be.gemm(x, w), be.gemm(g, w.T), be.gemm(wide, w), be.gemm_tn(x, g), be.gemm_tn(g, x),
            be.gemm_tn(np.asfortranarray(x), g)]


@pytest.mark.cpu_paths  # floats of two libraries: .ci/run runs it under every CPU path
@needs_sgemm
@pytest.mark.parametrize("n,k,d", [(30011, 64, 16), (1000, 32, 256), (70001, 16, 8), (2048, 1024, 16)])
def test_the_kernels_give_numpys_bits_for_every_thread_count(monkeypatch, n, k, d):
    """Through the numba kernels (T = 1: serial, T = 2, 3, 4: over threads) and through numpy's matmul on Python
    threads (blas.AVAILABLE off): the same blocks, the same sgemm calls, the same bits."""
    x, w, g = _operands(n, k, d, n + k)
    with threadpool_limits(1, user_api="blas"):
        got = {t: _products(NumpyBackend(threads=t), x, w, g) for t in (1, 2, 3, 4)}
        monkeypatch.setattr(blas, "AVAILABLE", False)
        ref = _products(NumpyBackend(threads=1), x, w, g)
    for t, out in got.items():
        for a, b in zip(ref, out):
            np.testing.assert_array_equal(a, b, err_msg=f"T = {t}")


@needs_sgemm
def test_the_kernels_get_the_shapes_blocks_and_no_python_thread(monkeypatch):
    """The kernels are handed blocks of 512 rows (gemm) and tn_rows(n) (gemm_tn) whatever T; no Python pool is
    started (the blocks run on numba's threads)."""
    seen = []
    for name in ("gemm", "gemm_threads", "gemm_tn", "gemm_tn_threads"):
        real = getattr(blas, name)
        monkeypatch.setattr(blas, name, lambda *a, _real=real, _name=name: seen.append((_name, a[-1])) or _real(*a))
    x, w, g = _operands(70001, 16, 8, 1)
    for t in (1, 3):
        be = NumpyBackend(threads=t)
        be.gemm(x, w)
        be.gemm_tn(x, g)
        assert not hasattr(be, "_pool")
    suffix = ("", "", "_threads", "_threads")
    assert seen == [(f"{k}{s}", size) for k, s, size in zip(("gemm", "gemm_tn") * 2, suffix,
                                                             (512, backend_module.tn_rows(70001)) * 2)]


def test_operand_layouts():
    """C order: NoTrans over its row stride; a transposed C array: Trans; a strided or float64 one: none."""
    a = np.zeros((10, 6), np.float32)
    assert blas.operand(a) == (blas.NO_TRANS, 6) and blas.operand(a.T) == (blas.TRANS, 6)
    assert blas.operand(a[:, :4]) == (blas.NO_TRANS, 6) and blas.tn_operand(a) == (blas.TRANS, 6)
    assert blas.operand(a[:, ::2]) is None and blas.operand(a.astype(np.float64)) is None
    assert blas.operand(np.broadcast_to(np.zeros(6, np.float32), (10, 6))) is None


def test_the_library_is_found_where_numpy_loaded_it():
    """numpy's wheels bundle OpenBLAS: its library is among the loaded ones (Linux), and then the symbol was found."""
    libs = blas._blas_libraries()
    if not libs:
        pytest.skip("no BLAS library with 'blas' in its name loaded (or no /proc)")
    assert blas.AVAILABLE == any(getattr(__import__("ctypes").CDLL(p), s, None) is not None
                                 for p in libs for s in blas.SYMBOLS)


@pytest.fixture(scope="module")
def blocks_store(tmp_path_factory):
    """An rmat graph of 2,048 vertices (scale 11): with 64 hidden units every dense product runs in several fixed
    blocks (512 rows; 1,024 for the weight gradients) and the SpMM, elementwise and attention kernels over the
    threads (above their 16k-value threshold); a mini-batch of 1,200 vertices likewise."""
    import subprocess
    import sys

    out = tmp_path_factory.mktemp("blocks") / "r11.zarr"
    subprocess.run([sys.executable, "-m", "shgcn.pipeline", "--quiet", "build", "rmat:scale=11,edge_factor=8,seed=3",
                    "--parts", "1", "--model", "rp", "--features", "random:32", "--labels", "random:8", "--out",
                    str(out)], check=True, capture_output=True, text=True, timeout=600)
    return out


@pytest.mark.parametrize("arch,mode", [
    ("gat", "full"), ("gin", "minibatch"),
    *(pytest.param(a, m, marks=pytest.mark.slow) for a, m in [
        ("gcn", "full"), ("gin", "full"), ("sage", "full"), ("gcn", "minibatch"), ("sage", "minibatch"),
        ("gat", "minibatch")])])
def test_losses_are_the_same_for_every_thread_count_and_arch(blocks_store, tmp_path, arch, mode):
    """shgcn-train --threads 1, 2, 3, 4 (3 and 4 oversubscribe a 2-core machine: correct, not fast), one rank:
    the same losses and accuracies bit for bit (mini-batch: every step's loss too), every kernel parallel."""
    from helpers.mpi import read_log, train

    kind = "step" if mode == "minibatch" else "epoch"
    seen = {}
    for t in (1, 2, 3, 4):
        log = tmp_path / f"t{t}.jsonl"
        batch = ("--batch-size", 1200) if mode == "minibatch" else ()  # full batch takes no mini-batch option
        res = train(1, blocks_store, "--epochs", 2, "--threads", t, "--mode", mode, "--hidden", 64, "--arch", arch,
                    *batch, log=log, use_mpirun=False, timeout=600)
        assert res.returncode == 0, res.stderr
        header, recs = read_log(log, kind)
        seen[t] = [(r.loss, getattr(r, "train_acc", None)) for r in recs]
        assert header.threads == t and len(seen[t]) >= 2
    assert seen[1] == seen[2] == seen[3] == seen[4]
