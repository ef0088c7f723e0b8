"""Store round trip, determinism, atomicity and validation, through real builds."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from helpers import run_cli

from shgcn import store
from shgcn.pipeline.compose import BuildConfig, build
from shgcn.pipeline.ingest import to_graph
from shgcn.pipeline.normalize import normalized_adjacency
from shgcn.pipeline.synthetic import parse_spec

SBM = "sbm:n=600,classes=4,degree=6,features=8,seed=1"


def make(tmp_path, client, name="s.zarr", source=SBM, **kw):
    cfg = BuildConfig(source=source, out=str(tmp_path / name), parts=kw.pop("parts", 3),
                      models=kw.pop("models", ("rp", "gp", "hp")), **kw)
    return build(cfg, client, echo=lambda *a: None)


@pytest.fixture(scope="module")
def built(tmp_path_factory, client):
    return make(tmp_path_factory.mktemp("store"), client)


def reassemble(s, directed=False):
    n, offsets = s.attrs["n"], s.offsets
    rows, feats = [], []
    for r in range(s.parts):
        b = s.rank(r)
        assert isinstance(b.plan.indices, np.memmap) and isinstance(b.features, np.memmap)
        plan = b.transpose if directed else b.plan
        col = np.concatenate([np.arange(offsets[r], offsets[r + 1]), plan.recv_ids])
        rows.append(sp.csr_matrix((plan.data, col[plan.indices], plan.indptr), shape=(b.n_own, n)))
        feats.append(np.asarray(b.features))
    return sp.vstack(rows).tocsr(), np.vstack(feats)


def test_round_trip_equals_in_memory_result(built):
    s = store.open_store(built.path)
    g = to_graph(parse_spec(SBM), directed=False)
    a = normalized_adjacency(g.adj, False)
    perm = s.permutation()
    a_blocks, x_blocks = reassemble(s)
    expect = a[perm][:, perm]
    assert (a_blocks != expect).nnz == 0
    np.testing.assert_array_equal(x_blocks, g.features[perm])
    # perm sorts vertices by their part under the layout model
    assert np.all(np.diff(s.partition("hp")[perm]) >= 0)
    assert s.attrs["n"] == 600 and s.attrs["nnz"] == a.nnz and s.models == ["rp", "gp", "hp"]


def test_directed_store_has_transpose_plan(tmp_path, client):
    res = make(tmp_path, client, source="rmat:scale=8,edge_factor=4,seed=2", models=("rp",), parts=4)
    s = store.open_store(res.path)
    assert s.attrs["directed"]
    g = to_graph(parse_spec("rmat:scale=8,edge_factor=4,seed=2"), directed=True)
    a = normalized_adjacency(g.adj, True)
    perm = s.permutation()
    at_blocks, _ = reassemble(s, directed=True)
    assert (at_blocks != a.T.tocsr()[perm][:, perm]).nnz == 0


def test_quality_and_nodes_are_xarray(built):
    import xarray as xr
    s = store.open_store(built.path)
    q = s.quality()
    assert list(q["model"].values) == ["rp", "gp", "hp"]
    assert (q["total_volume"] == q["km1"]).all()
    nodes = xr.open_zarr(str(built.path), group="nodes", zarr_format=3, consolidated=False)
    assert nodes["features"].shape == (600, 8)
    b = s.rank(1)
    np.testing.assert_array_equal(nodes["labels"].values[b.node_index], b.labels)
    # the plan's send volume is the quality table's row
    hp = q["volume"].sel(model="hp").values
    for r in range(3):
        assert s.rank(r).plan.send_volume().tolist() == hp[r].tolist()


def _array_files(root: Path):
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_file() and rel != "zarr.json" and not rel.startswith("quality/seconds"):
            out[rel] = p.read_bytes()
    return out


def test_same_seed_gives_byte_identical_store(built, tmp_path, client):
    again = make(tmp_path, client, name="again.zarr")
    a, b = _array_files(built.path), _array_files(again.path)
    assert a.keys() == b.keys() and len(a) > 50
    assert [k for k in a if a[k] != b[k]] == []
    assert built.attrs["checksums"] == again.attrs["checksums"]


def test_different_seed_changes_the_partition(built, tmp_path, client):
    other = make(tmp_path, client, name="other.zarr", seed=1)
    assert not np.array_equal(store.open_store(built.path).partition("rp"),
                              store.open_store(other.path).partition("rp"))


def test_failure_mid_write_leaves_nothing(tmp_path, client, monkeypatch):
    import shgcn.pipeline.compose as pb

    calls = []

    real = pb._write_rank

    def failing(root, x, *args):
        calls.append(x.r)
        if x.r == 1:
            raise RuntimeError("disk full")
        return real(root, x, *args)

    monkeypatch.setattr(pb, "_write_rank", failing)
    with pytest.raises(RuntimeError, match="disk full"):
        make(tmp_path, client, name="fail.zarr", models=("rp",))
    assert list(tmp_path.iterdir()) == []


def test_killed_build_leaves_no_valid_store(tmp_path):
    script = f"""
