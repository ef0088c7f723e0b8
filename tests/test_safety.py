"""Never lose a user's data, never hang, never answer with a traceback
(issue 14): one test per case, with fault injection where needed."""

import gzip
import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from helpers import run_cli
from helpers.mpi import build_stores, mpirun, train

from shgcn import store

SBM = "sbm:n=300,classes=3,degree=6,features=4,seed=0"


def one_line(res, *fragments, code=2):
    """Exit ``code`` with one line on stderr naming every fragment, no traceback."""
    assert res.returncode == code, (res.returncode, res.stderr[-2000:])
    lines = [x for x in res.stderr.splitlines() if x.strip() and " INFO: " not in x and " WARNING: " not in x]
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr[-2000:]
    for f in fragments:
        assert f in lines[0], (f, lines[0])


def build_cli(*args, cwd=None, timeout=300):
    return run_cli("build", *args, cwd=cwd, timeout=timeout)


# ------------------------------------------------------------- 1. --overwrite

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


# ---------------------------------------------------------------- 2. the lock

def test_a_second_build_to_the_same_output_stops_at_once(tmp_path):
    out = tmp_path / "s.zarr"
    lock = tmp_path / ".s.zarr.lock"
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        lock.write_text(json.dumps({"pid": holder.pid, "host": os.uname().nodename}))
        # it does not wait for the holder (which sleeps for a minute): the command's timeout is shorter
        one_line(build_cli(SBM, "--parts", "2", "--model", "rp", "--out", str(out), timeout=45), "another build",
                 str(lock))
        assert not out.exists()
    finally:
        holder.kill()
        holder.wait()
    # the holder is dead: its lock is taken over, with a log line
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


# ---------------------------------------------------------- 3. commit windows

