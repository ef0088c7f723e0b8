"""The store's tables (``quality/``, ``minibatch/``: xarray Datasets, written
compressed by :meth:`~._writer.StoreWriter.write_quality`): the checksum of
each of their arrays as zarr reads it back, recorded at build time beside
the other arrays' (``array_checksums``, keys ``quality/NAME``) and recomputed
by :meth:`~._reader.Store.verify`; a chunk that does not decompress is one
line naming its array."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

from . import _layout
from ._arrays import array_checksum
from ._schema import StoreError

TABLES = (_layout.QUALITY, _layout.MINIBATCH)
# what reading a corrupt compressed chunk raises: numcodecs' Zstd (RuntimeError), a short or bad chunk (ValueError)
UNREADABLE = (RuntimeError, ValueError, OSError, KeyError, TypeError, IndexError)


def table_checksums(root: Path, group: str) -> dict[str, str]:
    """``{group/NAME: checksum}`` of every array of the table ``group`` under ``root``; a :class:`StoreError`
    naming the first array that cannot be read."""
    import zarr

    with warnings.catch_warnings():  # the model names' fixed_length_utf32 data type (deliberate: _writer._quiet_zarr)
        warnings.filterwarnings("ignore", message=r".*data type \(FixedLengthUTF32.*")
        try:
            g = zarr.open_group(str(root / group), mode="r", zarr_format=3)
            names = sorted(g.array_keys())
        except UNREADABLE as e:
            raise StoreError(f"{root / group}: cannot read the table's metadata ({e}): a damaged store") from None
        out = {}
        for name in names:  # a loop over the table's few arrays
            try:
                a = np.asarray(g[name][...])  # type: ignore[index]
            except UNREADABLE as e:
                raise StoreError(f"{root / group / name}: cannot read the array ({e}): a corrupt chunk") from None
            out[f"{group}/{name}"] = array_checksum(a)
    return out


def verify_tables(root: Path, sums: dict[str, str]) -> int:
    """Recompute the checksum of every array of the store's tables against ``sums`` (the recorded ones); a
    :class:`StoreError` naming the first that is unreadable, missing or does not match. A store written before
    the tables' checksums were recorded has none: its tables are read whole (a corrupt chunk still fails), not
    compared. Returns how many arrays were compared."""
    checked = 0
    for group in TABLES:
        recorded = {k: v for k, v in sums.items() if k.startswith(f"{group}/")}
        if not (root / group / _layout.ROOT_META).exists():
            if recorded or group == _layout.QUALITY:
                raise StoreError(f"{root / group}: the table is missing (a damaged store); rebuild it with "
                                 "pipeline build")
            continue
        found = table_checksums(root, group)
        if not recorded:
            continue
        for key in sorted(found.keys() | recorded.keys()):
            if key not in recorded:
                raise StoreError(f"{root / key}: no checksum recorded for this array (a damaged store)")
            if key not in found:
                raise StoreError(f"{root / key}: the array is missing (a damaged store)")
            if found[key] != recorded[key]:
                raise StoreError(f"{root / key}: checksum mismatch: the array is corrupt")
        checked += len(found)
    return checked