import sys, time
from shgcn import store
real = store.write_rank
def slow(root, block):
    out = real(root, block)
    if block.rank == 1:
        print("WRITING", flush=True)
        time.sleep(60)
    return out
store.write_rank = slow
from shgcn.pipeline.cli import main
main(["--quiet", "build", {SBM!r}, "--parts", "3", "--model", "rp", "--out", {str(tmp_path / 'k.zarr')!r}])
"""
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 120
        while time.time() < deadline:
            line = proc.stdout.readline()
            if "WRITING" in line:
                break
        else:
            pytest.fail("build never reached the write stage")
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    assert not (tmp_path / "k.zarr").exists()
    partials = [p for p in tmp_path.iterdir() if p.name.startswith(".k.zarr.partial-")]
    assert len(partials) == 1 and {p.name for p in tmp_path.iterdir()} == {partials[0].name, ".k.zarr.lock"}
    with pytest.raises(store.StoreError, match="did not finish, not a store"):
        store.open_store(partials[0])
    # the next build takes the dead build's lock over and removes its partial, saying so
    res = run_cli("build", SBM, "--parts", "3", "--model", "rp", "--out", str(tmp_path / "k.zarr"))
    assert res.returncode == 0, res.stderr
    assert "taking over the lock" in res.stderr and "removing the partial store" in res.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["k.zarr"]


def test_existing_output_is_refused_then_overwritten(built, tmp_path, client):
    with pytest.raises(store.StoreError, match="already exists"):
        make(built.path.parent, client, name=built.path.name)
    res = make(tmp_path, client, name="o.zarr", models=("rp",))
    res2 = make(tmp_path, client, name="o.zarr", models=("rp",), overwrite=True, seed=3)
    assert store.open_store(res2.path).attrs["seed"] == 3 and res.path == res2.path
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.zarr"]


@pytest.fixture
def copy(built, tmp_path):
    import shutil
    dst = tmp_path / "c.zarr"
    shutil.copytree(built.path, dst)
    return dst


def test_truncated_chunk_is_reported(copy):
    chunk = copy / "ranks" / "1" / "indices" / "c" / "0"
    chunk.write_bytes(chunk.read_bytes()[:-4])
    with pytest.raises(store.StoreError, match=r"ranks/1/indices/c/0: chunk file has .* bytes, expected"):
        store.open_store(copy).rank(1)
    store.open_store(copy).rank(0)  # other ranks are unaffected


def test_flipped_byte_fails_the_checksum(copy):
    chunk = copy / "ranks" / "2" / "data" / "c" / "0"
    raw = bytearray(chunk.read_bytes())
    raw[5] ^= 0xFF
    chunk.write_bytes(bytes(raw))
    with pytest.raises(store.StoreError, match="checksum mismatch: rank 2"):
        store.open_store(copy).rank(2)
    store.open_store(copy).rank(2, verify=False)


def test_compressed_array_cannot_be_memory_mapped(copy):
    meta_path = copy / "ranks" / "0" / "data" / "zarr.json"
    meta = json.loads(meta_path.read_text())
    meta["codecs"].append({"name": "zstd", "configuration": {"level": 1, "checksum": False}})
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(store.StoreError, match="compressed"):
        store.open_store(copy).rank(0)


def test_wrong_dtype_is_reported(copy):
    meta_path = copy / "ranks" / "0" / "indices" / "zarr.json"
    meta = json.loads(meta_path.read_text())
    meta["data_type"] = "int64"
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(store.StoreError, match="data type int64 where int32 was expected"):
        store.open_store(copy).rank(0, verify=False)


def test_incomplete_and_missing_stores(copy, tmp_path):
    with pytest.raises(store.StoreError, match="store not found"):
        store.open_store(tmp_path / "nope.zarr")
    with pytest.raises(store.StoreError, match="rank 3 out of range"):
        store.open_store(copy).rank(3)
    meta = json.loads((copy / "zarr.json").read_text())
    del meta["attributes"]["complete"]
    (copy / "zarr.json").write_text(json.dumps(meta))
    with pytest.raises(store.StoreError, match="incomplete store"):
        store.open_store(copy)
