"""The threads' cost model (core/thread_scaling.py): a compute file's measured speedups per term, interpolated in
log T and held beyond the largest T measured; Amdahl's law for the terms it does not list; the figure read from a
compute-model file and a machine file, checked, and written back; and the epoch model using it."""

import json

import numpy as np
import pytest

from shgcn.core.errors import UserError
from shgcn.core.machine import ComputeModel, machine_from_json, machine_of
from shgcn.core.thread_scaling import ThreadScaling, amdahl_slowdown, scaling_from_json

FIGURE = {"source": "test", "speedup": {"spmm": {"2": 1.8, "4": 3.0, "16": 6.0}, "dense": {"2": 0.5}}}


def test_measured_speedups_are_interpolated_in_log_threads_and_held_beyond():
    s = scaling_from_json(FIGURE)
    frac = (1.0, 1.0, 0.5, 0.0)
    assert s.speedup(0, 1, 1.0) == 1.0 and s.speedup(0, 2, 1.0) == pytest.approx(1.8)
    assert s.speedup(0, 8, 1.0) == pytest.approx(3.0 + (6.0 - 3.0) * 0.5)  # log2 8 halfway between 4 and 16
    assert s.speedup(0, 64, 1.0) == pytest.approx(6.0)  # no gain beyond the largest T measured
    assert s.speedup(1, 16, 1.0) == pytest.approx(0.5)  # a slowdown is a measurement too
    assert s.speedup(2, 4, 0.5) == pytest.approx(1 / (0.5 + 0.5 / 4))  # elem: not measured, Amdahl
    np.testing.assert_allclose(s.slowdown(2, frac), [1 / 1.8, 2.0, 0.75, 1.0])
    np.testing.assert_allclose(amdahl_slowdown(4, frac), [0.25, 0.25, 0.625, 1.0])


def test_the_compute_model_uses_the_figure_and_writes_it_back():
    plain = ComputeModel(1.0, 2.0, 3.0, 4.0)
    fitted = ComputeModel(1.0, 2.0, 3.0, 4.0, scaling=scaling_from_json(FIGURE))
    t2 = fitted.threaded(2)
    assert (t2.spmm, t2.dense, t2.elem, t2.const) == pytest.approx((1 / 1.8, 4.0, 3.0 * 0.75, 4.0))
    assert t2.threaded(1).spmm == pytest.approx(1.0) and t2.threaded(4).spmm == pytest.approx(1 / 3.0)
    assert plain.threaded(2).dense == pytest.approx(1.0)  # Amdahl: all of it parallel
    assert fitted.scaled(2.0, "x").threaded(2).spmm == pytest.approx(2 / 1.8)  # another CPU keeps the figure
    back = fitted.to_json()["threads"]
    assert scaling_from_json(back) == fitted.scaling and "threads" not in plain.to_json()


def test_a_machine_file_carries_the_figure(tmp_path):
    d = json.loads(json.dumps({**_this(), "compute": {"scale_of": "this", "factor": 1.0, "threads": FIGURE}}))
    m = machine_from_json(d)
    assert m.compute.scaling is not None and m.with_threads(2).compute.spmm == pytest.approx(
        machine_of("this").compute.spmm / 1.8)
    path = tmp_path / "m.json"
    path.write_text(json.dumps(d))
    assert machine_of(str(path)).with_threads(4).compute.spmm == pytest.approx(machine_of("this").compute.spmm / 3)


@pytest.mark.parametrize("bad", [[], {"speedup": []}, {"speedup": {"gemm": {"2": 1.5}}}, {"speedup": {"spmm": 1}},
                                 {"speedup": {"spmm": {"1": 1.0}}}, {"speedup": {"spmm": {"2": -1}}},
                                 {"speedup": {"spmm": {"2": "x"}}}, {"speedup": {"spmm": {"two": 1.5}}},
                                 {"speedup": {"spmm": {"2": float("inf")}}}])
def test_a_malformed_figure_is_one_line(bad):
    with pytest.raises(UserError) as e:
        scaling_from_json(bad, "compute-x.json")
    assert "\n" not in str(e.value) and "compute-x.json" in str(e.value)


def test_no_figure_is_amdahl():
    assert ThreadScaling().speedup(0, 4, 1.0) == pytest.approx(4.0)


def _this() -> dict:
    from shgcn.core.machine import _DIR

    return json.loads((_DIR / "this.json").read_text())
