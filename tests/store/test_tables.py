"""The store's tables (``quality/``) under ``info --verify`` (issue 51, item 3): every array of them is
checksummed at build time and recomputed by :meth:`Store.verify`; a rewritten value is a checksum mismatch and
a chunk that does not decompress is one line naming the array, with or without ``--verify``."""

import shutil
import warnings

import numpy as np
import pytest
from helpers import run_main

from shgcn import store


def quality_array(path, name):
    import zarr

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return zarr.open_group(str(path / "quality"), mode="r+", zarr_format=3)[name]


def test_every_table_array_is_recorded_and_verified(copy):
    s = store.open_store(copy)
    recorded = sorted(k.split("/", 1)[1] for k in s.attrs["array_checksums"] if k.startswith("quality/"))
    assert recorded == sorted(s.quality().variables)  # coordinates (model, part) too
    assert "km1" in recorded and "total_volume" in recorded and "volume" in recorded
    assert s.verify() == s.parts + len(s.attrs["array_checksums"])  # every rank block, every recorded checksum


def test_a_rewritten_total_volume_fails_verify(copy):
    a = quality_array(copy, "total_volume")
    a[...] = np.asarray(a[...]) + 5  # a valid chunk with other numbers: only the checksum can tell
    with pytest.raises(store.StoreError) as e:
        store.open_store(copy).verify()
    assert str(e.value) == f"{copy}/quality/total_volume: checksum mismatch: the array is corrupt"
    res = run_main("info", str(copy), "--verify")
    assert (res.returncode, res.stdout, res.stderr) == (
        2, "", f"pipeline: error: {copy}/quality/total_volume: checksum mismatch: the array is corrupt\n")
    assert run_main("info", str(copy)).returncode == 0  # without --verify: the tables are read as they are


@pytest.mark.parametrize("verify", [True, False])
def test_a_flipped_byte_in_a_compressed_table_is_one_line_naming_the_array(copy, verify):
    chunk = copy / "quality" / "volume" / "c" / "0" / "0" / "0"
    raw = bytearray(chunk.read_bytes())
    raw[0] ^= 0xFF  # the zstd frame's magic number: the chunk no longer decompresses
    chunk.write_bytes(bytes(raw))
    line = f"{copy}/quality/volume: cannot read the array (Zstd decompression error: invalid input data): a corrupt chunk"
    res = run_main("info", str(copy), *(["--verify"] if verify else []))
    assert (res.returncode, res.stdout, res.stderr) == (2, "", f"pipeline: error: {line}\n")
    with pytest.raises(store.StoreError) as e:
        store.open_store(copy).quality()
    assert str(e.value) == line


def test_a_missing_table_array_fails_verify(copy):
    shutil.rmtree(copy / "quality" / "imbalance")
    with pytest.raises(store.StoreError) as e:
        store.open_store(copy).verify()
    assert str(e.value) == f"{copy}/quality/imbalance: the array is missing (a damaged store)"


def test_any_flipped_byte_of_the_model_names_is_one_line_without_verify(copy):
    """info without --verify after one flipped byte of quality/model's chunk: a pyarrow ArrowException traceback
    (text it cannot wrap) or, silently, another model name; now one line naming the array, whichever byte."""
    chunk = copy / "quality" / "model" / "c" / "0"
    good = chunk.read_bytes()
    for k in range(len(good)):
        bad = bytearray(good)
        bad[k] ^= 0xFF
        chunk.write_bytes(bytes(bad))
        res = run_main("info", str(copy))
        assert res.returncode == 2 and res.stderr.count("\n") == 1, (k, res.stderr[-2000:])
        assert f"{copy}/quality/model" in res.stderr and "Traceback" not in res.stderr, (k, res.stderr)
    chunk.write_bytes(good)
    assert run_main("info", str(copy)).returncode == 0
