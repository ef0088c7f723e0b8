"""Checkpoints: a resumed run ends with the weights of an uninterrupted one."""

import numpy as np
import pytest
from helpers import one_line
from helpers.mpi import train


@pytest.fixture
def stores(mpi_stores):
    return mpi_stores


def test_resume_gives_same_final_weights(stores, tmp_path):
    path = stores["directed", 2]
    full, part = tmp_path / "full", tmp_path / "part"
    assert train(2, path, "--epochs", 12, "--checkpoint", full, "--checkpoint-every", 100).returncode == 0
    assert train(2, path, "--epochs", 7, "--checkpoint", part, "--checkpoint-every", 100).returncode == 0
    res = train(2, path, "--epochs", 12, "--checkpoint", part, "--checkpoint-every", 100, "--resume")
    assert res.returncode == 0, res.stderr
    with np.load(full / "checkpoint.npz") as a, np.load(part / "checkpoint.npz") as b:
        assert int(a["epoch"]) == int(b["epoch"]) == 11
        for k in a.files:
            np.testing.assert_array_equal(a[k], b[k])


def test_checkpoint_of_another_architecture_is_refused(stores, tmp_path):
    path = stores["undirected", 2]
    ck = tmp_path / "ck"
    assert train(2, path, "--arch", "sage", "--epochs", 2, "--checkpoint", ck).returncode == 0
    one_line(train(2, path, "--arch", "gat", "--epochs", 4, "--checkpoint", ck, "--resume", timeout=60),
             "holds a sage model, not gat")
    res = train(2, path, "--arch", "sage", "--epochs", 4, "--checkpoint", ck, "--resume")
    assert res.returncode == 0, res.stderr


def test_a_checkpoint_onto_a_full_disk_is_one_line_exit_2_and_leaves_nothing(stores, tmp_path):
    """Issue 51, case 7: exit 1 with ``OSError: [Errno 28]``, and ``.checkpoint.tmp-PID.npz`` stayed; the
    directory the first save made stays neither. A real full file system: a tmpfs of one page mounted in a mount
    namespace of the test's own."""
    import os
    import shutil
    import subprocess
    import sys

    from helpers.mpi import TRAIN

    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare to mount a small file system")
    full = tmp_path / "full"
    full.mkdir()
    mount = f"mount -t tmpfs -o size=4k none {full}"
    probe = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", mount],
                           capture_output=True, timeout=30)
    if probe.returncode != 0:
        pytest.skip(f"cannot mount in a new namespace here: {probe.stderr.decode()[:200]}")
    train_cmd = (f'"{sys.executable}" {TRAIN} {stores["undirected", 1]} --quiet --epochs 3 --checkpoint-every 1 '
                 f"--checkpoint {full}/ck")
    res = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                          f"{mount} && {{ {train_cmd}; }}; rc=$?; echo left:; ls -A {full}; exit $rc"],
                         capture_output=True, text=True, timeout=300)
    assert (res.returncode, res.stderr) == (2, f"shgcn-train: error: --checkpoint {full}/ck: cannot write "
                                               f"{full}/ck/checkpoint.npz (No space left on device); the last "
                                               "checkpoint written, if any, is kept\n")
    assert res.stdout.split("left:")[1].split() == []  # no .checkpoint.tmp-PID.npz, no empty ck/
