"""The torch backend (trainer/backends/torch.py) under the backend conformance tests, its sparse-operator
cache, the numpy backend's masks, and (MPI) training with it: the numpy backend's losses, any P."""

import gc
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp
from helpers.floats import assert_ulps  # noqa: E402
from helpers.mpi import read_log, train
from helpers.parts import BackendTests

from shgcn.trainer.backends import Noise, backend

torch = pytest.importorskip("torch")

# float results of two libraries or of one library's CPU paths: .ci/run runs these under every
# ATEN_CPU_CAPABILITY and OPENBLAS_CORETYPE (pytest -m cpu_paths)
pytestmark = pytest.mark.cpu_paths


class TestTorchBackend(BackendTests):
    backend = "torch"


class TestTorchKernels(BackendTests):
    """The torch backend with its torch kernels (what a GPU runs: masks, attention, losses as torch operations),
    here on the CPU, eagerly."""

    backend = "torch"

    @pytest.fixture
    def be(self):
        from shgcn.trainer.backends.torch import TorchBackend

        return TorchBackend("cpu", 1, compile="off", kernels="torch")


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
    from shgcn.trainer.backends.torch import TorchBackend

    be = TorchBackend("cpu", 1, compile="off", kernels="torch")  # the torch kernels (the CPU default is numba's)
    got, got_keep = be.act_dropout(torch.from_numpy(h.copy()), act, noise, 2, gids, keep=True)
    # ELU: numpy's (numba's) and torch's expm1 may differ in the last bits, by CPU path (ATEN_CPU_CAPABILITY):
    # a few ulps; the rest is the same float32 arithmetic: bit for bit
    assert_ulps(got.numpy(), want, 4 if act == "elu" else 0)
    np.testing.assert_array_equal(got_keep.numpy(), keep)
    g = rng.standard_normal(h.shape).astype(np.float32)
    want_g = backend("numpy").act_dropout_grad(g.copy(), want, act, noise, keep)
    got_g = be.act_dropout_grad(torch.from_numpy(g.copy()), got, act, noise, got_keep)
    # ELU's gradient g * scale * (expm1(x) + 1): expm1's few ulps (of a value below 1 in size) times |g * scale|,
    # whatever the cancellation in + 1 leaves of the result
    scale = np.float32(noise.scale(noise.rate))
    assert_ulps(got_g.numpy(), want_g, 4 if act == "elu" else 0, scale=g * scale if act == "elu" else None)


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


def _numba_kernels():
    """Every numba-compiled function of the numpy backend's kernel modules: (module, name)."""
    import numba

    from shgcn.trainer.backends import arrays, kernels, parallel

    return [(mod, name) for mod in (arrays, kernels, parallel) for name, f in vars(mod).items()
            if isinstance(f, numba.core.registry.CPUDispatcher)]


@pytest.mark.parametrize("arch", ["gcn", "sage", "gin", "gat"])
def test_a_training_step_calls_no_host_kernel(monkeypatch, arch):
    """Forward with dropout (and attention dropout), the loss, backward and Adam of every architecture on the
    torch backend (the CPU here) run with every numba kernel patched to fail: every step is torch's."""
    from helpers.parts import ARCHS, CommPlan, Graph, LocalMatrix, RowOperators, archs, hand_matrix, make
    from mpi4py import MPI

    from shgcn.trainer.backends import AdamState
    from shgcn.trainer.targets import SingleLabel

    def refuse(*args, **kwargs):
        raise AssertionError("a numba (host) kernel ran in a torch backend step")

    found = _numba_kernels()
    assert len(found) >= 10  # the patch below reaches the kernels (a test that could not fail otherwise)
    for mod, name in found:
        monkeypatch.setattr(mod, name, refuse)
    from shgcn.trainer.backends.torch import TorchBackend

    be = TorchBackend("cpu", 1, compile="off", kernels="torch")  # what a GPU runs, on the CPU
    assert be.kernels == "torch" and backend("torch").kernels == "numba"  # the CPU's default: numba, zero-copy
    a = hand_matrix(True)
    n = a.shape[0]
    cp = CommPlan(0, 1, np.array([0, n]), [], [], np.zeros(2, np.int64), np.zeros(0, np.int64))
    ops = RowOperators(LocalMatrix(own=sp.csr_matrix(a), halo={}), make("p2p", MPI.COMM_SELF, cp, None), False, be)
    graph = Graph(ops, np.arange(n, dtype=np.int64) * 7 + 3)
    spec = ARCHS[arch]
    model = archs.build(spec, [5, 4, 3], 0, be, {"heads": 2, "out_heads": 2})
    x = be.asarray(np.random.default_rng(0).standard_normal((n, 5)).astype(np.float16))  # float16 stays
    assert x.dtype == torch.float16
    noise = Noise(0.5, 1, 2, attn_rate=0.3)
    logits, cache = model.forward(x, graph, noise)
    loss, g, counts = SingleLabel(be=be).loss(logits, np.array([0, 1, 2, 0, 1, 2]), np.ones(n, bool), n)
    grads = model.backward(cache, g, graph)
    be.adam_step(AdamState(model.params, 0.01), grads)
    values = be.host_values([loss, *counts])
    assert np.isfinite(values).all() and values[1] == n
    assert all(isinstance(p, torch.Tensor) and p.dtype == torch.float32 for p in model.params)
    assert set(be.take_kernel_time()) >= {"gemm", "elementwise", "loss", "optimizer"}


