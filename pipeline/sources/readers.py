"""Reading a graph file or dataset directory with the registered readers
(:mod:`.registry`): the format from ``--format`` or from the path
(:func:`.registry.detect`), then that reader's ``submit`` on the workers;
and, for tests and small graphs, everything a read holds brought to the
client (:func:`read`).

Formats: ``edgelist`` (SNAP / Network Repository text, optionally gzip,
:mod:`.edgelist`), ``mtx`` (Matrix Market, :mod:`.mtx`), ``metis`` (METIS
``.graph``, :mod:`.metis`), ``npz`` (a scipy.sparse matrix saved with
``save_npz``, :mod:`.npz`), ``planetoid`` (the ``ind.<name>.*`` pickles,
:mod:`.planetoid`), ``ogb`` and ``saint`` (dataset directories,
:mod:`.ogb`, :mod:`.saint`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import UserError, quoted
from . import parsing, registry
from .base import HEADERS, RawSource, ReadOptions
from .planetoid import read_planetoid_whole
from .records import NodeSource, RawGraph

# read_planetoid_whole lives in .planetoid; the fault suite (tests/faults) reaches it here
__all__ = ["gather_raw", "read", "read_planetoid_whole", "submit_read"]


def submit_read(tasks, path: str, fmt: str | None, opts: ReadOptions = ReadOptions()) -> RawSource:
    """Read ``path`` on the workers; returns futures and a few numbers.
    Raises :class:`UserError` (one line, naming file and line) for bad input."""
    if fmt is None:
        fmt = registry.detect(path)
    reader = registry.get(fmt)
    if opts.header not in HEADERS:
        raise UserError(f"{quoted('--header', opts.header)}: choose from {', '.join(HEADERS)}")
    return reader.submit(tasks, path, opts)


def _whole_array(a):
    """An in-memory array of a node array (a RowFile is read whole: tests and small graphs only)."""
    return a if a is None or isinstance(a, np.ndarray) else a[0:a.shape[0]]


def gather_raw(tasks, raw: RawSource) -> RawGraph:
    """Everything a RawSource holds, on the client (tests and small graphs only)."""
    chunks = tasks.gather(raw.chunks)
    nodes = raw.nodes.result() if raw.nodes is not None else None
    if nodes is not None:
        nodes = NodeSource(_whole_array(nodes.features) if nodes.features is not None else None,
                           _whole_array(nodes.labels) if nodes.labels is not None else None, nodes.masks,
                           nodes.classes, nodes.label_kind, nodes.roles)
    src = np.concatenate([c.a for c in chunks]) if chunks else np.zeros(0, np.int64)
    dst = np.concatenate([c.b for c in chunks]) if chunks else np.zeros(0, np.int64)
    return RawGraph(src=src, dst=dst, n=raw.n, directed=raw.directed, source=raw.name, lines=int(src.size),
                    node_ids=None if raw.n is None else np.arange(raw.n, dtype=np.int64) + raw.base,
                    features=None if nodes is None else nodes.features, labels=None if nodes is None else nodes.labels,
                    masks=None if nodes is None else nodes.masks, notes=list(raw.notes))


def read(path: str | Path, fmt: str | None, client, *, chunk_bytes: int = parsing.DEFAULT_CHUNK_BYTES,
         header: str = "auto", split_scheme: str | None = None, memory_limit: int | None = None) -> RawGraph:
    """Read ``path`` and bring its edges (and node data) to the client (tests and small graphs)."""
    import tempfile

    from ..runtime.client import Tasks

    tasks = Tasks(client)
    with tempfile.TemporaryDirectory(prefix="shgcn-read-") as work:
        try:
            opts = ReadOptions(chunk_bytes=chunk_bytes, header=header, split_scheme=split_scheme, work_dir=work,
                               memory_limit=memory_limit)
            return gather_raw(tasks, submit_read(tasks, str(path), fmt, opts))
        finally:
            tasks.release()
