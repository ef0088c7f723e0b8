"""What the trainer writes, checked before any work (trainer/outputs.py): a run log and a checkpoint are
recognized as the trainer's own; anything else is never replaced (the faults suite covers the commands)."""

import numpy as np
import pytest

from shgcn.trainer.config import TrainConfig, TrainError
from shgcn.trainer.outputs import check_outputs, is_checkpoint, is_run_log


def test_what_counts_as_the_trainers_own(tmp_path):
    log = tmp_path / "run.jsonl"
    log.write_text('{"type": "header"}\n')
    other = tmp_path / "notes.txt"
    other.write_text("mine\n")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert is_run_log(log) and not is_run_log(other) and is_run_log(empty)
    ck = tmp_path / "checkpoint.npz"
    np.savez(ck, epoch=np.array(1), identity=np.array("{}"), w0=np.zeros(2))
    assert is_checkpoint(ck) and not is_checkpoint(other)


def test_an_existing_log_needs_resume_or_overwrite(tmp_path):
    log = tmp_path / "run.jsonl"
    log.write_text('{"type": "header"}\n')
    with pytest.raises(TrainError, match="already exists"):
        check_outputs(TrainConfig(store="s", log=str(log)), 0)
    check_outputs(TrainConfig(store="s", log=str(log), overwrite=True), 0)
    check_outputs(TrainConfig(store="s", log=str(log)), 1)  # only rank 0 writes
    with pytest.raises(TrainError, match="does not exist"):
        check_outputs(TrainConfig(store="s", log=str(tmp_path / "no" / "run.jsonl")), 0)


def test_a_fifo_is_neither_a_run_log_nor_a_checkpoint(tmp_path):
    """Issue 33: --log and --checkpoint with --overwrite or --resume read a FIFO there, and waited forever."""
    import os

    os.mkfifo(tmp_path / "f")
    assert not is_run_log(tmp_path / "f") and not is_checkpoint(tmp_path / "f")


@pytest.mark.parametrize("kw,message", [
    ({"log": "a" * 300}, "--log: a name of 300 bytes in the path; at most 223 (the trainer writes a sibling named "
                         "after it first)"),
    ({"log": "a" * 224}, "--log: a name of 224 bytes in the path; at most 223 (the trainer writes a sibling named "
                         "after it first)"),
    ({"checkpoint": "d" * 300 + "/ck"}, "--checkpoint: a name of 300 bytes in the path; at most 255"),
    ({"checkpoint": "/" + "/".join(["d" * 200] * 21)}, "--checkpoint: a path of 4221 bytes; at most 4032")])
def test_names_the_filesystem_cannot_hold_are_one_line(tmp_path, monkeypatch, kw, message):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(TrainError) as e:
        check_outputs(TrainConfig(store="s", **kw), 0)
    assert str(e.value) == message
    check_outputs(TrainConfig(store="s", log="a" * 223, checkpoint="d" * 255), 0)  # the longest names pass
    assert list(tmp_path.iterdir()) == []


def test_a_300_byte_log_name_is_exit_2_and_one_line(tmp_path):
    import subprocess
    import sys

    from helpers.mpi import TRAIN

    res = subprocess.run([sys.executable, str(TRAIN), str(tmp_path / "nope.zarr"), "--quiet", "--log",
                          str(tmp_path / ("a" * 300))], capture_output=True, text=True, timeout=120)
    assert (res.returncode, res.stderr) == (2, "shgcn-train: error: --log: a name of 300 bytes in the path; at most "
                                               "223 (the trainer writes a sibling named after it first)\n")


def test_a_full_disk_under_the_checkpoint_leaves_the_last_one_and_nothing_else(tmp_path, monkeypatch):
    import errno
    import os
    from types import SimpleNamespace

    from shgcn.trainer import checkpoint

    cfg = TrainConfig(store="s", checkpoint=str(tmp_path / "ck"))
    model = SimpleNamespace(params=[np.arange(4, dtype=np.float32)])
    opt = SimpleNamespace(be=SimpleNamespace(to_host=lambda w: w), state=lambda: {"t": np.array(1)})
    checkpoint.save(cfg, 3, model, opt, {"store": "x"})  # the last whole checkpoint
    before = (tmp_path / "ck" / "checkpoint.npz").read_bytes()
    real = np.savez

    def full(file, **arrays):
        real(file, **arrays)
        with open(file, "r+b") as f:
            f.truncate(100)  # half-written
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(checkpoint.np, "savez", full)
    with pytest.raises(TrainError) as e:
        checkpoint.save(cfg, 4, model, opt, {"store": "x"})
    assert str(e.value) == (f"--checkpoint {tmp_path / 'ck'}: cannot write {tmp_path / 'ck' / 'checkpoint.npz'} (No "
                            "space left on device); the last checkpoint written, if any, is kept")
    assert os.listdir(tmp_path / "ck") == ["checkpoint.npz"]
    assert (tmp_path / "ck" / "checkpoint.npz").read_bytes() == before
