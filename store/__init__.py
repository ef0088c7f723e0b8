"""The shgcn store: a Zarr v3 directory holding a partitioned graph.

This package is the only code that knows the on-disk layout (see
:mod:`._layout`). Public API::

    s = store.open_store(path)     # validated, read-only
    s.attrs                        # dict: build parameters, n, nnz, parts, checksums...
    s.partition("hp")              # (n,) int32 part of every original vertex index
    s.permutation()                # (n,) int64 new id -> original index
    s.rank(r)                      # RankBlock of np.memmap views (checksum verified)
    s.quality()                    # xarray Dataset
    s.nodes()                      # xarray Dataset (features, labels, masks, ids)
    s.graph()                      # the input graph's pattern (csr), checksum verified
    store.to_pyg(s), store.to_pyg(s, rank=3)   # PyG Data (extra: pyg); to_dgl likewise (extra: dgl)
    store.graph_arrays(s, rank=None)           # the same export as numpy arrays

What the pipeline, the trainer and the report share beyond the store (the
models of cost and time, the samplers, the run log, the tables) lives one
level lower, in :mod:`shgcn.core`.

The names above are imported on first use: ``import shgcn.store.errors``
loads neither zarr nor xarray, and ``dir(shgcn.store)`` lists them all.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._arrays import (
        array_checksum,
        block_checksum,
        release_pages,
        write_array,
        write_graph_block,
        write_node_rows,
        write_rank,
    )
    from ._atomic import enclosing_store, is_store_dir
    from ._reader import Store, memmap_array, open_rank, open_store
    from ._schema import SCHEMA_VERSION, Plan, RankBlock, block_arrays
    from ._stream import RankFiles
    from ._writer import StoreWriter, abort_all
    from .errors import StoreError, UserError
    from .interop import GraphArrays, graph_arrays, to_dgl, to_pyg

_WHERE = {
    **dict.fromkeys(("Store", "memmap_array", "open_rank", "open_store"), "._reader"),
    **dict.fromkeys(("SCHEMA_VERSION", "Plan", "RankBlock", "block_arrays"), "._schema"),
    **dict.fromkeys(("array_checksum", "block_checksum", "write_array", "write_graph_block", "write_node_rows",
                     "write_rank", "release_pages"), "._arrays"),
    **dict.fromkeys(("enclosing_store", "is_store_dir"), "._atomic"),
    "RankFiles": "._stream",
    **dict.fromkeys(("StoreWriter", "abort_all"), "._writer"),
    **dict.fromkeys(("StoreError", "UserError"), ".errors"),
    **dict.fromkeys(("GraphArrays", "graph_arrays", "to_dgl", "to_pyg"), ".interop"),
}
__all__ = [
    "SCHEMA_VERSION", "GraphArrays", "Plan", "RankBlock", "RankFiles", "Store", "StoreError", "StoreWriter", "UserError",
    "abort_all", "array_checksum", "block_arrays", "block_checksum", "enclosing_store", "graph_arrays", "is_store_dir",
    "memmap_array",
    "open_rank", "open_store", "release_pages", "to_dgl", "to_pyg", "write_array", "write_graph_block", "write_node_rows",
    "write_rank",
]


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
