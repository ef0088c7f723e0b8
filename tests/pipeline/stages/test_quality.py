"""The quality stage (pipeline/stages/quality.py): each model's communication measured by row blocks on the
workers equals the whole-matrix measure, directed graphs both ways; a model's extra report is asked for."""

import numpy as np
import pytest
from helpers.graphs import FIG2_EDGES, FIG2_PART, FIG2_VOLUME, a_hat

from shgcn.pipeline.metrics.batches import MinibatchReport
from shgcn.pipeline.metrics.volume import partition_quality
from shgcn.pipeline.models import PartitionResult
from shgcn.pipeline.stages import quality
from shgcn.pipeline.stages.partition import Partitioned
from shgcn.pipeline.stages.place import Placed


def given(s, part):
    """One model, ``fig``, with the partition ``part``, not placed on nodes."""
    res = PartitionResult("fig", np.asarray(part, np.int32), 0.5)
    return Placed(Partitioned({"fig": s.tasks.submit("p", lambda r: r, res)}, {"fig": res}), {})


def test_the_blocks_measure_what_the_whole_matrix_does(fig2):
    meas = quality.quality_stage(fig2.tasks, fig2.cfg, fig2.ing, fig2.nrm, given(fig2, FIG2_PART), fig2.mon)
    assert meas.minibatch is None and [r["model"] for r in meas.table] == ["fig"]
    np.testing.assert_array_equal(meas.quality["volume"].sel(model="fig").values, FIG2_VOLUME)
    ref = partition_quality(a_hat(6, FIG2_EDGES), FIG2_PART, 3)
    row = meas.table[0]
    assert (row["total_volume"], row["max_send"], row["km1"], row["edge_cut"]) == (9, 3, ref.km1, ref.edge_cut)
    assert row["seconds"] == 0.5


def test_a_directed_graph_measures_the_columns_of_a_hat(fig2_directed):
    """The volume of Â's pattern (forward: column j's row goes to the parts holding its pins); the edge cut of
    the symmetrized graph: 5 of Figure 2's 7 edges join two parts, whichever way they point."""
    s = fig2_directed
    meas = quality.quality_stage(s.tasks, s.cfg, s.ing, s.nrm, given(s, FIG2_PART), s.mon)
    ref = partition_quality(a_hat(6, FIG2_EDGES, directed=True), FIG2_PART, 3)
    np.testing.assert_array_equal(meas.quality["volume"].sel(model="fig").values, ref.volume)
    assert meas.table[0]["edge_cut"] == 5 and meas.table[0]["km1"] == ref.km1


@pytest.mark.parametrize("models, report", [(("rp", "gp"), None), (("rp", "shp"), MinibatchReport)])
def test_the_extra_report_a_model_asks_for(fig2, models, report):
    from dataclasses import replace

    got = quality._extra_report(replace(fig2.cfg, models=models), 6)
    assert got is None if report is None else isinstance(got, report) and got.convergence_model == "shp"
