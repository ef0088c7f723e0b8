"""The threads sweep's fit (benchmarks/training/threads_sweep.py): per term, the geometric mean over the runs of
each kernel's speedup over T = 1, written as a compute file's ``threads`` figure that the epoch model reads."""

import json

import pytest

from benchmarks.training import threads_sweep as sweep
from shgcn.core.machine import _compute_of


def _m(epoch, gemm, spmm, elem, attention=0.0):
    return {"epoch": epoch, "gemm": gemm, "spmm": spmm, "elementwise": elem, "attention": attention, "cpu_wall": 1.0}


MED = {("gcn", "full", 1, 1): _m(1.0, 0.4, 0.2, 0.2), ("gcn", "full", 1, 2): _m(0.6, 0.2, 0.1, 0.2),
       ("gin", "full", 1, 1): _m(1.0, 0.8, 0.1, 0.1), ("gin", "full", 1, 2): _m(0.5, 0.1, 0.1, 0.1),
       ("gcn", "full", 2, 1): _m(0.5, 0.2, 0.1, 0.1)}


def test_the_fit_is_the_geometric_mean_of_the_speedups_and_the_model_reads_it(tmp_path):
    fig = sweep.fit(MED, "test")
    assert fig["speedup"]["dense"] == {"2": pytest.approx((2 * 8) ** 0.5, abs=1e-3)}
    assert fig["speedup"]["spmm"] == {"2": pytest.approx(2 ** 0.5, abs=1e-3)} and fig["speedup"]["elem"] == {"2": 1.0}
    path = tmp_path / "compute-node.json"
    sweep.write_fit(path, fig)
    c = _compute_of(json.loads(path.read_text()))
    assert c.scaling is not None and c.threaded(2).dense == pytest.approx(c.dense / 4, rel=1e-3)


def test_the_table_has_a_row_per_run_with_its_speedup():
    text = sweep.render(MED)
    assert text.count("\n") == 2 + len(MED) and "| gin | full | 1 x 2 | 500.0 | 2.00x | 100.0 |" in text
