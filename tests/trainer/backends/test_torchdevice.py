"""The torch backend's device side (trainer/backends/torchdevice.py): host arrays to the device and back, the
caches of derived tensors, a CSR matrix's edges, kernel timing."""

import gc

import numpy as np
import pytest
import scipy.sparse as sp

torch = pytest.importorskip("torch")

from shgcn.trainer.backends import torchdevice as td  # noqa: E402

CPU = torch.device("cpu")


def test_upload_and_download_share_memory_on_the_cpu():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = td.upload(a, CPU)
    a[0, 0] = 9
    assert float(t[0, 0]) == 9  # no copy on the CPU
    back = td.download(t)
    back[1, 1] = -1
    assert float(t[1, 1]) == -1
    assert td.download(torch.ones(2, dtype=torch.float16)).dtype == np.float32  # float16 read as float32
    assert td.upload(np.array([True, False]), CPU).tolist() == [1, 0]


def test_the_cache_keeps_a_value_while_its_object_lives():
    cache = td.DeviceCache()
    made = []
    a = np.ones(3)
    for _ in range(3):
        assert cache.get((a,), "x", lambda: made.append(1) or len(made)) == 1
    assert cache.get((a,), "y", lambda: 7) == 7 and len(cache) == 2  # another kind: another entry
    del a
    gc.collect()
    assert len(cache) == 0  # the entries left with their object
    assert cache.get((3,), "x", lambda: 5) == 5 and len(cache) == 0  # not weakly referable: not cached


def test_csr_edges_of_all_rows_and_of_some():
    m = sp.csr_matrix(np.array([[1, 0, 2], [0, 0, 0], [3, 4, 0]], np.float32))
    pos, rows, cols = td.csr_edges(m, None, CPU)
    assert pos == slice(None) and rows.tolist() == [0, 0, 2, 2] and cols.tolist() == [0, 2, 0, 1]
    pos, rows, cols = td.csr_edges(m, np.array([2, 0]), CPU)
    assert pos.tolist() == [2, 3, 0, 1] and rows.tolist() == [2, 2, 0, 0] and cols.tolist() == [0, 1, 0, 2]
    pos, rows, cols = td.csr_edges(m, np.array([1]), CPU)
    assert pos.tolist() == rows.tolist() == cols.tolist() == []


def test_sparse_csr_and_int_pair():
    m = sp.random(5, 4, density=0.5, format="csr", dtype=np.float64, random_state=1)
    t = td.sparse_csr(m, CPU)
    assert t.dtype == torch.float32 and np.allclose(t.to_dense().numpy(), m.toarray())
    assert td.int_pair(3, 1 << 40, CPU).tolist() == [3, 1 << 40]


def test_timed_adds_each_kernels_seconds():
    class K:
        _events = False
        kernel_time: dict = {}

        @td.timed("gemm")
        def f(self, x):
            return x + 1

    k = K()
    assert k.f(1) == 2 and k.f(2) == 3
    assert set(k.kernel_time) == {"gemm"} and k.kernel_time["gemm"] >= 0


def test_last_upload_reuses_a_copy_with_the_same_values():
    last = td.LastUpload(CPU)
    a = last.get("idx", np.array([1, 2]), np.int64)
    assert last.get("idx", np.array([1, 2]), np.int64) is a  # a new array, the same values: the same copy
    b = last.get("idx", np.array([1, 3]), np.int64)
    assert b is not a and b.tolist() == [1, 3] and last.get("w", np.array([1, 3]), np.float64).dtype == torch.float64


def test_device_rows_copy_only_the_selected_rows():
    x = torch.arange(12, dtype=torch.float32).reshape(4, 3)
    rows = td.DeviceRows(x)
    idx = np.array([3, 1])
    assert rows.shape == (4, 3) and len(rows) == 4 and not rows.flags.writeable
    np.testing.assert_array_equal(rows[idx], x.numpy()[[3, 1]])
    np.testing.assert_array_equal(rows[idx], x.numpy()[[3, 1]])  # the device index, kept for the same array
    assert len(rows._index) == 1  # noqa: SLF001
    np.testing.assert_array_equal(np.asarray(rows), x.numpy())
    assert np.array(rows, np.float64).dtype == np.float64


def test_an_exchange_reads_device_rows_as_host_rows():
    """p2p's expand on one rank (nothing to send) and bcast (every own row) take DeviceRows as they take arrays."""
    from helpers.parts import CommPlan, make
    from mpi4py import MPI

    n = 4
    cp = CommPlan(0, 1, np.array([0, n]), [], [], np.zeros(2, np.int64), np.zeros(0, np.int64))
    for name in ("p2p", "bcast"):
        ex = make(name, MPI.COMM_SELF, cp, None)
        ran: list = []
        ex.expand(td.DeviceRows(torch.ones(n, 2)), lambda r=ran: r.append(1), lambda q, rows, r=ran: r.append(q))
        assert ran == [1]
