"""The trainer on stores it must refuse or that fail under it (issue 14): one
line, exit 2 for the user's errors, no hang, no traceback."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import REPO, one_line
from helpers.mpi import mpirun, train


@pytest.fixture
def stores(mpi_stores):
    return mpi_stores


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
    code = ("import sys, shgcn.trainer.context as c; real = c.prepare\n"
            "def bad(cfg, comm):\n    if comm.rank == 1: raise KeyError('boom')\n    return real(cfg, comm)\n"
            "c.prepare = bad\nfrom shgcn.trainer.cli import main\n"
            f"sys.exit(main([{str(stores['undirected', 2])!r}, '--epochs', '2', '--quiet']))")
    # the timeout is the hang guard: rank 0 must not wait for ever
    res = subprocess.run([mpirun(), "-n", "2", sys.executable, "-c", code], capture_output=True, text=True, timeout=90)
    assert res.returncode != 0
    assert "rank 1: KeyError: 'boom'" in res.stderr


@pytest.mark.parametrize("opt", [("--lr", "nan"), ("--lr", "inf"), ("--weight-decay", "nan"), ("--dropout", "nan")])
def test_non_finite_training_options_are_refused(stores, opt):
    one_line(train(1, stores["undirected", 2], *opt, use_mpirun=False), opt[0])


def test_a_loss_that_turns_non_finite_stops_training(stores):
    res = train(2, stores["undirected", 2], "--lr", "1e30", "--epochs", "50")
    assert res.returncode == 1 and "became" in res.stderr and "Traceback" not in res.stderr


def test_trainer_on_a_plain_file_under_mpirun_is_one_line(tmp_path):
    f = tmp_path / "plain.txt"
    f.write_text("hello")
    one_line(train(2, f, "--epochs", "1", timeout=60), str(f), "not a store")


def test_resume_says_where_truncates_the_log_and_refuses_changed_options(stores, tmp_path):
    path = stores["undirected", 2]
    ck, log = tmp_path / "ck", tmp_path / "run.jsonl"
    one_line(train(2, path, "--epochs", "4", "--checkpoint", ck, "--resume", timeout=60), "no checkpoint")
    # a run that dies at epoch 5, after its checkpoint at epoch 2 (every 3 epochs): its log goes to epoch 4
    res = train(2, path, "--epochs", "8", "--checkpoint", ck, "--checkpoint-every", "3", "--fail-at", "0:5", log=log)
    assert res.returncode != 0
    from shgcn.core.runlog import read_run_log

    assert [e.epoch for e in read_run_log(log).epochs] == [0, 1, 2, 3, 4]
    res = subprocess.run([mpirun(), "-n", "2", sys.executable, str(REPO / "trainer" / "train.py"),
                          str(path), "--epochs", "8", "--checkpoint", str(ck), "--checkpoint-every", "3", "--resume",
                          "--log", str(log)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0 and "resumed at epoch 3" in res.stdout, res.stderr
    run = read_run_log(log)
    assert [e.epoch for e in run.epochs] == list(range(8))  # epochs 3 and 4 once, one header
    assert log.read_text().count('"type": "header"') == 1
    one_line(train(2, path, "--epochs", "9", "--checkpoint", ck, "--resume", "--lr", "0.05", timeout=60),
             "lr 0.01 -> 0.05")


@pytest.mark.parametrize("options,kernels", [({}, "numba"), ({"torch_kernels": "torch", "torch_compile": "off"}, "torch")])
def test_a_backends_own_options_reach_the_backend_the_rank_computes_with(stores, options, kernels):
    """--torch-kernels is the torch backend's declared option: the rank's backend is made with it."""
    pytest.importorskip("torch")
    from mpi4py import MPI

    from shgcn.trainer.config import TrainConfig
    from shgcn.trainer.context import prepare

    cfg = TrainConfig(store=str(stores["undirected", 1]), backend="torch", threads=1, options=options)
    assert prepare(cfg, MPI.COMM_SELF).backend.kernels == kernels
