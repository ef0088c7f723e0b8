"""The fuzz and fault suite, the trainer (issue 24, cases 7 and 11): what it
writes is checked before any work and never replaces what it did not write;
a rank stopped with SIGSTOP ends the job with one line naming it, and
``--resume`` continues bit-exactly afterwards."""

import subprocess
import sys
import time

import pytest
from helpers.faults import alive, environ_of, obeying_file_modes, processes
from helpers.mpi import TRAIN, mpirun, read_log, train

from shgcn.core.runlog import read_run_log


@pytest.fixture
def p2(mpi_stores):
    return mpi_stores["undirected", 2]


@pytest.fixture
def p1(mpi_stores):
    return mpi_stores["undirected", 1]


def errors(res) -> list[str]:
    return [x for x in res.stderr.splitlines() if x.startswith("shgcn-train: error")]


def test_an_existing_log_is_never_overwritten_unless_told(p1, tmp_path):
    """Case 7: --log FILE replaced an existing file."""
    log = tmp_path / "run.jsonl"
    assert train(1, p1, "--epochs", 2, log=log, use_mpirun=False).returncode == 0
    first = log.read_text()
    res = train(1, p1, "--epochs", 3, log=log, use_mpirun=False)
    assert res.returncode == 2 and len(errors(res)) == 1 and "already exists" in errors(res)[0], res.stderr
    assert "--overwrite" in errors(res)[0] and log.read_text() == first
    res = train(1, p1, "--epochs", 3, "--overwrite", log=log, use_mpirun=False)
    assert res.returncode == 0 and len(read_log(log)[1]) == 3
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    res = train(1, p1, "--epochs", 1, "--overwrite", log=notes, use_mpirun=False)
    assert res.returncode == 2 and "not a run log" in res.stderr and notes.read_text() == "my notes\n"


@pytest.mark.parametrize("where", ["missing", "file"])
def test_a_log_or_checkpoint_that_cannot_be_written_fails_before_training(p2, tmp_path, where):
    """Case 7: a --log or --checkpoint in a missing directory failed after training had started (exit 1, the
    name of a temporary file)."""
    parent = tmp_path / "nowhere" if where == "missing" else tmp_path / "a-file"
    if where == "file":
        parent.write_text("x")
    res = train(2, p2, "--epochs", 3, log=parent / "run.jsonl", timeout=120)
    assert res.returncode == 2 and len(errors(res)) == 1 and "--log" in errors(res)[0], res.stderr
    assert ".tmp" not in res.stderr
    res = train(2, p2, "--epochs", 3, "--checkpoint", parent / "sub" / "ck", timeout=120)
    if where == "file":
        assert res.returncode == 2 and len(errors(res)) == 1 and "--checkpoint" in errors(res)[0], res.stderr
        assert "is not a directory" in errors(res)[0]
    else:  # a checkpoint directory is made, with its parents, at the first save
        assert res.returncode == 0 and (parent / "sub" / "ck" / "checkpoint.npz").exists(), res.stderr


