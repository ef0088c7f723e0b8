"""What the trainer indexes with (trainer/values.py), checked whatever --no-verify says: labels against the
store's classes, vertex ids against its rows, and a job with no labelled training vertex refused (issue 51)."""

import shutil
from types import SimpleNamespace

import numpy as np
import pytest
from helpers import one_line
from helpers.mpi import train

from shgcn.trainer.config import TrainError
from shgcn.trainer.values import check_block, check_room, no_training_vertex, train_count


def local(labels, gids=None, train=None, classes=3, n=10, verify=True):
    labels = np.asarray(labels)
    rows = labels.shape[0]
    data = SimpleNamespace(labels=labels, gids=np.arange(rows) if gids is None else np.asarray(gids),
                           train=np.ones(rows, bool) if train is None else np.asarray(train))
    return SimpleNamespace(s=SimpleNamespace(attrs={"classes": classes, "n": n}), data=data,
                           cfg=SimpleNamespace(store="s.zarr", verify=verify), block=SimpleNamespace(rank=1))


@pytest.mark.parametrize("kw,message", [
    ({"labels": [0, 2, 3]}, "s.zarr: rank 1's block: row 2 has label 3, outside 0..2 (-1: unlabelled) (a corrupt "
                            "block; without --no-verify its checksum would be checked)"),
    ({"labels": [0, -2, 1], "verify": True}, "s.zarr: rank 1's block: row 1 has label -2, outside 0..2 (-1: "
                                             "unlabelled) (a corrupt block)"),
    ({"labels": [99, 0]}, "s.zarr: rank 1's block: row 0 has label 99, outside 0..2 (-1: unlabelled) (a corrupt "
                          "block; without --no-verify its checksum would be checked)"),
    ({"labels": np.zeros((2, 4), bool)}, "s.zarr: rank 1's block: labels of shape (2, 4) for 3 classes (a corrupt "
                                         "block; without --no-verify its checksum would be checked)"),
    ({"labels": [0, 1], "gids": [3, 10]}, "s.zarr: rank 1's block: row 1 has vertex id 10, outside 0..9 (a corrupt "
                                          "block; without --no-verify its checksum would be checked)"),
    ({"labels": [0, 1], "gids": [-1, 2]}, "s.zarr: rank 1's block: row 0 has vertex id -1, outside 0..9 (a corrupt "
                                          "block; without --no-verify its checksum would be checked)")])
def test_an_index_out_of_range_is_one_line(kw, message):
    kw.setdefault("verify", False)
    with pytest.raises(TrainError) as e:
        check_block(local(**kw))
    assert str(e.value) == message


def test_values_in_range_pass_and_the_training_rows_are_counted():
    check_block(local([-1, 0, 2], gids=[0, 9, 5]))  # -1: unlabelled
    check_block(local(np.zeros((2, 3), bool)))  # multi-label: a flag per class
    assert train_count(local([0, 1, 2], train=[True, False, True])) == 2
    assert train_count(local([0, 1], train=[False, False])) == 0


@pytest.fixture
def stores(mpi_stores):
    return mpi_stores


def _raw(chunk, dtype, change):
    a = np.frombuffer(chunk.read_bytes(), dtype).copy()
    change(a)
    chunk.write_bytes(a.tobytes())


@pytest.mark.mpi
def test_a_label_rewritten_beyond_the_classes_stops_the_job_with_no_verify(stores, tmp_path):
    s = shutil.copytree(stores["undirected", 2], tmp_path / "l.zarr")
    _raw(s / "ranks" / "1" / "labels" / "c" / "0", "<i4", lambda a: a.__setitem__(0, 99))
    res = train(2, s, "--epochs", "2", "--no-verify", timeout=120)
    one_line(res, f"shgcn-train: error (rank 1): {s}: rank 1's block: row 0 has label 99, outside 0..3 (-1: "
                  "unlabelled) (a corrupt block; without --no-verify its checksum would be checked)")


def test_no_labelled_training_vertex_is_refused_at_train(stores, tmp_path):
    s = shutil.copytree(stores["undirected", 1], tmp_path / "t.zarr")
    _raw(s / "ranks" / "0" / "train_mask" / "c" / "0", "?", lambda a: a.fill(False))
    res = train(1, s, "--epochs", "2", "--no-verify", use_mpirun=False, timeout=120)
    assert (res.returncode, res.stderr) == (2, f"shgcn-train: error: {no_training_vertex(str(s))}\n")
    assert no_training_vertex("x") == ("x: no labelled training vertex on any rank (the train mask is empty, or none "
                                       "of its vertices has a label): nothing to train on")


def test_the_model_and_a_ranks_activations_are_checked_before_either_is_made():
    """Issue 51, case 8: ``--hidden 100000000`` on a 200-vertex store passed the model's own check (11 GB of
    weights, gradients and Adam state under 18 GB available), drew its 2.8 GB of weights for minutes, then was
    refused by the algorithm's check for 308 GiB. The fewest rows a rank holds (a part's) bound it first."""
    from shgcn.core.memory import Held, model_bytes, rank_bytes
    from shgcn.trainer.config import TrainConfig

    cfg = TrainConfig(store="s", hidden=(100_000_000,), memory_limit=20 * 2**30)
    job = cfg.job(4, 3)
    assert model_bytes(job) < cfg.memory_limit  # the model alone fits
    with pytest.raises(TrainError) as e:
        check_room(cfg, job, np.array([0, 200, 450]))
    assert str(e.value) == ("--hidden 100000000: the model's weights, gradients and Adam state and the activations of "
                            "a rank's 200 rows need at least 308.5 GiB on every rank (layers 4 -> 100000000 -> 3), "
                            "more than the memory limit of 20.0 GiB (--memory-limit; default: the memory available "
                            "when the run starts)")
    small = TrainConfig(store="s", hidden=(16,), memory_limit=model_bytes(cfg.job(4, 3)))
    check_room(small, small.job(4, 3), np.array([0, 200, 450]))  # a usual job: nothing said
    tight = model_bytes(small.job(4, 3)) + int(rank_bytes(Held(200, 0, 0), small.job(4, 3)))
    check_room(TrainConfig(store="s", hidden=(16,), memory_limit=tight), small.job(4, 3), np.array([0, 200, 450]))
    with pytest.raises(TrainError):
        check_room(TrainConfig(store="s", hidden=(16,), memory_limit=tight - 1), small.job(4, 3), [0, 200, 450])


def test_a_model_too_large_by_its_heads_names_the_heads():
    from shgcn.trainer.config import TrainConfig

    cfg = TrainConfig(store="s", arch="gat", hidden=(16,), options={"heads": 10_000_000}, memory_limit=2**30)
    with pytest.raises(TrainError, match=r"^--hidden 16, --heads 10000000: the model's weights"):
        check_room(cfg, cfg.job(4, 3), np.array([0, 200, 450]))
