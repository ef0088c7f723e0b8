"""Names of things inside a store directory. The only module that builds paths.

::

    STORE/
      zarr.json                  root group: attributes (schema, build, checksums)
      permutation/               (n,) int64: new (permuted) id -> original index
      offsets/                   (P+1,) int64: rank r owns new ids offsets[r]:offsets[r+1]
      partitions/<model>/        (n,) int32: part of each original index, per model
      ranks/<r>/<array>/         rank r's block (see store._schema.RankBlock)
      ranks/<r>/transpose/<a>/   rank r's rows of Â^T (directed graphs only)
      nodes/                     xarray Dataset, original order: features, labels, masks, ids
      quality/                   xarray Dataset: quality of every model
      minibatch/                 xarray Dataset: expected mini-batch volume of every model (with shp)
      graph/bounds               (R+1,) int64 row bounds of the graph's row blocks
      graph/blocks/<b>/{indptr,indices}   the input graph's pattern (no self loops), rows of block b
"""

from __future__ import annotations

from pathlib import Path

ROOT_META = "zarr.json"
NODES = "nodes"
QUALITY = "quality"
MINIBATCH = "minibatch"
GRAPH = "graph"
PERMUTATION = "permutation"
OFFSETS = "offsets"


def rank_array(r: int, name: str) -> str:
    return f"ranks/{r}/{name}"


def partition_array(model: str) -> str:
    return f"partitions/{model}"


def node_piece(name: str, lo: int, hi: int) -> str:
    """The checksum key of rows ``lo:hi`` of the node array ``name``."""
    return f"{NODES}/{name}/{lo}:{hi}"


def parse_node_piece(key: str) -> tuple[str, int, int] | None:
    """(array name, lo, hi) of a :func:`node_piece` key, None for other keys."""
    head, _, rows = key.rpartition("/")
    if not head.startswith(f"{NODES}/") or ":" not in rows:
        return None
    lo, _, hi = rows.partition(":")
    return head[len(NODES) + 1:], int(lo), int(hi)


def graph_bounds() -> str:
    return f"{GRAPH}/bounds"


def graph_block(b: int, name: str) -> str:
    """``indptr`` or ``indices`` of row block ``b`` of the input graph's
    pattern (``name`` empty: the block's group)."""
    return f"{GRAPH}/blocks/{b}/{name}".rstrip("/")


PARTIAL_MARK = ".partial-"


def is_partial(path: Path) -> bool:
    """A build's working directory (``.NAME.partial-*``): never a store."""
    return path.name.startswith(".") and PARTIAL_MARK in path.name


def array_meta(root: Path, name: str) -> Path:
    return root / name / "zarr.json"


def chunk_file(root: Path, name: str, ndim: int) -> Path:
    """The single chunk of an uncompressed one-chunk array (default key encoding)."""
    return root.joinpath(name, "c", *(["0"] * ndim))
