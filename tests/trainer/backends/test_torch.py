"""The torch backend (trainer/backends/torch.py) under the backend conformance tests, its sparse-operator
cache, the numpy backend's masks, and (MPI) training with it: the numpy backend's losses, any P."""

import gc

import numpy as np
import pytest
import scipy.sparse as sp
from helpers.mpi import read_log, train
from helpers.parts import BackendTests

from shgcn.trainer.backends import Noise, backend

torch = pytest.importorskip("torch")


class TestTorchBackend(BackendTests):
    backend = "torch"


def test_arrays_are_float32_tensors_on_the_device_and_host_arrays_share_memory():
    be = backend("torch")
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = be.from_host(x)
    assert isinstance(t, torch.Tensor) and t.dtype == torch.float32 and t.device.type == "cpu"
    x[0, 0] = 7  # the CPU device: no copy either way
    assert float(t[0, 0]) == 7 and be.to_host(t).dtype == np.float32
    assert isinstance(be.asarray(np.ones(2, np.float64)), torch.Tensor) and be.asarray(np.ones(2)).dtype == torch.float32
    m = sp.csr_matrix(np.eye(2, dtype=np.float32))
    assert be.asarray(m) is m  # sparse features stay scipy CSR; the first layer's gemm takes them
    np.testing.assert_array_equal(be.to_host(be.gemm(m, be.from_host(x[:, :2]))), x[:, :2])
    np.testing.assert_array_equal(be.to_host(be.gemm_tn(m, be.from_host(x[:, :2]))), x[:, :2])


def test_the_spmm_cache_follows_the_matrix_object():
    """A cached operator is used for its own matrix only: another matrix (also one made where a dead one was,
    which may reuse its id) is converted, and a dead matrix's entry leaves the cache."""
    be = backend("torch")
    rng = np.random.default_rng(1)
    x = rng.standard_normal((6, 2)).astype(np.float32)
    for _ in range(5):
        m = sp.random(4, 6, density=0.5, random_state=rng, format="csr", dtype=np.float32)
        np.testing.assert_allclose(be.to_host(be.spmm(m, x)), m @ x, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(be.to_host(be.spmm(m, x)), m @ x, rtol=1e-6, atol=1e-6)  # the cached one
        del m
        gc.collect()
    assert len(be._csr) == 0  # noqa: SLF001 - the entries went with their matrices
    kept = [sp.random(3, 6, density=0.5, random_state=rng, format="csr", dtype=np.float32) for _ in range(2)]
    for m in kept * 2:
        np.testing.assert_allclose(be.to_host(be.spmm(m, x)), m @ x, rtol=1e-6, atol=1e-6)
    assert len(be._csr) == 2  # noqa: SLF001
    empty = sp.csr_matrix((3, 6), dtype=np.float32)  # nothing stored: zeros of the right shape
    assert be.to_host(be.spmm(empty, x)).tolist() == [[0.0, 0.0]] * 3


@pytest.mark.parametrize("act", ["none", "relu", "elu"])
def test_dropout_equals_the_numpy_backends_bit_for_bit(act):
    rng = np.random.default_rng(2)
    gids = rng.permutation(500).astype(np.int64) * 3
    h = rng.standard_normal((500, 19)).astype(np.float32)
    noise = Noise(0.4, seed=11, epoch=5)
    want, keep = backend("numpy").act_dropout(h.copy(), act, noise, 2, gids, keep=True)
    got, got_keep = backend("torch").act_dropout(torch.from_numpy(h.copy()), act, noise, 2, gids, keep=True)
    if act == "elu":  # numpy's and torch's expm1 may differ in the last bit
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=1e-7)
    else:
        np.testing.assert_array_equal(got.numpy(), want)
    np.testing.assert_array_equal(got_keep.numpy(), keep)
    g = rng.standard_normal(h.shape).astype(np.float32)
    want_g = backend("numpy").act_dropout_grad(g.copy(), want, act, noise, keep)
    got_g = backend("torch").act_dropout_grad(torch.from_numpy(g.copy()), got, act, noise, got_keep)
    np.testing.assert_allclose(got_g.numpy(), want_g, rtol=1e-6, atol=1e-7)


def test_cuda_without_a_gpu_and_numpy_on_cuda_are_user_errors():
    from shgcn.core.errors import UserError

    with pytest.raises(UserError, match="cpu"):
        backend("numpy", "cuda")
    if not torch.cuda.is_available():
        with pytest.raises(UserError, match="no CUDA GPU"):
            backend("torch", "cuda")


def _losses(ranks, path, log, *args):
    res = train(ranks, path, "--backend", *args, log=log, use_mpirun=ranks > 1, timeout=300)
    assert res.returncode == 0, res.stderr
    header, epochs = read_log(log)
    return header, [e.loss for e in epochs]


@pytest.mark.mpi
@pytest.mark.parametrize("arch,kind", [
    ("gcn", "directed"),  # Â's transpose folds partial sums back: both directions of the exchange
    pytest.param("sage", "undirected", marks=pytest.mark.slow),
    pytest.param("gat", "directed", marks=pytest.mark.slow)])  # attention kernels on host views, folds every layer
def test_torch_losses_equal_numpys_and_do_not_depend_on_ranks(mpi_stores, tmp_path, arch, kind):
    """12 epochs, dropout (and attention dropout) on: --backend torch at P=2 gives the numpy backend's losses
    at P=2 and its own at P=1 (the masks follow the vertices; only the summation order changes)."""
    args = ["--arch", arch, *(["--heads", "3"] if arch == "gat" else []), "--epochs", "12", "--eval-every", "6"]
    header, torch2 = _losses(2, mpi_stores[kind, 2], tmp_path / "t2.jsonl", "torch", *args)
    _, numpy2 = _losses(2, mpi_stores[kind, 2], tmp_path / "n2.jsonl", "numpy", *args)
    _, torch1 = _losses(1, mpi_stores[kind, 1], tmp_path / "t1.jsonl", "torch", *args)
    assert header.config["backend"] == "torch" and header.config["device"] == "cpu"
    assert header.versions["torch"] == torch.__version__
    assert len(torch2) == 12 and torch2[-1] < torch2[0]
    np.testing.assert_allclose(torch2, numpy2, rtol=1e-4)
    np.testing.assert_allclose(torch2, torch1, rtol=1e-4)
