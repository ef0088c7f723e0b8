"""The build (pipeline/builder.py): row blocks equal one block, imported assignments,
volume-balanced models in the store."""

import numpy as np
import pytest
from helpers import run_cli, run_main
from helpers.stores import SMALL, make, make_in, same_store

from shgcn import store


def test_many_row_blocks_equal_one(tmp_path, client, built):
    one = built  # the session's store: make_in's defaults, one row block
    many = make_in(tmp_path, client, "many.zarr", block_nnz=500)
    assert store.open_store(one.path).attrs["stats"]["row_blocks"] == 1
    assert store.open_store(many.path).attrs["stats"]["row_blocks"] > 5
    same_store(one.path, many.path)  # the store does not depend on how the build cut its work


@pytest.mark.slow  # quick-suite budget: CI runs it (-m '')
def test_directed_many_blocks_and_chunks_equal_one(tmp_path, client):
    text = "".join(f"{u} {v}\n" for u, v in np.random.default_rng(3).integers(0, 400, (3000, 2)).tolist())
    src = tmp_path / "g.txt"
    src.write_text(text)
    one = make(tmp_path / "one.zarr", client, source=str(src), features="random:5", labels="random:3")
    many = make(tmp_path / "many.zarr", client, source=str(src), features="random:5", labels="random:3",
                block_nnz=300, chunk_bytes=2048)
    assert store.open_store(many.path).attrs["directed"]
    same_store(one.path, many.path)


def test_partition_file_is_a_model(tmp_path, client, built):
    first = built  # the session's store of SMALL, with gp
    part = store.open_store(first.path).partition("gp")
    f = tmp_path / "metis_k3.txt"
    f.write_text("".join(f"{p}\n" for p in part))
    res = make_in(tmp_path, client, "b.zarr", models=("rp",), partition_files=(str(f),), layout_model="metis_k3")
    s = store.open_store(res.path)
    assert s.models == ["rp", "metis_k3"] and s.attrs["model"] == "metis_k3"
    np.testing.assert_array_equal(s.partition("metis_k3"), part)
    q_a, q_b = store.open_store(first.path).quality(), s.quality()
    np.testing.assert_array_equal(q_a["volume"].sel(model="gp").values, q_b["volume"].sel(model="metis_k3").values)
    bad = tmp_path / "short.txt"
    bad.write_text("0\n1\n")
    res = run_cli("build", SMALL, "--parts", "3", "--model", "rp", "--partition-file", str(bad),
                  "--out", str(tmp_path / "c.zarr"))
    assert res.returncode == 2 and "2 entries for a graph of 600 vertices" in res.stderr


def test_volume_balanced_models_in_the_store_and_simulate(tmp_path, client):
    res = make(tmp_path / "vb.zarr", client, source="sbm:n=2000,classes=6,degree=10,features=4,seed=4", parts=6,
               models=("rp", "hp", "hp-vb", "gp-vb"))
    s = store.open_store(res.path)
    assert s.models == ["rp", "hp", "hp-vb", "gp-vb"]
    q = {r["model"]: r for r in res.table}
    assert q["hp-vb"]["max_send"] <= q["hp"]["max_send"] and q["hp-vb"]["max_recv"] <= q["hp"]["max_recv"]
    assert q["hp-vb"]["total_volume"] <= 1.3 * q["hp"]["total_volume"]  # --max-total-increase
    assert q["hp-vb"]["work_imbalance"] <= max(0.03, q["hp"]["work_imbalance"]) + 1e-9  # the weights balanced
    info = s.attrs["partitions"]
    assert info["hp-vb"]["base"] == "hp" and "base_seconds" not in info["hp-vb"]  # refined the build's hp
    assert "base_seconds" in info["gp-vb"]  # gp was not asked for: computed inside the model
    out = run_main("simulate", str(res.path), "--network", "shm", "--hidden", "16")
    assert out.returncode == 0, out.stderr
    for m in ("rp", "hp", "hp-vb", "gp-vb"):
        assert f" {m} " in out.stdout
    assert "vs rp" in out.stdout and "bcast" in out.stdout


def test_the_files_the_workers_must_read(tmp_path):
    from shgcn.pipeline.builder import _inputs
    from shgcn.pipeline.config import BuildConfig

    f = tmp_path / "g.txt"
    cfg = BuildConfig(source=str(f), out="o.zarr", parts=2, features=str(tmp_path / "x.npy"),
                      partition_files=(str(tmp_path / "p.txt"),))
    assert _inputs(cfg) == [str(tmp_path / "p.txt"), str(tmp_path / "x.npy"), str(f)]
    assert _inputs(BuildConfig(source="cora", out="o.zarr", parts=2)) == []  # a dataset: found by its registry
    assert _inputs(BuildConfig(source=str(tmp_path / "ind.cora"), out="o.zarr", parts=2)) == []  # a prefix, no file


def test_after_kaminpar_the_graph_file_goes_and_the_patterns_wait_on_disk(tmp_path, client, monkeypatch):
    from shgcn.pipeline import builder

    seen = {}
    place = builder.place_stage

    def looking(tasks, cfg, nrm, parts, mon):  # the stage after the partition: what the temporary area holds
        work = next(tmp_path.glob(".g.zarr.partial-*/.work"))
        seen["files"] = sorted(p.name for p in work.iterdir())
        seen["patterns"] = sorted(p.name for p in (work / "patterns").iterdir())
        seen["mapped"] = all(isinstance(b.indices, np.memmap) for b in tasks.gather(list(nrm.patterns()[0])))
        return place(tasks, cfg, nrm, parts, mon)

    monkeypatch.setattr(builder, "place_stage", looking)
    make(tmp_path / "g.zarr", client, models=("gp",))
    assert "graph.parhip" not in seen["files"] and "patterns" in seen["files"] and seen["mapped"]
    assert seen["patterns"] and all(p.startswith("a.") for p in seen["patterns"])  # SBM: undirected, A's blocks only
