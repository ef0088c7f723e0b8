"""Comparing float32 results of two libraries in ulps (units in the last place), so that a tolerance holds on
every CPU path (``ATEN_CPU_CAPABILITY`` default, avx2, avx512; ``OPENBLAS_CORETYPE``): a transcendental function
of two libraries, or of one library's two vector paths, may differ in the last bits; a relative tolerance
(rtol 1e-6 is 8 to 17 ulps, depending on where in its binade a value lies) holds on one path and not another.

``assert_ulps(got, want, n)``: every element within ``n`` ulps of float32 at the larger of ``|want|`` and
``|scale|`` (``scale``: the magnitude the error is relative to when the result is a difference, e.g. an ELU
gradient ``g * (expm1(x) + 1)`` whose error is that of ``expm1`` times ``|g|``). ``n = 0``: bit for bit."""

from __future__ import annotations

import numpy as np


def ulps_apart(got, want, scale=None) -> np.ndarray:
    """Elementwise ``|got - want|`` in float32 ulps at ``max(|want|, |scale|)`` (float64 array)."""
    got, want = np.asarray(got, np.float32), np.asarray(want, np.float32)
    assert got.shape == want.shape, (got.shape, want.shape)
    size = np.abs(want) if scale is None else np.maximum(np.abs(want), np.abs(np.asarray(scale, np.float32)))
    unit = np.spacing(size.astype(np.float32)).astype(np.float64)  # float32's ulp at that magnitude
    return np.abs(got.astype(np.float64) - want.astype(np.float64)) / unit


def assert_ulps(got, want, n: int, scale=None) -> None:
    """Every element of ``got`` within ``n`` float32 ulps of ``want`` (see the module docstring); NaNs where
    ``want`` has them."""
    got, want = np.asarray(got, np.float32), np.asarray(want, np.float32)
    if n == 0:
        np.testing.assert_array_equal(got, want)
        return
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    apart = ulps_apart(np.nan_to_num(got), np.nan_to_num(want), scale)
    worst = int(np.argmax(apart)) if apart.size else 0
    assert apart.size == 0 or apart.max() <= n, \
        f"{int((apart > n).sum())} of {apart.size} elements more than {n} ulps apart; worst {apart.flat[worst]:.1f} " \
        f"ulps at {np.unravel_index(worst, apart.shape)}: {got.flat[worst]!r} vs {want.flat[worst]!r}"