def test_a_read_only_directory_fails_before_training(p1, tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    cmd = obeying_file_modes([sys.executable, str(TRAIN), str(p1), "--epochs", "2", "--quiet", "--log",
                              str(ro / "run.jsonl")])
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert res.returncode == 2 and "cannot write into" in res.stderr and str(ro) in res.stderr, res.stderr
    cmd = obeying_file_modes([sys.executable, str(TRAIN), str(p1), "--epochs", "2", "--quiet", "--checkpoint",
                              str(ro / "ck")])
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert res.returncode == 2 and "cannot write into" in res.stderr, res.stderr
    assert list(ro.iterdir()) == []


def test_an_existing_checkpoint_is_kept_unless_resumed_or_overwritten(p1, tmp_path):
    ck = tmp_path / "ck"
    assert train(1, p1, "--epochs", 2, "--checkpoint", ck, use_mpirun=False).returncode == 0
    saved = (ck / "checkpoint.npz").read_bytes()
    res = train(1, p1, "--epochs", 4, "--checkpoint", ck, use_mpirun=False)
    assert res.returncode == 2 and "holds a checkpoint" in res.stderr and (ck / "checkpoint.npz").read_bytes() == saved
    assert train(1, p1, "--epochs", 4, "--checkpoint", ck, "--resume", use_mpirun=False).returncode == 0
    assert train(1, p1, "--epochs", 2, "--checkpoint", ck, "--overwrite", use_mpirun=False).returncode == 0


def _rank_pids(store) -> dict[int, int]:
    """rank -> pid of the trainer processes of the job on ``store``."""
    out = {}
    for pid, cmd in processes(str(store)).items():
        if "train.py" in cmd and "mpirun" not in cmd:
            rank = environ_of(pid).get("PMI_RANK")
            if rank is not None:
                out[int(rank)] = pid
    return out


@pytest.mark.slow  # quick-suite budget: CI runs it (-m '')
def test_a_stopped_rank_ends_the_job_with_one_line_and_resume_works(p2, tmp_path):
    """Case 11: a rank stopped with SIGSTOP left the others waiting forever.
    The watchdog (--timeout) ends every rank with one line naming it; the
    job resumes from its last checkpoint, bit-exact against an
    uninterrupted run."""
    log, ck = tmp_path / "run.jsonl", tmp_path / "ck"
    cmd = [mpirun(), "-n", "2", sys.executable, str(TRAIN), str(p2), "--quiet", "--epochs", "100000", "--timeout",
           "5", "--checkpoint", str(ck), "--checkpoint-every", "2", "--log", str(log)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stopped = None
    try:
        for _ in range(600):  # until a checkpoint exists and epochs run (a hang guard, not a measurement)
            if (ck / "checkpoint.npz").exists() and log.exists() and log.read_text().count('"epoch"') >= 4:
                break
            time.sleep(0.1)
        pids = _rank_pids(p2)
        assert set(pids) == {0, 1}, pids
        stopped = pids[1]
        subprocess.run(["kill", "-STOP", str(stopped)], check=True, timeout=10)
        _, err = proc.communicate(timeout=180)
        for _ in range(300):  # the launcher kills the stopped rank as it leaves (a hang guard, not a measurement)
            if not alive(stopped):
                break
            time.sleep(0.1)
        left = alive(stopped)
    finally:
        proc.kill()
        if stopped is not None and alive(stopped):  # a failed test cleans up after itself
            subprocess.run(["kill", "-KILL", str(stopped)], timeout=10)
    lines = [x for x in err.splitlines() if x.strip()]
    assert proc.returncode == 2 and len(lines) == 1 and lines[0].startswith("shgcn-train: error: "), err
    assert "rank 1 stopped answering" in lines[0] and "--timeout 5" in lines[0]
    assert not left  # the stopped rank is gone too, ended by the job
    # resume: the same epochs as an uninterrupted run, bit for bit
    done = read_run_log(log).epochs[-1].epoch
    epochs = done + 3
    res = train(2, p2, "--epochs", epochs, "--checkpoint", ck, "--checkpoint-every", 2, "--resume", log=log)
    assert res.returncode == 0, res.stderr
    ref = tmp_path / "ref.jsonl"
    assert train(2, p2, "--epochs", epochs, log=ref).returncode == 0
    assert [e.loss for e in read_run_log(log).epochs] == [e.loss for e in read_run_log(ref).epochs]


def test_a_bad_timeout_is_refused(p1):
    res = train(1, p1, "--timeout", "-1", use_mpirun=False)
    assert res.returncode == 2 and "--timeout -1" in res.stderr


def test_a_single_rank_job_has_no_watchdog_thread(p1, tmp_path):
    res = train(1, p1, "--epochs", 2, "--timeout", "0.001", use_mpirun=False)
    assert res.returncode == 0, res.stderr  # one rank: nothing to wait for, so nothing to time out



@pytest.mark.slow  # quick-suite budget: CI runs it (-m '')
def test_ctrl_c_in_training_is_one_line_and_exit_130(p2, tmp_path):
    """Issue 33, case 8: SIGINT in training ended with a bare ``rank 1: KeyboardInterrupt:`` and exit 1 (builds
    say "interrupted", exit 130)."""
    import signal

    log = tmp_path / "run.jsonl"
    cmd = [mpirun(), "-n", "2", sys.executable, str(TRAIN), str(p2), "--quiet", "--epochs", "100000", "--log",
           str(log)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(600):  # until epochs run (a hang guard, not a measurement)
            if log.exists() and log.read_text().count('"epoch"') >= 2:
                break
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)  # the launcher forwards it to every rank, as Ctrl-C in a terminal does
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    lines = [x for x in err.splitlines() if x.strip()]
    assert proc.returncode == 130 and len(lines) == 1, (proc.returncode, err)
    assert lines[0].startswith("shgcn-train: interrupted") and "Traceback" not in err


def test_a_model_too_big_for_memory_is_refused_before_allocating(p1):
    """Issue 33, case 3: --hidden 100000000 was killed by the OOM killer after 91 s (exit 9)."""
    res = train(1, p1, "--epochs", 1, "--hidden", 100000000, use_mpirun=False, timeout=120)
    assert res.returncode == 2 and len(errors(res)) == 1, res.stderr
    assert "--hidden 100000000: the model's weights" in errors(res)[0] and "memory limit" in errors(res)[0]


# every rank fails at the same moment of training, as with the 0-class store of issue 33
FAIL_EVERYWHERE = """
import sys
import shgcn.trainer.loop as loop

def fail(ctx, comm):
    raise ValueError("max() arg is an empty sequence")

loop.train = fail
from shgcn.trainer.cli import main
sys.exit(main())
"""


def test_ranks_failing_at_once_each_say_one_whole_line(p2):
    """Issue 33, case 6: two ranks' messages ran together on one line ("...empty sequenceshgcn-train: rank 0:
    ..."). The race is the launcher's; a few runs give it its chances."""
    for _ in range(3):
        res = subprocess.run([mpirun(), "-n", "2", sys.executable, "-c", FAIL_EVERYWHERE, str(p2), "--quiet",
                              "--epochs", "2"], capture_output=True, text=True, timeout=120)
        lines = [x for x in res.stderr.splitlines() if x.strip()]
        assert res.returncode == 1 and 1 <= len(lines) <= 2, res.stderr
        for line in lines:
            assert line.count("shgcn-train:") == 1, res.stderr
            assert line.endswith("ValueError: max() arg is an empty sequence"), res.stderr
