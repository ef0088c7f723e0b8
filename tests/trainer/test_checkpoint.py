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