@pytest.mark.parametrize("stage", ["write", "partition"])
def test_ctrl_c_leaves_nothing_and_ends_within_seconds(tmp_path, stage):
    out = tmp_path / "s.zarr"
    src = "sbm:n=30000,classes=8,degree=12,features=4,seed=1"
    proc = subprocess.Popen([sys.executable, "-m", "shgcn.pipeline", "build", src, "--parts", "8", "--model", "hp",
                             "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    marker = "stage layout" if stage == "write" else "stage normalize"
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


# ------------------------------------------------------------- 4. checksums

@pytest.fixture(scope="module")
def stores(tmp_path_factory, client):
    return build_stores(tmp_path_factory.mktemp("safety"), client, parts=(2,))


def _copy(src: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(src, dst)
    return dst


def _attrs(path: Path) -> dict:
    return json.loads((path / "zarr.json").read_text())


def _set_attrs(path: Path, meta: dict) -> None:
    (path / "zarr.json").write_text(json.dumps(meta))


def test_corrupt_permutation_is_found_by_its_checksum(stores, tmp_path):
    s = _copy(stores["directed", 2], tmp_path / "c.zarr")
    chunk = s / "permutation" / "c" / "0"
    raw = bytearray(chunk.read_bytes())
    raw[3] ^= 0x7F
    chunk.write_bytes(bytes(raw))
    res = train(2, s, "--mode", "minibatch", "--sampler", "rw", "--epochs", "1", timeout=120)
    one_line(res, "permutation", "checksum mismatch")


def test_a_missing_checksum_is_one_line_on_every_rank(stores, tmp_path):
    s = _copy(stores["undirected", 2], tmp_path / "m.zarr")
    meta = _attrs(s)
    del meta["attributes"]["checksums"]["1"]
    _set_attrs(s, meta)
    res = train(2, s, "--epochs", "2", timeout=60)
    one_line(res, "no checksum recorded for rank 1")


# ------------------------------------------------------------------ 5. hangs

def test_a_bad_index_with_no_verify_is_an_error_not_a_crash_or_a_hang(stores, tmp_path):
    s = _copy(stores["undirected", 2], tmp_path / "b.zarr")
    chunk = s / "ranks" / "1" / "indices" / "c" / "0"
    idx = np.frombuffer(chunk.read_bytes(), "<i4").copy()
    idx[0] = 10**8
    chunk.write_bytes(idx.tobytes())
    res = train(2, s, "--epochs", "2", "--no-verify", timeout=60)
    one_line(res, "rank 1", "column index outside")
    chunk2 = s / "ranks" / "0" / "indptr" / "c" / "0"
    ptr = np.frombuffer(chunk2.read_bytes(), "<i8").copy()
    ptr[1] = -5
    chunk2.write_bytes(ptr.tobytes())
    res = train(2, s, "--epochs", "2", "--no-verify", timeout=60)
    assert res.returncode == 2 and "indptr is not a CSR row pointer" in res.stderr


def test_any_exception_in_setup_aborts_the_whole_job(stores, tmp_path, monkeypatch):
    # a KeyError-like failure on one rank only: the job ends, rank 0 does not wait forever
    code = ("import sys, shgcn.trainer.context as c; real = c.setup\n"
            "def bad(cfg, comm):\n    if comm.rank == 1: raise KeyError('boom')\n    return real(cfg, comm)\n"
            "c.setup = bad\nfrom shgcn.trainer.cli import main\n"
            f"sys.exit(main([{str(stores['undirected', 2])!r}, '--epochs', '2', '--quiet']))")
    t0 = time.time()
    res = subprocess.run([mpirun(), "-n", "2", sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert res.returncode != 0 and time.time() - t0 < 30
    assert "rank 1: KeyError: 'boom'" in res.stderr


# ---------------------------------------------------------- 6. non-finite values

@pytest.mark.parametrize("opt", [("--lr", "nan"), ("--lr", "inf"), ("--weight-decay", "nan"), ("--dropout", "nan")])
def test_non_finite_training_options_are_refused(stores, opt):
    one_line(train(1, stores["undirected", 2], *opt, use_mpirun=False), opt[0])


def test_non_finite_features_are_refused_at_build_with_row_and_column(tmp_path):
    x = np.ones((300, 4), np.float32)
    x[17, 2] = np.nan
    np.save(tmp_path / "x.npy", x)
    one_line(build_cli(SBM, "--parts", "2", "--model", "rp", "--features", str(tmp_path / "x.npy"),
                       "--out", str(tmp_path / "s.zarr")), "vertex 17, column 2")
    np.save(tmp_path / "s.npy", np.array([["a"] * 4] * 300))
    one_line(build_cli(SBM, "--parts", "2", "--model", "rp", "--features", str(tmp_path / "s.npy"),
                       "--out", str(tmp_path / "t.zarr")), "features must be numbers")


def test_a_loss_that_turns_non_finite_stops_training(stores):
    res = train(2, stores["undirected", 2], "--lr", "1e30", "--epochs", "50")
    assert res.returncode == 1 and "became" in res.stderr and "Traceback" not in res.stderr


# ---------------------------------------------------------- 7. bounded memory

def test_gzip_bomb_is_one_line_with_bounded_memory(tmp_path):
    bomb = tmp_path / "bomb.txt.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as f:
        block = b"\0" * (1 << 24)
        for _ in range(64):  # 1 GiB of zeros, about 1 MB compressed
            f.write(block)
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    res = build_cli(str(bomb), "--parts", "2", "--out", str(tmp_path / "s.zarr"))
    peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    one_line(res, str(bomb), "longer than")
    assert peak_mib < 1024 or before / 1024 >= 1024, peak_mib


def test_a_declared_size_that_cannot_fit_is_one_line(tmp_path):
    m = tmp_path / "huge.mtx"
    m.write_text("%%MatrixMarket matrix coordinate pattern general\n1000000000000 1000000000000 1\n1 2\n")
    one_line(build_cli(str(m), "--parts", "2", "--out", str(tmp_path / "a.zarr")), str(m), "declared size")
    z = tmp_path / "zero.mtx"
    z.write_text("%%MatrixMarket matrix coordinate pattern general\n0 0 0\n")
    one_line(build_cli(str(z), "--parts", "2", "--out", str(tmp_path / "b.zarr")), str(z), "at least one vertex")
    npz = tmp_path / "huge.npz"
    np.savez(npz, shape=np.array([10**12, 10**12]), format=np.array("csr"), data=np.ones(1),
             indices=np.zeros(1, np.int32), indptr=np.zeros(2, np.int64))
    one_line(build_cli(str(npz), "--parts", "2", "--out", str(tmp_path / "c.zarr")), str(npz), "declared size")


# --------------------------------------------- one line, exit 2, never a traceback

@pytest.mark.parametrize("args,fragment", [
    (["--eps", "inf"], "--eps inf"),
    (["--eps", "1e308"], "--eps 1e+308"),
    (["--split", "nan,0.2,0.2"], "--split nan"),
    (["--scheduler", "foo://bar"], "--scheduler 'foo://bar'"),
])
def test_bad_options_are_one_line(tmp_path, args, fragment):
    one_line(build_cli(SBM, "--parts", "2", "--out", str(tmp_path / "s.zarr"), *args), fragment)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("out", [".", ""])
def test_out_must_name_a_new_directory(tmp_path, out):
    one_line(build_cli(SBM, "--parts", "2", "--out", out, cwd=tmp_path), "--out")
    assert list(tmp_path.iterdir()) == []


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


def test_info_and_report_on_a_plain_file(tmp_path):
    f = tmp_path / "plain.txt"
    f.write_text("hello")
    one_line(run_cli("info", str(f)), str(f), "not a store")
    one_line(run_cli("report", str(f), "--out", str(tmp_path / "r.html")), str(f), "not a store")


def test_trainer_on_a_plain_file_under_mpirun_is_one_line(tmp_path):
    f = tmp_path / "plain.txt"
    f.write_text("hello")
    one_line(train(2, f, "--epochs", "1", timeout=60), str(f), "not a store")


def test_planetoid_with_unexpected_types_is_one_line(tmp_path):
    import pickle
    from collections import defaultdict

    d = tmp_path
    for ext, obj in {"x": np.zeros((1, 2)), "y": np.zeros((1, 2)), "tx": np.zeros((1, 2)), "ty": np.zeros((1, 2)),
                     "allx": np.zeros((2, 2)), "ally": np.zeros((2, 2)),
                     "graph": defaultdict(list, {"zero": [1], "one": [0]})}.items():
        (d / f"ind.bad.{ext}").write_bytes(pickle.dumps(obj, protocol=2))
    (d / "ind.bad.test.index").write_text("2\n")
    one_line(build_cli(str(d / "ind.bad.graph"), "--format", "planetoid", "--parts", "2",
                       "--out", str(tmp_path / "s.zarr")), "ind.bad")


def test_mtx_whose_entry_count_disagrees_is_one_line(tmp_path):
    m = tmp_path / "t.mtx"
    m.write_text("%%MatrixMarket matrix coordinate pattern general\n5 5 4\n1 2\n2 3\n")
    one_line(build_cli(str(m), "--parts", "2", "--out", str(tmp_path / "s.zarr")), str(m),
             "declares 4 entries but the file has 2")


def test_long_non_numeric_token_is_called_so(tmp_path):
    f = tmp_path / "e.txt"
    f.write_text("1 2\n3 notanintegeratallbutaverylongword\n")
    one_line(build_cli(str(f), "--parts", "2", "--out", str(tmp_path / "s.zarr")), f"{f}:2", "non-numeric token")


# ------------------------------------------------------------- silent misreads

def test_a_size_header_line_is_skipped_with_a_warning(tmp_path):
    edges = [(0, 1), (1, 2), (2, 3), (3, 0), (4, 1)]
    f = tmp_path / "enron.txt"
    f.write_text("5 10\n" + "".join(f"{u} {v}\n" for u, v in edges))
    res = build_cli(str(f), "--parts", "2", "--model", "rp", "--undirected", "--out", str(tmp_path / "a.zarr"))
    assert res.returncode == 0 and "is the file's size" in res.stderr
    s = store.open_store(tmp_path / "a.zarr")
    assert s.attrs["n"] == 5 and s.attrs["edges"] == 5
    res = build_cli(str(f), "--parts", "2", "--model", "rp", "--undirected", "--header", "no",
                    "--out", str(tmp_path / "b.zarr"))
    assert store.open_store(tmp_path / "b.zarr").attrs["n"] == 7  # ids 0..5 and 10: read as an edge when asked


def test_direction_is_said_and_a_one_way_list_is_flagged(tmp_path):
    f = tmp_path / "coauthors.txt"
    f.write_text("".join(f"{i} {i + 1}\n" for i in range(50)))
    res = build_cli(str(f), "--parts", "2", "--model", "rp", "--out", str(tmp_path / "a.zarr"))
    assert res.returncode == 0
    assert "as directed (the default for edge lists; --undirected changes it)" in res.stderr
    assert "no edge has its reverse" in res.stderr


# ------------------------------------------------------------------- resume

def test_resume_says_where_truncates_the_log_and_refuses_changed_options(stores, tmp_path):
    path = stores["undirected", 2]
    ck, log = tmp_path / "ck", tmp_path / "run.jsonl"
    one_line(train(2, path, "--epochs", "4", "--checkpoint", ck, "--resume", timeout=60), "no checkpoint")
    # a run that dies at epoch 5, after its checkpoint at epoch 2 (every 3 epochs): its log goes to epoch 4
    res = train(2, path, "--epochs", "8", "--checkpoint", ck, "--checkpoint-every", "3", "--fail-at", "0:5", log=log)
    assert res.returncode != 0
    from shgcn.store.runlog import read_run_log

    assert [e.epoch for e in read_run_log(log).epochs] == [0, 1, 2, 3, 4]
    res = subprocess.run([mpirun(), "-n", "2", sys.executable, str(Path(__file__).parents[1] / "trainer" / "train.py"),
                          str(path), "--epochs", "8", "--checkpoint", str(ck), "--checkpoint-every", "3", "--resume",
                          "--log", str(log)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0 and "resumed at epoch 3" in res.stdout, res.stderr
    run = read_run_log(log)
    assert [e.epoch for e in run.epochs] == list(range(8))  # epochs 3 and 4 once, one header
    assert log.read_text().count('"type": "header"') == 1
    one_line(train(2, path, "--epochs", "9", "--checkpoint", ck, "--resume", "--lr", "0.05", timeout=60),
             "lr 0.01 -> 0.05")
