"""The torch backend's array functions (trainer/backends/torcharrays.py): torch operations equal to the numpy
backend's to float32 rounding (the elementwise ones exactly), in place where the numpy backend's are, a 0-d
tensor as GIN's alpha, and their time under ``elementwise``."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

# float results of two libraries or of one library's CPU paths: .ci/run runs these under every
# ATEN_CPU_CAPABILITY and OPENBLAS_CORETYPE (pytest -m cpu_paths)
pytestmark = pytest.mark.cpu_paths


@pytest.fixture
def pair():
    from shgcn.trainer.backends.numpy import NumpyBackend
    from shgcn.trainer.backends.torch import TorchBackend

    return NumpyBackend(), TorchBackend("cpu", 1, compile="off", kernels="torch")


def test_the_array_functions_equal_the_numpy_backends(pair):
    nb, tb = pair
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((2, 300, 24)).astype(np.float32)
    bias = rng.standard_normal(24).astype(np.float32)
    eps = np.array([0.25], np.float32)
    want = nb.add(a, b, alpha=1 + eps[0], bias=bias, relu=True)
    got = tb.add(torch.from_numpy(a), torch.from_numpy(b), alpha=1 + torch.from_numpy(eps)[0],
                 bias=torch.from_numpy(bias), relu=True)
    assert isinstance(got, torch.Tensor) and got.dtype == torch.float32
    np.testing.assert_array_equal(got.numpy(), want)  # a + alpha b + bias: the same float32 operations
    np.testing.assert_array_equal(tb.relu(torch.from_numpy(a)).numpy(), nb.relu(a))
    np.testing.assert_allclose(tb.colsum(torch.from_numpy(a)).numpy(), nb.colsum(a), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(tb.vdot(torch.from_numpy(a), torch.from_numpy(b)).numpy(), nb.vdot(a, b), rtol=1e-5)
    g = torch.from_numpy(b.copy())
    assert tb.relu_grad(g, torch.from_numpy(a)) is g  # in place
    np.testing.assert_array_equal(g.numpy(), nb.relu_grad(b.copy(), a))


def test_out_writes_into_a_view(pair):
    _, tb = pair
    dz = torch.zeros((5, 3))
    tb.add(dz[:2], torch.ones((2, 3)), alpha=2.0, out=dz[:2])  # GAT's dz[:n] += ...
    assert dz.tolist() == [[2.0] * 3] * 2 + [[0.0] * 3] * 3
    x = torch.ones((2, 3))
    assert tb.add(x) is not x and tb.add(x).tolist() == x.tolist()  # a new tensor, even with nothing to add


def test_the_time_goes_to_the_elementwise_kernel(pair):
    _, tb = pair
    x = torch.ones((4, 3))
    tb.colsum(tb.relu_grad(tb.add(x, x, bias=torch.ones(3)), tb.relu(x)))
    tb.vdot(x, tb.concat([x, x], 0)[:4])
    assert set(tb.take_kernel_time()) == {"elementwise"}
