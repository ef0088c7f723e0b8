"""Reading a store: the round trip equals the in-memory result, the xarray
views, and validation (checksums, metadata, truncated or altered chunks)."""

import json

import numpy as np
import pytest
import scipy.sparse as sp
from helpers.stores import SMALL as SBM
from helpers.stores import make_in as make

from shgcn import store
from shgcn.pipeline.sources.synthetic import parse_spec
from shgcn.pipeline.stages.ingest import to_graph
from shgcn.pipeline.stages.normalize import normalized_adjacency


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


def test_feature_density_counts_the_blocks_nonzeros(built):
    s = store.open_store(built.path)
    _, x = reassemble(s)
    assert s.feature_density() == np.count_nonzero(x) / x.size
    first = np.concatenate([np.asarray(s.rank(r).features[:3]) for r in range(s.parts)])
    assert s.feature_density(rows_per_rank=3) == np.count_nonzero(first) / first.size  # a bounded read


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
