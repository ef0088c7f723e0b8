"""shp's options (pipeline/models/shp/config.py): from the build's options, with the time budget, the net
construction and the sampler they resolve to, and every bad value refused."""

import pytest

from shgcn.pipeline.errors import UserError
from shgcn.pipeline.models import PartitionConfig, default_options
from shgcn.pipeline.models.shp.config import OPTIONS, SHPConfig


def config(**options) -> PartitionConfig:
    return PartitionConfig(parts=4, options={**default_options(), **options})


def test_options_make_the_config_and_the_time_budget():
    cfg = config(sampler="edge", shp_time_factor=2.0)
    scfg = SHPConfig.of(cfg, {"hp": 3.0})
    assert scfg.sampler == "edge" and scfg.time_budget == 6.0 and scfg.preset == "deterministic"
    assert SHPConfig.of(cfg).time_budget is None  # no hp in the build: no budget
    assert scfg.resolved_construction() == "batches"
    assert SHPConfig.of(config(hp_preset="mtkahypar-quality")).preset == "quality"  # hp's Mt-KaHyPar preset
    assert SHPConfig.of(config(hp_preset="quality")).preset == "deterministic"  # behind hp's quality
    fast = SHPConfig.of(config(shp_refiner="fast-vcycles", hp_preset="mtkahypar-quality"))
    assert (fast.refiner, fast.engine, fast.vcycles) == ("fast-vcycles", "default", 1)  # its own engine
    assert SHPConfig(refiner="fast-vcycles").engine == "default" and SHPConfig().engine == "deterministic"


def test_every_option_has_a_flag_and_reaches_the_config():
    assert [o.flag for o in OPTIONS] == [
        "--sampler", "--batch-size", "--walk-length", "--theta", "--delta", "--batches", "--eval-batches",
        "--validation-batches", "--shp-construction", "--shp-max-rounds", "--shp-min-gain", "--shp-refiner",
        "--shp-time-factor"]
    scfg = SHPConfig.of(config(batch_size=7, walk_length=3, theta=0.2, delta=0.1, batches=9, eval_batches=11,
                               validation_batches=5, shp_construction="batches", shp_max_rounds=2, shp_min_gain=0.5,
                               shp_refiner="lp"))
    assert (scfg.batch_size, scfg.walk_length, scfg.theta, scfg.delta, scfg.batches, scfg.eval_batches) == (
        7, 3, 0.2, 0.1, 9, 11)
    assert (scfg.validation_batches, scfg.construction, scfg.max_rounds, scfg.min_gain) == (5, "batches", 2, 0.5)
    assert scfg.refiner == "lp" and SHPConfig.of(config()).refiner == "vcycles"


def test_what_the_choices_resolve_to():
    assert SHPConfig().resolved_construction() == "columns"  # the node sampler's default
    assert SHPConfig(batches=5).resolved_construction() == "batches"  # the paper's model as is
    assert SHPConfig(sampler="rw").resolved_construction() == "batches"
    assert SHPConfig(eval_batches=30).resolved_validation_batches() == 30
    assert SHPConfig(eval_batches=30, validation_batches=8).resolved_validation_batches() == 8
    s = SHPConfig(walk_length=3).sampler_config(n=95, seed=4)
    assert (s.kind, s.size, s.walk_length, s.seed) == ("node", 9, 3, 4)  # 10% of n by default
    assert SHPConfig(batch_size=20).sampler_config(95, 0).size == 20


@pytest.mark.parametrize("bad, fragment", [
    ({"sampler": "full"}, "--sampler 'full'"),
    ({"theta": 0.0}, "need theta > 0"),
    ({"delta": 1.0}, "0 < delta < 1"),
    ({"batches": 0}, "--batches 0"),
    ({"eval_batches": 1}, "--eval-batches 1"),
    ({"validation_batches": 1}, "--validation-batches 1"),
    ({"max_rounds": 0}, "--shp-max-rounds must be >= 1"),
    ({"tangent_passes": -1}, "--shp-tangent-passes"),
    ({"refiner": "fm"}, "--shp-refiner 'fm': choose from lp, fast-vcycles, vcycles"),
    ({"walk_length": 0}, "--walk-length >= 1"),
    ({"construction": "cols"}, "--shp-construction 'cols'"),
    ({"construction": "columns", "sampler": "edge"}, "columns needs --sampler node"),
])
def test_bad_values_are_user_errors(bad, fragment):
    with pytest.raises(UserError, match=fragment.replace("(", r"\(")):
        SHPConfig(**bad).check()