def test_attention_equals_the_numba_kernels_with_attention_dropout():
    """GAT's attention forward (alpha, the dropped alpha, out) and backward on the torch backend against the
    numpy backend's kernels, attention dropout on: the same masks, the same values to float32 rounding; and the
    forward of two row sets (interior, boundary) equals the forward of all rows."""
    from helpers.parts import Attention

    rng = np.random.default_rng(9)
    n, m, heads, d = 40, 55, 3, 4
    csr = (sp.random(n, m, density=0.15, random_state=rng, format="csr") + sp.eye(n, m, format="csr")).tocsr()
    csr.sort_indices()
    z = rng.standard_normal((m, heads * d)).astype(np.float32)
    s_src = rng.standard_normal((m, heads)).astype(np.float32)
    s_dst = rng.standard_normal((n, heads)).astype(np.float32)
    rgid, cgid = np.arange(n, dtype=np.int64) * 3 + 1, np.arange(m, dtype=np.int64) * 3 + 1
    noise = Noise(0.0, 5, 1, attn_rate=0.4)
    g = rng.standard_normal((n, heads * d)).astype(np.float32)
    from shgcn.trainer.backends.torch import TorchBackend

    out = {}
    for name in ("numpy", "torch"):
        be = backend(name) if name == "numpy" else TorchBackend("cpu", 1, compile="off", kernels="torch")
        att = Attention(csr, be.from_host(z.copy()), be.from_host(s_src.copy()), be.from_host(s_dst.copy()), 0.2,
                        rgid, cgid, noise, 1, be.zeros((csr.nnz, heads)), be.zeros((csr.nnz, heads)),
                        be.zeros((n, heads * d)))
        rows = np.arange(n, dtype=np.int64)
        be.gat_forward(rows[::2], att)
        be.gat_forward(rows[1::2], att)
        out[name] = [be.to_host(a).copy() for a in (att.alpha, att.alpha_d, att.out,
                                                     *be.gat_backward(att, be.from_host(g)))]
    np.testing.assert_array_equal(out["torch"][1] == 0, out["numpy"][1] == 0)  # the same edges dropped
    assert 0.2 < (out["numpy"][1] == 0).mean() < 0.6
    for got, want in zip(out["torch"], out["numpy"]):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.mpi
@pytest.mark.parametrize("arch", ["gcn", pytest.param("sage", marks=pytest.mark.slow),
                                  pytest.param("gin", marks=pytest.mark.slow), pytest.param("gat", marks=pytest.mark.slow)])
def test_the_torch_kernels_train_the_numpy_backends_model_at_p2(mpi_stores, tmp_path, arch):
    """What a GPU runs (the torch kernels: masks, losses, attention as torch operations), here on the CPU at P = 2,
    dropout and attention dropout on: the numpy backend's losses (rel 1e-6) and its bytes, every epoch."""
    from helpers import REPO
    from helpers.mpi import mpirun

    args = ["--arch", arch, *(["--heads", "2"] if arch == "gat" else []), "--epochs", "6", "--eval-every", "6",
            "--quiet"]
    store = mpi_stores["directed", 2]
    script = REPO / "tests" / "helpers" / "torch_kernels_train.py"
    res = subprocess.run([mpirun(), "-n", "2", sys.executable, str(script), str(store), "--backend", "torch", *args,
                          "--log", str(tmp_path / "t.jsonl")], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    _, torch_epochs = read_log(tmp_path / "t.jsonl")
    res = train(2, store, "--backend", "numpy", *args[:-1], log=tmp_path / "n.jsonl", timeout=300)
    assert res.returncode == 0, res.stderr
    _, numpy_epochs = read_log(tmp_path / "n.jsonl")
    np.testing.assert_allclose([e.loss for e in torch_epochs], [e.loss for e in numpy_epochs], rtol=1e-6)
    assert [e.bytes_sent for e in torch_epochs] == [e.bytes_sent for e in numpy_epochs]
