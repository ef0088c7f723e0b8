"""The package shgcn.store (store/__init__.py): its public names load on first use, and ``dir()`` lists them."""

import importlib
import subprocess
import sys

import pytest

import shgcn.store as store
from shgcn.core.errors import UserError

PUBLIC = ["SCHEMA_VERSION", "GraphArrays", "Plan", "RankBlock", "RankFiles", "Store", "StoreError", "StoreWriter", "UserError",
          "abort_all", "array_checksum", "block_arrays", "block_checksum", "enclosing_store", "graph_arrays",
          "is_store_dir",
          "memmap_array", "open_rank", "open_store", "release_pages", "to_dgl", "to_pyg", "write_array", "write_graph_block",
          "write_node_rows", "write_rank"]


def test_dir_lists_every_public_name():
    assert sorted(store.__all__) == sorted(PUBLIC)
    assert set(PUBLIC) <= set(dir(store)) and dir(store) == sorted(dir(store))
    assert {"to_pyg", "to_dgl", "open_store", "open_rank", "StoreWriter"} <= set(dir(store))


@pytest.mark.parametrize("name, module", [("open_store", "_reader"), ("Store", "_reader"), ("Plan", "_schema"),
                                          ("SCHEMA_VERSION", "_schema"), ("write_rank", "_arrays"),
                                          ("is_store_dir", "_atomic"), ("enclosing_store", "_atomic"),
                                          ("StoreWriter", "_writer"),
                                          ("StoreError", "errors"), ("to_pyg", "interop"), ("graph_arrays", "interop")])
def test_a_name_is_the_object_of_its_module(name, module):
    assert getattr(store, name) is getattr(importlib.import_module(f"shgcn.store.{module}"), name)


def test_every_public_name_resolves():
    for name in PUBLIC:
        assert getattr(store, name) is not None, name
    assert store.UserError is UserError and issubclass(store.StoreError, UserError)
    assert store.SCHEMA_VERSION == 2


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="module 'shgcn.store' has no attribute 'open'"):
        store.open  # noqa: B018


def test_the_errors_load_neither_zarr_nor_xarray():
    code = ("import sys\nimport shgcn.store\nimport shgcn.store.errors\nfrom shgcn.store import StoreError\n"
            "light = sorted({'zarr', 'xarray', 'numpy', 'dask'} & {m.split('.')[0] for m in sys.modules})\n"
            "shgcn.store.open_store\n"
            "print(light, 'zarr' in sys.modules)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[] True"
