"""What every algorithm's cost model shares (core/algorithms/base.py): a call's bytes, summing a step, the dense
work, the gradient allreduce and the checks of a job, by hand."""

from dataclasses import replace

import numpy as np
import pytest
from helpers.costs import machine

from shgcn.core.algorithms import ALGORITHMS, AlgorithmCost, Call
from shgcn.core.algorithms.base import dense_seconds, gradient_allreduce, sum_calls
from shgcn.core.costs import Job
from shgcn.core.errors import UserError
from shgcn.core.machine import ComputeModel


def test_a_calls_total_sums_its_kinds():
    c = Call({"rows": np.array([1, 2]), "inrow": np.array([3, 4])}, np.array([5, 5]), np.array([1, 1]))
    assert c.total.tolist() == [4, 6]
    assert Call({}, np.array([7, 7]), np.array([0, 0])).total.tolist() == [0, 0]


def test_sum_calls():
    a = Call({"rows": np.array([1, 2]), "inrow": np.array([0, 4])}, np.array([3, 3]), np.array([1, 2]))
    b = Call({"rows": np.array([10, 0]), "inrow": np.array([5, 5])}, np.array([1, 0]), np.array([2, 0]))
    out = {k: v.tolist() for k, v in sum_calls([a, b], ("rows", "inrow")).items()}
    assert out == {"rows_bytes": [11, 2], "inrow_bytes": [5, 9], "bytes_sent": [16, 11], "msgs_sent": [3, 2],
                   "bytes_recv": [4, 3], "calls": [[1, 6], [15, 5]]}
    assert all(v.dtype == np.int64 for v in sum_calls([a, b], ("rows",)).values())


def test_dense_seconds_by_hand():
    """GCN [8, 4, 2]: 88 multiply-adds and 24 elementwise columns a row (core/costs.work_terms), and Adam's
    14 x 40 = 560 elementwise operations once per rank."""
    m = machine(compute=ComputeModel(spmm=0.1, dense=1e-3, elem=1e-2, const=0.5), cores=2, ranks_per_node=4096)
    job = Job((8, 4, 2))
    # 10 rows: 0.88 + 2.4, 20 rows: 1.76 + 4.8; each + 0.5 + 5.6; the SpMM coefficient plays no part
    assert dense_seconds(np.array([10, 20]), job, m, 2) == pytest.approx([9.38, 12.66])
    # 4 ranks on 2 cores: twice as slow
    assert dense_seconds(np.array([10, 20]), job, m, 4) == pytest.approx([18.76, 25.32])
    # 5% nonzero features, kept as CSR: 24 multiply-adds, 16.4 columns and 3.2 sparse nonzero-columns a row
    # at the SpMM rate: 10 rows 0.24 + 1.64 + 3.2, + 6.1
    assert dense_seconds(np.array([10]), job.with_(input_density=0.05), m, 2) == pytest.approx([11.18])
    # above the trainer's CSR threshold (10%) the features stay dense: no saving
    assert dense_seconds(np.array([10]), job.with_(input_density=0.5), m, 2) == pytest.approx([9.38])


def test_gradient_allreduce_by_hand():
    """4 B x (8 x 4 + 4 x 2) = 160 B among 2 ranks on 2 nodes: 2 alpha + 2 beta 160 / 2."""
    m = machine(ranks_per_node=1)  # inter alpha 10, beta 0.1
    assert gradient_allreduce((8, 4, 2), m, 2) == pytest.approx(20 + 16)
    assert gradient_allreduce((8, 4, 2), m, 2, itemsize=2) == pytest.approx(20 + 8)
    assert gradient_allreduce((8, 4, 2), machine(ranks_per_node=2), 2) == pytest.approx(2 + 1.6)  # one node: intra
    assert gradient_allreduce((8, 4, 2), m, 1) == 0.0
    # 4 ranks on one node of 2 cores, a synchronization 3 s per unit of oversubscription: + 3 x 2
    over = replace(machine(ranks_per_node=4, cores=2), oversubscribed_sync=3.0)
    assert gradient_allreduce((8, 4, 2), over, 4) == pytest.approx(2 * 2 + 2 * 0.01 * 160 * 3 / 4 + 6)
    assert gradient_allreduce((8, 4, 2), replace(over, cores_per_node=4), 4) == pytest.approx(4 + 2.4)


class Plain(AlgorithmCost):
    """The defaults of the base class: full batch, 32-bit rows, no replication."""

    name = "plain"

    def shape(self, ranks, parts, replication=1):
        raise NotImplementedError

    shape_for = plans = traffic = times = memory = shape


def test_the_checks_of_a_job():
    plain = Plain()
    plain.check(Job((3, 2)), minibatch=False)
    with pytest.raises(UserError, match=r"^--mode minibatch runs on --algorithm 1d only \(plain is full batch\)$"):
        plain.check(Job((3, 2)), minibatch=True)
    with pytest.raises(UserError, match="^a 16-bit --exchange-dtype runs on --algorithm 1d only"):
        plain.check(Job((3, 2), itemsize=2), minibatch=False)
    with pytest.raises(UserError, match=r"^--replication 2 needs --algorithm 1.5d \(--algorithm plain does not "):
        plain.check(Job((3, 2), replication=2), minibatch=False)
    assert plain.combine(Job((3, 2)), "gather") == "reduce"
    with pytest.raises(TypeError):
        AlgorithmCost()  # abstract


def test_the_registered_algorithms():
    assert ALGORITHMS.names() == ("1d", "1.5d", "2d")
    flags = {n: (a.minibatch, a.wire_16bit, a.replicates, a.kinds) for n, a in ALGORITHMS.items()}
    assert flags == {"1d": (True, True, False, ()), "1.5d": (False, False, True, ("rows", "inrow", "matrix")),
                     "2d": (False, False, False, ("rows", "inrow", "matrix"))}
