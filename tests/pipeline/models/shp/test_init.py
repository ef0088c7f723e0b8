"""The shp model (pipeline/models/shp/__init__.py): conformance, its options, and a
store built with it is byte-identical for one seed."""

from pathlib import Path

import numpy as np
import pytest

from shgcn.core import sample
from shgcn.pipeline.models import PartitionConfig, default_options
from shgcn.pipeline.models.shp.config import SHPConfig
from shgcn.testing.partitioners import PartitionerTests

SMALL = {"batch_size": 40, "eval_batches": 10, "shp_max_rounds": 1}


class TestStochasticHypergraph(PartitionerTests):
    model = "shp"
    options = SMALL
    bad_options = {"eval_batches": 1}


class TestStochasticHypergraphVb(PartitionerTests):
    model = "shp-vb"
    options = SMALL
    bad_options = {"sampler": "nope"}


def test_the_model_reads_its_options_and_asks_for_the_minibatch_report():
    from shgcn.pipeline.models import get

    cfg = PartitionConfig(parts=4, seed=7, options={**default_options(), "sampler": "edge", "eval_batches": 30})
    report = get("shp").extra_quality(cfg, 500)
    assert (report.sampler.kind, report.sampler.size, report.sampler.seed) == ("edge", 50, 7)
    assert (report.eval_batches, report.theta, report.delta, report.convergence_model) == (30, 0.1, 0.5, "shp")
    from shgcn.pipeline.models import shp

    assert shp.SHPConfig is SHPConfig  # the options live in shp.config; shp names them for its callers


def _store_files(root) -> dict[str, bytes]:
    """Every file of a store but its root metadata and the timings."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.name != "zarr.json" and "seconds" not in p.relative_to(root).as_posix()}


@pytest.mark.slow
def test_same_seed_gives_byte_identical_shp_store(tmp_path, client):
    """A build with gp, hp and shp (default options: no time budget, so no step depends on the
    clock) twice with one seed: the same partitions and mini-batch table,
    byte for byte; the table names its streams."""
    from shgcn import store
    from shgcn.pipeline.builder import build
    from shgcn.pipeline.config import BuildConfig

    def make(name):
        cfg = BuildConfig(source="sbm:n=300,classes=3,degree=6,features=4,seed=2", out=str(tmp_path / name), parts=2,
                          models=("gp", "hp", "shp"),  # the default: no time budget
                          options={"sampler": "rw", "eval_batches": 20, "validation_batches": 10,
                                   "shp_max_rounds": 1})
        return build(cfg, client, echo=lambda *a: None)

    first, again = make("a.zarr"), make("b.zarr")
    fa, fb = _store_files(Path(first.path)), _store_files(Path(again.path))
    assert fa.keys() == fb.keys() and [k for k in fa if fa[k] != fb[k]] == []
    s = store.open_store(first.path)
    assert np.array_equal(s.partition("shp"), store.open_store(again.path).partition("shp"))
    mb = s.minibatch()
    assert (mb.attrs["heldout_stream"], mb.attrs["validation_stream"]) == (sample.HELDOUT, sample.VALIDATION)
    assert "never used to build or choose" in mb.attrs["streams"]
    s = store.open_store(first.path)
    assert np.array_equal(s.partition("shp"), store.open_store(again.path).partition("shp"))
    mb = s.minibatch()
    assert (mb.attrs["heldout_stream"], mb.attrs["validation_stream"]) == (sample.HELDOUT, sample.VALIDATION)
    assert "never used to build or choose" in mb.attrs["streams"]
