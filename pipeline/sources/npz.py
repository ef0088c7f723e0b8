"""A scipy.sparse matrix saved with ``save_npz`` (``.npz``): read whole, in
one task (:mod:`.whole`); its shape and entry count are checked against the
memory budget before anything is allocated."""

from __future__ import annotations

import zipfile
from dataclasses import dataclass

import numpy as np

from ..errors import located
from .base import RawSource, ReadOptions, Recognizes
from .probe import check_declared, check_file
from .records import ParsedChunk
from .whole import Whole, submit_whole


def read_npz(path: str, limit: int | None = None) -> Whole:
    """``ingest-read`` task: the matrix's entries as edges (row -> column)."""
    import scipy.sparse as sp

    n, _ = npz_declared(path, limit)
    try:
        m = sp.load_npz(path).tocoo()
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as e:
        raise located(path, f"not a scipy.sparse .npz file ({e})") from None
    return Whole(ParsedChunk(m.row.astype(np.int64), m.col.astype(np.int64), int(m.nnz)), n, None)


def npz_declared(path: str, limit: int | None = None) -> tuple[int, int]:
    """(vertices, entries) the file's shape and arrays' headers declare, checked (square, at least one vertex,
    within the memory budget ``limit``) before anything is read: what the build and its plan read first."""
    try:
        with np.load(path, allow_pickle=False) as z:
            shape = tuple(int(x) for x in z["shape"]) if "shape" in z.files else None
            entries = _npz_entries(z)
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as e:
        raise located(path, f"not a scipy.sparse .npz file ({e})") from None
    if shape is None or len(shape) != 2:
        raise located(path, "not a scipy.sparse .npz file (no 2-d 'shape')")
    if shape[0] != shape[1]:
        raise located(path, f"matrix is {shape[0]} x {shape[1]}; an adjacency matrix must be square")
    check_declared(path, shape[0], None, limit, entries)
    return shape[0], entries


def _npz_entries(z) -> int:
    """The entry count of a saved sparse matrix, from an array's header
    (``indices`` or ``row``): nothing is read but the header."""
    for name in ("indices", "row", "data"):
        member = f"{name}.npy"
        if member in z.zip.namelist():
            with z.zip.open(member) as f:
                version = np.lib.format.read_magic(f)
                shape = (np.lib.format.read_array_header_1_0(f) if version == (1, 0) else
                         np.lib.format.read_array_header_2_0(f))[0]
            return int(np.prod(shape)) if shape else 0
    return 0


@dataclass(frozen=True)
class Npz:
    """The ``.npz`` reader: the file checked on a worker, then read whole there."""

    name: str = "npz"
    recognizes: Recognizes = Recognizes(suffixes=(".npz",))
    names_files: bool = False

    def precheck(self, path: str, split_scheme: str | None = None) -> None:
        """The file and the sizes its arrays declare."""
        check_file(path, self.name)
        npz_declared(path)

    def submit(self, tasks, path: str, opts: ReadOptions) -> RawSource:
        tasks.submit("ingest-probe", check_file, path, self.name).result()  # on a worker: it reads the file
        return submit_whole(tasks, "ingest-read", path, read_npz, path, opts.limit)


READER = Npz()
