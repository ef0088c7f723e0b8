"""The partition stage (pipeline/stages/partition.py): every model after the ones it starts from, its inputs
handed to the task by name, imported assignments checked."""

from dataclasses import replace

import numpy as np
import pytest

from shgcn.pipeline.errors import UserError
from shgcn.pipeline.models import Inputs, PartitionConfig, PartitionResult
from shgcn.pipeline.models.rp import random_partition
from shgcn.pipeline.stages import partition
from shgcn.pipeline.stages.partition import PendingInputs, partition_stage


def test_pending_inputs_hand_their_fields_over_by_name():
    p = PendingInputs(5, a="A", starts={"gp": "future"}, weights="W")
    assert p.by_name() == {"n": 5, "a": "A", "graph": None, "starts": {"gp": "future"}, "seconds": {},
                           "weights": "W", "graph_file": None}
    assert list(p.by_name()) == [f for f in Inputs.__dataclass_fields__]  # exactly the model's Inputs


def test_the_task_gives_the_model_the_parts_of_its_starts():
    start = PartitionResult("gp", np.array([1, 0, 1, 0], np.int32), 0.1)
    res = partition._partition("rp", PendingInputs(4, starts={"gp": start}).by_name(), PartitionConfig(parts=2), "")
    assert res.model == "rp" and res.part.tolist() == random_partition(4, 2, 0).tolist()


def test_every_model_and_an_imported_one(fig2, tmp_path):
    f = tmp_path / "mine.txt"
    f.write_text("2\n1\n0\n2\n1\n0\n")
    cfg = replace(fig2.cfg, partition_files=(str(f),))
    out = partition_stage(fig2.tasks, cfg, fig2.ing, fig2.nrm, fig2.mon, fig2.work)
    assert list(out.results) == list(out.futures) == ["rp", "gp", "mine"]
    assert out.results["rp"].part.tolist() == random_partition(6, 3, cfg.seed).tolist()
    assert out.results["mine"].part.tolist() == [2, 1, 0, 2, 1, 0] and out.results["mine"].info == {"file": str(f)}
    assert sorted(np.bincount(out.results["gp"].part, minlength=3).tolist()) == [2, 2, 2]  # 6 rows, 3 parts


@pytest.mark.parametrize("text, message", [
    (None, "file not found"),
    ("0\n1\n", "2 entries for a graph of 3 vertices"),
    ("0\n1\n3\n", "part ids must be integers in 0..2 (--parts 3)"),
    ("0\nx\n1\n", "expected one part id per line"),
    ("0,1\n1,1\n1,0\n", "expected exactly one integer per line"),
])
def test_a_bad_partition_file_is_one_line(tmp_path, text, message):
    f = tmp_path / "p.txt"
    if text is not None:
        f.write_text(text)
    with pytest.raises(UserError) as e:
        partition._imported("p", str(f), 3, 3)
    assert str(e.value).startswith(f"--partition-file {f}: ") and message in str(e.value)


def test_a_npy_partition_file(tmp_path):
    np.save(tmp_path / "p.npy", np.array([1, 0, 1]))
    assert partition._imported("p", str(tmp_path / "p.npy"), 3, 2).part.tolist() == [1, 0, 1]
    (tmp_path / "bad.npy").write_bytes(b"not numpy")
    with pytest.raises(UserError, match="not a .npy array"):
        partition._imported("p", str(tmp_path / "bad.npy"), 3, 2)
