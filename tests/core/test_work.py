"""The work model's vertex weights (shgcn/store/work.py), by hand."""

import numpy as np
import pytest

from shgcn.core.epoch import ComputeModel
from shgcn.core.work import modelled_compute, row_costs, vertex_weights

# dims [8, 4, 2]: both layers multiply by W first, SpMM widths 4 + 2 forward and backward: 12 columns per nonzero;
# dense: 8*4*2 + 4*2*3 = 88 multiply-adds per row; elementwise: (8 + 4) + 2 (4 + 2) = 24 columns per row
DIMS = [8, 4, 2]
HAND = ComputeModel(spmm=1.0, dense=0.5, elem=2.0, const=7.0)


def test_row_and_nonzero_costs():
    assert row_costs(DIMS, HAND) == (0.5 * 88 + 2.0 * 24, 12.0)  # (92, 12)


def test_weights_of_every_balance():
    nnz = np.array([1, 4, 10])
    assert vertex_weights(nnz, "rows", DIMS, HAND).tolist() == [1, 1, 1]
    assert vertex_weights(nnz, "nnz", DIMS, HAND).tolist() == [1, 4, 10]
    # work: R (1 + nnz 12/92) with R = 1000
    assert vertex_weights(nnz, "work", DIMS, HAND).tolist() == [1130, 1522, 2304]
    with pytest.raises(ValueError, match="balance"):
        vertex_weights(nnz, "edges", DIMS, HAND)


def test_large_graphs_keep_the_total_below_2_to_the_30():
    nnz = np.full(5_000_000, 16)
    w = vertex_weights(nnz, "work", DIMS, HAND)
    assert w.sum() < 2**30 and w.min() >= 1


def test_modelled_compute_per_part():
    np.testing.assert_allclose(modelled_compute(np.array([2, 3]), np.array([5, 0]), DIMS, HAND), [2 * 92 + 60, 276])
