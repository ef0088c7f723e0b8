"""A build's configuration (pipeline/config.py): what it derives (models, layout, dims, partition config), paths
made absolute before they travel, and every value no build can use refused in one line."""

import os

import pytest

from shgcn.pipeline.config import BuildConfig
from shgcn.pipeline.errors import UserError
from shgcn.pipeline.models import default_options


def cfg(**kw) -> BuildConfig:
    return BuildConfig(**{"source": "sbm:n=50", "out": "o.zarr", "parts": 2, **kw})


def test_models_layout_and_names():
    c = cfg(models=("rp", "gp"), partition_files=("runs/metis_k4.txt", "b.npy"))
    assert c.imported_models() == ("metis_k4", "b") and c.all_models == ("rp", "gp", "metis_k4", "b")
    assert c.layout == "rp" and cfg(models=("rp", "hp")).layout == "hp" and cfg(layout_model="x").layout == "x"
    assert cfg().source_name == "sbm:n=50" and cfg(source=[[0], [1]]).source_name == "list"
    assert cfg(hidden=(32, 8)).dims(100, 7) == [100, 32, 8, 7]
    assert cfg(memory_limit=123).limit == 123 == cfg(memory_limit=123).guard_limit
    assert cfg(memory_limit=123, planned=True).guard_limit is None  # the plan checked it: the readers do not again


def test_the_partition_config_every_model_gets():
    p = cfg(eps=0.05, seed=3, threads=2, options={"hp_preset": "quality"}).partition_config(parts=8)
    assert (p.parts, p.eps, p.seed, p.threads) == (8, 0.05, 3, 2)
    assert p.options == {**default_options(), "hp_preset": "quality"}


def test_resolved_makes_paths_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = cfg(source="g.txt", out="s.zarr", data_dir="~/data", features="x.npy", partition_files=("p.txt",)).resolved()
    assert (r.source, r.out, r.features, r.partition_files) == (
        str(tmp_path / "g.txt"), str(tmp_path / "s.zarr"), str(tmp_path / "x.npy"), (str(tmp_path / "p.txt"),))
    assert r.data_dir == os.path.expanduser("~/data")
    assert cfg(source="cora").resolved().source == "cora"  # a dataset name stays a name
    with pytest.raises(UserError, match=r"--out '\.': name a new directory"):
        cfg(out=".").resolved()


@pytest.mark.parametrize("kw, message", [
    ({"parts": 0}, "--parts 0: must be at least 1"),
    ({"eps": float("nan")}, "--eps nan: must be a finite number above 0"),
    ({"models": ("xp",)}, "--model 'xp': choose from"),
    ({"models": ()}, "no model: give --model or --partition-file"),
    ({"models": ("rp", "rp")}, "--model: a model is listed twice"),
    ({"models": ("rp",), "partition_files": ("gp.txt",)}, "--partition-file gp.txt: its name 'gp' must differ"),
    ({"layout_model": "gp"}, "--layout-model 'gp' is not among the models hp"),
    ({"options": {"nope": 1}}, "unknown model option 'nope'"),
    ({"options": {"hp_preset": "slow"}}, "--hp-preset 'slow': choose one of"),
    ({"labels": "random:0"}, "--labels 'random:0'"),
    ({"memory_limit": 0}, "--memory-limit 0: must be at least one byte"),
    ({"chunk_bytes": 10}, "--chunk-bytes must be at least 1024"),
    ({"max_line": 10}, "--max-line must be at least 64"),
    ({"header": "maybe"}, "--header 'maybe': choose from auto, yes, no"),
    ({"balance": "edges"}, "--balance 'edges': choose from"),
    ({"hidden": ()}, "--hidden : positive layer widths"),
])
def test_values_no_build_can_use(kw, message):
    with pytest.raises(UserError) as e:
        cfg(**kw).check()
    assert message in str(e.value) and "\n" not in str(e.value)


def test_a_good_config_passes():
    cfg(models=("rp", "gp", "hp-vb"), options={"max_total_increase": 0.1}).check()


@pytest.mark.parametrize("kw,message", [
    ({"threads": -1}, "--threads -1: partitioner threads, from 0 (all cores) to 8 (4 per core of this machine's 2)"),
    ({"threads": 100000}, "--threads 100000: partitioner threads, from 0 (all cores) to 8 (4 per core of this "
                          "machine's 2)"),
    ({"ranks_per_node": 10**20}, "--ranks-per-node 100000000000000000000: at most --parts 2 (nodes of K ranks; all "
                                 "parts on one node: K = the parts)"),
    ({"memory_limit": 2**63}, "--memory-limit: more bytes than can be counted (at most 9,223,372,036,854,775,807, "
                              "just under 8192P)"),
    ({"models": ("gp", "shp"), "options": {"shp_time_factor": 2.0}},
     "--shp-time-factor 2.0: a budget of that many times hp's time, and the build computes no hp: add hp to "
     "--model, or leave the factor out"),
    ({"options": {"shp_min_gain": float("nan")}}, "--shp-min-gain nan: must be a finite number"),
    ({"options": {"theta": float("inf")}}, "--theta inf: must be a finite number")])
def test_counts_sizes_and_model_numbers_are_bounded(monkeypatch, kw, message):
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    with pytest.raises(UserError) as e:
        cfg(**kw).check()
    assert str(e.value) == message


def test_the_bounds_themselves_build(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    cfg(threads=8, ranks_per_node=2, memory_limit=2**63 - 1, models=("hp", "shp"),
        options={"shp_time_factor": 2.0}).check()


@pytest.mark.parametrize("seed", [-1, 2**63])
def test_a_seed_numpy_refuses_is_one_line(seed):
    """--seed -1 planned "fits" and the build ended in numpy's traceback."""
    with pytest.raises(UserError) as e:
        cfg(seed=seed).check()
    assert str(e.value) == f"--seed {seed}: must be in 0..2^63-1"
