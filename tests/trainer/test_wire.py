"""The rows' type on the wire: bfloat16 rounds to nearest even, float16 is
IEEE half; both decode to float32 and take two bytes a value."""

import numpy as np
import pytest
from helpers.parts import check_run_bytes, run

from shgcn.trainer.wire import Wire


def test_bfloat16_rounds_to_nearest_even():
    one = np.float32(1.0)
    ulp = np.float32(2.0 ** -7)  # bfloat16's spacing at 1
    x = np.array([1.0, one + ulp / 2, one + ulp * 1.5, one + ulp / 2 + ulp / 64, -2.5, 3.0e38, 1e-40, 0.0],
                 np.float32)
    w = Wire("bfloat16")
    got = w.decode(w.encode(x.reshape(2, 4))).ravel()
    # a tie goes to the even mantissa (1.0, then 1 + 2 ulp), just above a tie rounds up
    assert got[:5].tolist() == [1.0, 1.0, 1 + 2 * ulp, 1 + ulp, -2.5] and got[7] == 0.0
    assert abs(got[5] - 3.0e38) / 3.0e38 < 2 ** -8 and abs(got[6] - 1e-40) < 1e-41
    assert w.encode(x).dtype == np.uint16 and w.encode(x).nbytes == 2 * x.size


@pytest.mark.parametrize("name", ["bfloat16", "float16", "float32"])
def test_round_trip_error_is_within_half_an_ulp(name):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((50, 7)).astype(np.float32)
    w = Wire(name)
    y = w.decode(w.encode(x))
    assert y.dtype == np.float32 and y.shape == x.shape
    bits = {"bfloat16": 8, "float16": 11, "float32": 24}[name]
    assert np.all(np.abs(y - x) <= np.abs(x) * 2.0 ** -bits)
    assert w.itemsize == (4 if name == "float32" else 2)


@pytest.mark.mpi
@pytest.mark.parametrize("arch,wire", [("gat", "bfloat16"), pytest.param("gcn", "bfloat16", marks=pytest.mark.slow),
                                       pytest.param("gat", "float16", marks=pytest.mark.slow),
                                       pytest.param("gcn", "float16", marks=pytest.mark.slow)])
def test_16_bit_exchange_sends_half_the_bytes(mpi_stores, tmp_path, arch, wire):
    path = mpi_stores["directed", 4]
    heads = ["--heads", "3"] if arch == "gat" else []
    _, e32 = run(4, path, tmp_path / "a.jsonl", "--arch", arch, *heads, "--epochs", 3, "--exchange-dtype", "float32")
    h16, e16 = run(4, path, tmp_path / "b.jsonl", "--arch", arch, *heads, "--epochs", 3, "--exchange-dtype", wire)
    assert h16.exchange_dtype == wire
    for a, b in zip(e32, e16):
        assert [2 * x for x in b.bytes_sent] == a.bytes_sent and sum(a.bytes_sent) > 0
        assert [2 * x for x in b.eval_bytes_sent] == a.eval_bytes_sent
    check_run_bytes(path, h16, e16)  # the job's itemsize: 2
    # rounding to 16 bits changes the losses a little, not the training
    np.testing.assert_allclose([e.loss for e in e16], [e.loss for e in e32], rtol=2e-2)


@pytest.mark.mpi
@pytest.mark.slow
def test_16_bit_exchange_with_alltoallv(mpi_stores, tmp_path):
    path = mpi_stores["undirected", 2]
    _, e = run(2, path, tmp_path / "a.jsonl", "--arch", "sage", "--epochs", 2, "--exchange", "alltoallv",
               "--exchange-dtype", "bfloat16")
    _, ref = run(2, path, tmp_path / "b.jsonl", "--arch", "sage", "--epochs", 2, "--exchange", "alltoallv")
    assert [2 * x for x in e[0].bytes_sent] == ref[0].bytes_sent
