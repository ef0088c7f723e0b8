"""Writing a store: byte-identical for one seed, atomic (a failure or a kill
leaves no store that looks complete), an existing output refused or replaced."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from helpers import run_cli
from helpers.stores import SMALL as SBM
from helpers.stores import make_in as make

from shgcn import store


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
    import shgcn.pipeline.stages.rankwrite as pb

    calls = []

    real = pb.write_rank

    def failing(root, rank, *args):
        calls.append(rank[0])
        if rank[0] == 1:
            raise RuntimeError("disk full")
        return real(root, rank, *args)

    monkeypatch.setattr(pb, "write_rank", failing)
    with pytest.raises(RuntimeError, match="disk full"):
        make(tmp_path, client, name="fail.zarr", models=("rp",))
    assert list(tmp_path.iterdir()) == []


def test_killed_build_leaves_no_valid_store(tmp_path):
    script = f"""
import sys, time
from shgcn import store
real = store.RankFiles.checksum
def slow(self, transpose):
    out = real(self, transpose)
    if self.r == 1:
        print("WRITING", flush=True)
        time.sleep(60)
    return out
store.RankFiles.checksum = slow
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
        proc.kill()
        proc.wait(timeout=60)
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


def test_node_chunks_never_taller_than_the_array_nor_wider_than_the_bound():
    from shgcn.store._writer import NODE_CHUNK_BYTES, node_chunk_rows

    assert node_chunk_rows(2708, 1 << 16, 1433 * 4) == 2708  # Cora: one 15 MB chunk, not a padded 375 MB one
    rows = node_chunk_rows(10**6, 1 << 16, 1433 * 4)
    assert rows * 1433 * 4 <= NODE_CHUNK_BYTES and (1 << 16) % rows == 0  # a task's rows stay whole chunks
    assert node_chunk_rows(10**6, 1 << 16, 8) == 1 << 16 and node_chunk_rows(0, 1 << 16, 4) == 1


def test_node_chunk_files_hold_only_the_rows(built):
    feats = built.path / "nodes" / "features" / "c" / "0" / "0"
    n, d = 600, 8
    assert feats.stat().st_size == n * d * 4


def test_a_disk_full_as_the_partial_store_is_begun_leaves_nothing(tmp_path, monkeypatch):
    """Issue 33, case 4: the partial directory stayed when the disk was full before its first array."""
    import errno

    import shgcn.store._writer as writer

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(writer.zarr, "open_group", full)
    with pytest.raises(writer.StoreError, match="no space left on the device"):
        with writer.StoreWriter(tmp_path / "s.zarr"):
            pass
    assert list(tmp_path.iterdir()) == []


def test_a_link_as_the_store_is_described_as_a_link(tmp_path):
    from shgcn.store._writer import StoreError, StoreWriter

    (tmp_path / "notes.txt").write_text("mine")
    (tmp_path / "s.zarr").symlink_to(tmp_path / "notes.txt")
    with pytest.raises(StoreError, match=r"s.zarr: exists and is a link \(to .*notes.txt\); --overwrite"):
        StoreWriter(tmp_path / "s.zarr", overwrite=True).__enter__()
    (tmp_path / "f.zarr").write_text("mine")
    with pytest.raises(StoreError, match="f.zarr: exists and is a file, not a shgcn store"):
        StoreWriter(tmp_path / "f.zarr", overwrite=True).__enter__()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.zarr", "notes.txt", "s.zarr"]


def test_abort_all_says_whether_a_partial_store_was_there(tmp_path):
    """Ctrl-C removes the partial store; a write in flight may bring part of it back, and the caller removes it
    again until abort_all finds nothing."""
    from shgcn.store._arrays import ABORT

    try:
        w = store.StoreWriter(tmp_path / "a.zarr")
        with pytest.raises(KeyboardInterrupt):
            with w:
                assert store.abort_all() and not w.tmp.exists()
                assert not store.abort_all()
                (w.tmp / "graph").mkdir(parents=True)  # what a write in flight may leave
                assert store.abort_all() and not w.tmp.exists()
                assert not store.abort_all()
                raise KeyboardInterrupt
        assert list(tmp_path.iterdir()) == []
    finally:
        ABORT.clear()
