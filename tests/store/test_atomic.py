"""Never lose a user's data (issue 14): --overwrite replaces only a store, the
lock stops a second build, what appears at the output during a build is
kept, Ctrl-C leaves nothing, the commit is atomic, a read-only or full
disk is one line."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import build_cli, one_line

from shgcn import store

SBM = "sbm:n=300,classes=3,degree=6,features=4,seed=0"


def test_overwrite_never_deletes_what_is_not_a_store(tmp_path):
    mydata = tmp_path / "mydata"
    (mydata / "sub").mkdir(parents=True)
    (mydata / "thesis.tex").write_text("precious")
    one_line(build_cli(SBM, "--parts", "2", "--model", "rp", "--out", str(mydata), "--overwrite"),
             str(mydata), "not a shgcn store")
    assert (mydata / "thesis.tex").read_text() == "precious"
    notes = tmp_path / "notes.txt"
    notes.write_text("mine")
    one_line(build_cli(SBM, "--parts", "2", "--model", "rp", "--out", str(notes), "--overwrite"), str(notes))
    assert notes.read_text() == "mine" and sorted(p.name for p in tmp_path.iterdir()) == ["mydata", "notes.txt"]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert build_cli(SBM, "--parts", "2", "--model", "rp", "--out", str(empty), "--overwrite").returncode == 0
    store.open_store(empty)


def test_a_second_build_to_the_same_output_stops_at_once(tmp_path):
    out = tmp_path / "s.zarr"
    lock = tmp_path / ".s.zarr.lock"
    # a holder of the kernel lock (filelock), which says who it is in the file, as a build does
    code = ("import json, os, time\nfrom filelock import FileLock\n"
            f"held = FileLock({str(lock)!r}, timeout=0)\nheld.acquire()\n"
            f"open({str(lock)!r}, 'w').write(json.dumps({{'pid': os.getpid(), 'host': os.uname().nodename}}))\n"
            "print('HELD', flush=True)\ntime.sleep(60)\n")
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "HELD"
        # it does not wait for the holder (which sleeps for a minute): the command's timeout is shorter
        one_line(build_cli(SBM, "--parts", "2", "--model", "rp", "--out", str(out), timeout=45), "another build",
                 str(lock), f"pid {holder.pid}")
        assert not out.exists()
    finally:
        holder.kill()
        holder.wait(timeout=60)
    # the holder is dead, and the kernel released its lock: the file it left is taken over, with a log line
    res = build_cli(SBM, "--parts", "2", "--model", "rp", "--out", str(out))
    assert res.returncode == 0 and "taking over the lock" in res.stderr and not lock.exists()


def test_what_appears_at_the_output_during_a_build_is_kept(tmp_path, client, monkeypatch):
    import shgcn.pipeline.builder as pb
    from shgcn.pipeline.config import BuildConfig

    out = tmp_path / "s.zarr"
    real = pb.layout_stage

    def intruder(*args, **kw):
        out.mkdir()
        (out / "mine.txt").write_text("not yours")
        return real(*args, **kw)

    monkeypatch.setattr(pb, "layout_stage", intruder)
    with pytest.raises(store.StoreError, match="something else appeared there during the build"):
        pb.build(BuildConfig(source=SBM, out=str(out), parts=2, models=("rp",)), client, echo=lambda *a: None)
    assert (out / "mine.txt").read_text() == "not yours"
    kept = [p for p in tmp_path.iterdir() if p.name.startswith("s.zarr.new-")]
    assert len(kept) == 1 and store.open_store(kept[0]).parts == 2


@pytest.mark.parametrize("stage", ["write", "partition"])
def test_ctrl_c_leaves_nothing_and_ends_within_seconds(tmp_path, stage):
    out = tmp_path / "s.zarr"
    src = f"sbm:n={30000 if stage == 'partition' else 3000},classes=8,degree=12,features=4,seed=1"
    # write: a rank's write that takes a minute (so that Ctrl-C lands in it); partition: Mt-KaHyPar's
    # deterministic preset, which runs for seconds in its child
    script = ("import sys, time\nfrom shgcn import store\nreal = store.RankFiles.checksum\n"
              "def slow(self, transpose):\n    print('WRITING', file=sys.stderr, flush=True)\n    time.sleep(60)\n"
              "    return real(self, transpose)\nstore.RankFiles.checksum = slow\n" if stage == "write" else "import sys\n")
    # the write case needs no partitioner that takes long: rp reaches the write at once
    model = "'rp'" if stage == "write" else "'hp', '--hp-preset', 'mtkahypar-deterministic'"
    script += ("from shgcn.pipeline.cli import main\n"
               f"sys.exit(main(['build', {src!r}, '--parts', '8', '--model', {model}, '--out', {str(out)!r}]))")
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    marker = "WRITING" if stage == "write" else "stage normalize"
    assert proc.stderr is not None
    for line in proc.stderr:
        if marker in line:
            break
    if stage == "partition":
        time.sleep(1.0)  # Mt-KaHyPar is running in its child
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=60)  # a hang guard, not a measurement: the machine may be busy
    assert proc.returncode == 130
    time.sleep(0.5)
    assert list(tmp_path.iterdir()) == []  # no store, no partial, no lock
    kids = [p for p in Path("/proc").glob("[0-9]*") if _cmdline(p).find(str(tmp_path)) >= 0]
    assert kids == []  # the partitioner child is gone too


def _cmdline(p: Path) -> str:
    try:
        return (p / "cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""


def test_commit_swaps_atomically_and_the_old_store_goes(tmp_path, client):
    from shgcn.pipeline.builder import build
    from shgcn.pipeline.config import BuildConfig

    out = tmp_path / "s.zarr"
    build(BuildConfig(source=SBM, out=str(out), parts=2, models=("rp",)), client, echo=lambda *a: None)
    build(BuildConfig(source=SBM, out=str(out), parts=3, models=("rp",), overwrite=True), client, echo=lambda *a: None)
    assert store.open_store(out).parts == 3 and [p.name for p in tmp_path.iterdir()] == ["s.zarr"]


def test_read_only_output_is_one_line_before_the_work(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        if os.access(ro, os.W_OK):
            pytest.skip("running as a user that can write anywhere (root)")
        one_line(build_cli(SBM, "--parts", "2", "--out", str(ro / "s.zarr")), str(ro))
    finally:
        ro.chmod(0o755)


def test_no_space_left_during_the_write_is_one_line_and_leaves_nothing(tmp_path, monkeypatch):
    import errno

    code = ("import errno, sys, zarr.storage._local as L\nreal = L.LocalStore.set\n"
            "async def full(self, key, value):\n"
            "    if '/ranks/' in str(self.root / key) or key.startswith('ranks/'):\n"
            f"        raise OSError({errno.ENOSPC}, 'No space left on device')\n"
            "    return await real(self, key, value)\n"
            "L.LocalStore.set = full\nfrom shgcn.pipeline.cli import main\n"
            f"sys.exit(main(['build', {SBM!r}, '--parts', '2', '--model', 'rp', '--out', {str(tmp_path / 's.zarr')!r}]))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    one_line(res, "no space left")
    assert list(tmp_path.iterdir()) == []
