"""The write stage (pipeline/stages/write.py): the earlier stages' results written into a store that appears
only when the writer commits; the partitions record of each model."""

from dataclasses import FrozenInstanceError, replace
from pathlib import Path

import distributed
import numpy as np
import pytest
from helpers.graphs import FIG2_EDGES

from shgcn import store
from shgcn.pipeline.models import PartitionResult
from shgcn.pipeline.stages import write
from shgcn.pipeline.stages.layout import layout_stage
from shgcn.pipeline.stages.partition import partition_stage
from shgcn.pipeline.stages.place import Placed
from shgcn.pipeline.stages.quality import quality_stage


def test_the_partitions_record_of_a_model():
    part = np.zeros(3, np.int32)
    assert write._partition_record("rp", PartitionResult("rp", part, 0.12345, {"x": 1})) == {"seconds": 0.123, "x": 1}
    assert write._partition_record("hp", PartitionResult("hp", part, 1.0, {}, 50.0)) == {"seconds": 1.0,
                                                                                         "peak_rss_mib": 50.0}
    # shp's long record is an attribute of its own, not part of the partitions table
    assert write._partition_record("shp", PartitionResult("shp", part, 2.0, {"rounds": [1, 2]})) == {"seconds": 2.0}
    assert write._partition_record("mine", PartitionResult("mine", part, 0.0, {"file": "p.txt"})) == {
        "seconds": 0.0, "file": "p.txt"}  # an imported model: not registered


def test_the_stage_writes_a_store_of_the_earlier_stages(fig2, tmp_path):
    cfg = replace(fig2.cfg, models=("rp",), out=str(tmp_path / "s.zarr"), command="pipeline build fig2.txt")
    parts = partition_stage(fig2.tasks, cfg, fig2.ing, fig2.nrm, fig2.mon, fig2.work)
    meas = quality_stage(fig2.tasks, cfg, fig2.ing, fig2.nrm, Placed(parts, {}), fig2.mon)
    with store.StoreWriter(cfg.out) as writer:
        # the layout writes the ranks' rows into the partial store: no piece waits elsewhere
        laid = layout_stage(fig2.tasks, cfg, fig2.ing, fig2.nrm, parts, fig2.mon, root=str(writer.root))
        distributed.wait(list(laid.cuts))
        assert sorted(p.name for p in (Path(writer.root) / "ranks").iterdir() if p.is_dir()) == ["0", "1", "2"]
        # as the build passes them: A's blocks apart, for the write to let go of once it has cut them
        built = write.Built(replace(fig2.ing, at=(), a=()), fig2.nrm.nnz, parts, meas, laid, a=list(fig2.ing.a))
        with pytest.raises(FrozenInstanceError):
            built.nnz = 0  # the stages' results do not change under the write
        assert not (tmp_path / "s.zarr").exists()  # the writer works in a partial sibling
        with fig2.mon.stage("write"):
            attrs = write.write_stage(fig2.tasks, cfg, built, writer, fig2.mon)
        assert (tmp_path / "s.zarr").exists()  # the stage's commit swapped it into place
        assert built.a == []  # let go of once cut into the store's graph chunks
    s = store.open_store(cfg.out)
    assert (s.attrs["n"], s.attrs["nnz"], s.attrs["edges"], s.attrs["parts"]) == (6, 6 + 2 * len(FIG2_EDGES),
                                                                                   len(FIG2_EDGES), 3)
    assert s.attrs["model"] == "rp" and s.attrs["command"] == "pipeline build fig2.txt"
    assert attrs["checksums"] == s.attrs["checksums"] and attrs["partitions"] == s.attrs["partitions"]
    assert len(s.attrs["checksums"]) == 3 and list(s.attrs["partitions"]) == ["rp"]
    np.testing.assert_array_equal(s.partition("rp"), parts.results["rp"].part)
    assert s.attrs["timings"]["write"] >= 0  # the stage's clock, snapshotted before the commit
