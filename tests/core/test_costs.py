"""A job's shape and the bytes and work it implies (core/costs.py), by hand."""

import numpy as np
import pytest

from shgcn.core.costs import (
    WIRE_DTYPES,
    Job,
    call_bytes,
    input_terms,
    optimizer_terms,
    sparse_input,
    split_calls,
    spmm_widths,
    step_bytes,
    work_terms,
)
from shgcn.core.errors import UserError


def test_dims_and_heads_are_tuples_of_ints():
    job = Job(np.array([8, 4, 2]), heads=[2, 1])
    assert job.dims == (8, 4, 2) and type(job.dims) is tuple and all(type(d) is int for d in job.dims)
    assert job.heads == (2, 1) and job.layer_heads == [2, 1]
    assert Job([8, 4, 2]).heads is None and Job([8, 4, 2]).layer_heads == [1, 1]
    assert Job([3, 2]) == Job((3, 2)) and hash(Job([3, 2])) == hash(Job((3, 2)))


def test_the_defaults_are_the_trainers():
    job = Job((3, 2))
    assert (job.arch, job.exchange, job.itemsize, job.algorithm, job.replication, job.combine, job.ranks_per_node) == \
        ("gcn", "p2p", 4, "1d", 1, "reduce", 0)
    assert WIRE_DTYPES == {"float32": 4, "bfloat16": 2, "float16": 2}


def test_an_unknown_architecture_is_refused_at_once():
    with pytest.raises(UserError, match="^--arch 'gnn': choose from gcn, sage, gin, gat$"):
        Job((3, 2), arch="gnn")


def test_calls_forward_by_layer_then_backward_from_the_last():
    assert Job((8, 4, 2)).calls(False) == [(4, False, False), (2, False, False), (2, False, True), (4, False, True)]
    assert Job((8, 4, 2)).calls(True) == [(4, False, False), (2, False, False), (2, True, True), (4, True, True)]
    assert Job((2, 4, 3)).calls(True) == [(2, False, False), (3, False, False), (3, True, True)]
    assert Job((8, 4, 2), arch="gat", heads=(2, 1)).calls(False) == \
        [(8, False, False), (2, False, False), (2, True, True), (8, True, True)]


def test_with_makes_a_changed_copy():
    job = Job((8, 4, 2))
    other = job.with_(exchange="bcast", dims=[6, 3])
    assert (other.exchange, other.dims) == ("bcast", (6, 3))  # coerced again
    assert (job.exchange, job.dims) == ("p2p", (8, 4, 2))
    with pytest.raises(UserError):
        job.with_(arch="nope")


def test_split_calls():
    assert split_calls([(4, False), (2, True), (3, False)]) == (7, 2, 2, 1)
    assert split_calls([]) == (0, 0, 0, 0)


def test_call_and_step_bytes_by_hand():
    """Rank 0 sends 3 rows and receives 5 per SpMM, rank 1 the other way round; widths 4, 2, 2, 4; 4 bytes."""
    job = Job((8, 4, 2))
    calls = call_bytes([3, 5], [5, 3], job, directed=False)
    assert calls.tolist() == [[48, 80], [24, 40], [24, 40], [48, 80]]  # 4 B x width x rows sent
    assert step_bytes([3, 5], [5, 3], job, directed=False).tolist() == [144, 240]
    # directed: the backward folds send back the rows received: 4 B x (2 x 5, 4 x 5) for rank 0
    assert call_bytes([3, 5], [5, 3], job, directed=True).tolist() == [[48, 80], [24, 40], [40, 24], [80, 48]]
    assert step_bytes([3, 5], [5, 3], job, directed=True).tolist() == [192, 192]
    assert step_bytes([3, 5], [5, 3], job.with_(itemsize=2), directed=True).tolist() == [96, 96]
    assert calls.dtype == np.int64


def test_spmm_widths():
    assert spmm_widths([8, 4, 2], [True, True]) == ([4, 2], [4, 2])
    assert spmm_widths([2, 4, 3], [False, True]) == ([2, 3], [3])
    assert spmm_widths([8, 4, 2], [False, False]) == ([8, 4], [4])


def test_work_terms_by_hand():
    # [8, 4, 2]: SpMM widths 4 + 2 forward, 4 + 2 backward = 12; multiply-adds 8*4*2 + 4*2*3 = 88;
    # elementwise 8 + 4 (layer inputs) + 2 * (4 + 2) (outputs) = 24
    assert work_terms([8, 4, 2]) == (12, 88, 24)
    # [2, 4, 3]: widths 2 + 3 forward, 3 backward = 8; 2*4*2 + 4*3*3 = 52; 2 + 4 + 2 * (4 + 3) = 20
    assert work_terms([2, 4, 3]) == (8, 52, 20)


def test_sparse_features_and_the_optimizer_by_hand():
    # 5% nonzero features (kept as CSR): the first layer's 8 x 4 x 2 multiply-adds leave the dense term (24 left)
    # and become 2 x 0.05 x 8 x 4 = 3.2 nonzero-columns a row of sparse products; its dropout touches 0.4 columns
    assert work_terms([8, 4, 2], 0.05) == pytest.approx((12, 24, 16.4))
    assert input_terms([8, 4, 2], 0.05) == pytest.approx(3.2)
    assert input_terms([8, 4, 2], 0.5) == 0.0 and work_terms([8, 4, 2], 0.5) == work_terms([8, 4, 2])  # dense
    assert sparse_input(0.1) and not sparse_input(0.11)
    # Adam: 14 passes over 8 x 4 + 4 x 2 weights
    assert optimizer_terms([8, 4, 2]) == 14 * 40
