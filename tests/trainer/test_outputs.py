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
