"""A graph file of the build's graph, written by the workers block by block
(:mod:`..graphfile`): the input of the file-based partitioners (KaMinPar)
and of ``pipeline export graph`` (distributed partitioners)."""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from .. import graphfile as gf
from ..runtime.client import Tasks
from .ingest import Ingested

FORMATS = ("parhip", "metis")


@dataclass(frozen=True)
class GraphFile:
    """Attributes: path; fmt (``parhip`` or ``metis``); n; m (adjacency
    entries: both directions of every edge)."""

    path: str
    fmt: str
    n: int
    m: int


def write_graph_file(tasks: Tasks, ing: Ingested, weights, path: str, fmt: str = "parhip") -> GraphFile:
    """Write the pattern of A + Aᵀ without self loops with the vertex
    ``weights`` (a future of (n,) int64) to ``path``; every block's piece is
    made and written by a worker at its offset."""
    import distributed

    pairs = [(a, at if ing.directed else None) for a, at in zip(ing.a, ing.at)]
    if fmt == "parhip":  # each block's symmetric rows made twice (counted, then written): none waits in memory
        counts = tasks.gather([tasks.submit("graphfile-count", _symmetric_edges, a, at) for a, at in pairs])
        first = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        m = int(first[-1])
        with open(path, "wb") as f:
            f.write(gf.parhip_header(ing.n, m))
            f.truncate(gf.parhip_size(ing.n, m))
        writes = [tasks.submit("graphfile-write", _write_parhip, path, a, at, weights, int(first[i]), m)
                  for i, (a, at) in enumerate(pairs)]
    elif fmt == "metis":
        sym = [tasks.submit("graphfile-symmetric", gf.symmetric_block, a, at) for a, at in pairs]
        counts = tasks.gather([tasks.submit("graphfile-count", gf.block_edges, b) for b in sym])
        m = int(np.sum(counts, dtype=np.int64))
        texts = [tasks.submit("graphfile-text", gf.metis_text, b, weights) for b in sym]
        sizes = tasks.gather([tasks.submit("graphfile-size", len, t) for t in texts])
        header = gf.metis_header(ing.n, m // 2)
        starts = len(header) + np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        with open(path, "wb") as f:
            f.write(header)
            f.truncate(int(starts[-1]))
        writes = [tasks.submit("graphfile-write", gf.write_at, path, int(starts[i]), t) for i, t in enumerate(texts)]
    else:
        raise ValueError(f"format {fmt!r}: one of {', '.join(FORMATS)}")
    distributed.wait(writes)
    tasks.gather(writes)  # raise a worker's error here
    return GraphFile(os.path.abspath(path), fmt, ing.n, m)


def _symmetric_edges(a, at) -> int:
    return gf.symmetric_block(a, at).nnz


def _write_parhip(path: str, a, at, weights: np.ndarray, first_edge: int, m: int) -> int:
    return gf.write_parhip_block(path, gf.symmetric_block(a, at), weights, first_edge, m)
