"""The numpy backend's array functions (trainer/backends/arrays.py): add, relu, relu_grad and colsum give the bits
of the numpy expressions they replaced (signed zeros, NaN and infinities included), vdot numpy's, at T = 1..4
(a NaN as any NaN), serial and threaded kernels alike, on contiguous arrays, views and no rows; the time goes to
the ``elementwise`` kernel."""

import numpy as np
import pytest

from shgcn.trainer.backends import arrays
from shgcn.trainer.backends.numpy import NumpyBackend

SHAPES = [(0, 7), (1, 1), (5, 3), (300, 37), (2000, 64)]


def bits(x: np.ndarray) -> np.ndarray:
    """The float32 entries' bits, every NaN as one (a NaN's sign and payload are the compiler's: LLVM may swap
    the operands of an addition, and x86 passes on the first operand's NaN)."""
    x = np.ascontiguousarray(x, np.float32)
    return np.where(np.isnan(x), np.float32(np.nan), x).view(np.uint32)


def operands(n: int, d: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """a, b (n, d) and a bias (d,), float32, a with +0, -0, NaN and infinities sprinkled in."""
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((2, n, d)).astype(np.float32)
    special = np.array([0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf], np.float32)
    pick = rng.random((n, d)) < 0.1
    a[pick] = special[rng.integers(0, special.size, pick.sum())]
    return a, b, rng.standard_normal(d).astype(np.float32)


@pytest.fixture(params=[1, 2, 3, 4])
def be(request, monkeypatch):
    """A backend of T threads whose kernels run threaded on any size (T > 1)."""
    monkeypatch.setattr(arrays, "_PARALLEL_MIN", 0)
    return NumpyBackend(threads=request.param)


@pytest.mark.parametrize("n,d", SHAPES)
def test_the_elementwise_functions_give_numpys_bits(be, n, d):
    a, b, bias = operands(n, d, n + d)
    alpha = np.float32(1) + np.float32(0.137)  # GIN's 1 + eps
    with np.errstate(invalid="ignore"):
        cases = [(be.add(a, b, alpha=alpha), a + alpha * b), (be.add(a, b), a + b),
                 (be.add(a, b, alpha=alpha, bias=bias), a + alpha * b + bias),
                 (be.add(a, b, bias=bias, relu=True), np.maximum(a + b + bias, 0)),
                 (be.add(a, bias=bias, relu=True), np.maximum(a + bias, 0)), (be.relu(a), np.maximum(a, 0)),
                 (be.relu_grad(b.copy(), a), b * (a > 0)), (be.colsum(b), b.sum(0))]
    for got, want in cases:
        assert got.dtype == np.float32 and got.shape == want.shape
        np.testing.assert_array_equal(bits(got), bits(want))


def test_views_and_out(be):
    """A strided view (SAGE's y[:, d:]) as an operand, and the result into the first operand or a view."""
    a, b, bias = operands(500, 64, 9)
    y = np.ascontiguousarray(np.hstack([b, a]))
    np.testing.assert_array_equal(bits(be.add(a, y[:, 64:], bias=bias)), bits(a + a + bias))
    with np.errstate(invalid="ignore"):  # inf - inf
        np.testing.assert_array_equal(bits(be.colsum(y[:, 64:])), bits(a.sum(0)))
    out = a.copy()
    assert be.add(out, b, out=out) is out
    np.testing.assert_array_equal(bits(out), bits(a + b))
    dz = np.vstack([a, b])
    be.add(dz[:500], b, out=dz[:500])  # GAT's dz[:n] += ...
    np.testing.assert_array_equal(bits(dz), bits(np.vstack([a + b, b])))


@pytest.mark.parametrize("n,d", [(0, 4), (3, 1), (300, 37), (2000, 64)])
def test_vdot_is_numpys(be, n, d):
    a, b = np.random.default_rng(d).standard_normal((2, n, d)).astype(np.float32)
    got = be.vdot(a, b)
    assert got.dtype == np.float32 and got.shape == (1,) and bits(got)[0] == bits(np.float32(np.vdot(a, b)))


def test_concat_copies(be):
    a, b, _ = operands(300, 40, 2)
    for axis in (0, 1):
        np.testing.assert_array_equal(bits(be.concat([a, b[:, :40], a], axis)), bits(np.concatenate([a, b, a], axis)))
    np.testing.assert_array_equal(be.concat([a[:, 8:]], 1), a[:, 8:])
    with pytest.raises(ValueError):
        be.concat([a, b[:10, :3]], 1)


def test_other_operands_take_numpys_expressions(be):
    """Float64, 1-D and column-major operands: numpy's own expressions (the kernels take 2-D float32 only)."""
    x = np.arange(6, dtype=np.float64).reshape(2, 3) - 2
    assert be.add(x, x, alpha=2.0, relu=True).tolist() == np.maximum(3 * x, 0).tolist()
    v = np.array([1.0, -2.0, 3.0], np.float32)
    assert be.add(v, bias=v).tolist() == [2, -4, 6] and be.vdot(v, v).tolist() == [14]
    f = np.asfortranarray(np.random.default_rng(0).standard_normal((50, 3)).astype(np.float32))
    np.testing.assert_array_equal(bits(be.colsum(f)), bits(f.sum(0)))


def test_the_time_goes_to_the_elementwise_kernel():
    be = NumpyBackend()
    x = np.ones((4, 3), np.float32)
    be.add(x, x)
    be.colsum(be.relu_grad(be.relu(x), x))
    assert set(be.take_kernel_time()) == {"elementwise"}
