"""Checkpoints (trainer/torchdist/checkpoint.py): a resumed model and optimizer take the steps of the run that
was not stopped; the write is atomic; a checkpoint of another graph, a missing or foreign file are one line;
the graph's identity is the same at every P; the example's --checkpoint/--resume gives the uninterrupted run's
losses, in one process and (mpirun) resumed at another P."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from helpers import REPO  # noqa: E402
from helpers.mpi import mpirun  # noqa: E402

from shgcn.core.errors import UserError  # noqa: E402
from shgcn.trainer.torchdist import CheckpointError, graph_identity, load_checkpoint, save_checkpoint  # noqa: E402

EXAMPLE = REPO / "examples" / "torch_pyg.py"


def setup(seed):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    return model, torch.optim.Adam(model.parameters(), lr=0.05)


def steps(model, opt, count):
    x = torch.linspace(-1, 1, 40).reshape(10, 4)
    y = torch.tensor([0, 1] * 5)
    out = []
    for _ in range(count):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        out.append(loss.item())
    return out


def test_a_resumed_run_takes_the_same_steps(tmp_path):
    model, opt = setup(0)
    first = steps(model, opt, 3)
    save_checkpoint(tmp_path / "ck.pt", model, opt, 3, extra={"note": "three"})
    straight = steps(model, opt, 4)
    other, other_opt = setup(1)  # other weights, a fresh optimizer
    assert load_checkpoint(tmp_path / "ck.pt", other, other_opt) == {"epoch": 3, "extra": {"note": "three"}}
    assert steps(other, other_opt, 4) == straight
    assert first[-1] > straight[-1]  # it trains
    assert sorted(os.listdir(tmp_path)) == ["ck.pt"]  # no temporary file left


def test_a_failed_write_keeps_the_previous_checkpoint(tmp_path, monkeypatch):
    model, opt = setup(0)
    save_checkpoint(tmp_path / "ck.pt", model, opt, 1)

    def full(*a, **k):
        raise OSError("No space left on device")

    monkeypatch.setattr(torch, "save", full)
    with pytest.raises(UserError) as e:  # rank 0's own one line, naming the file (td.run_main: exit 2)
        save_checkpoint(tmp_path / "ck.pt", model, opt, 2)
    assert str(e.value) == (f"{tmp_path / 'ck.pt'}: cannot write the checkpoint (No space left on device); the last "
                            "one written, if any, is kept")
    assert sorted(os.listdir(tmp_path)) == ["ck.pt"]
    assert load_checkpoint(tmp_path / "ck.pt", model, opt)["epoch"] == 1


def test_torchs_full_disk_error_names_the_file(tmp_path, monkeypatch):
    """torch's own writer reports a full disk as a RuntimeError: still the one line naming the file."""
    model, opt = setup(0)

    def full(*a, **k):
        raise RuntimeError("[enforce fail at inline_container.cc:603] . PytorchStreamWriter failed writing file "
                           "data/0: file write failed")

    monkeypatch.setattr(torch, "save", full)
    with pytest.raises(UserError, match=r"ck\.pt: cannot write the checkpoint \(.*file write failed\)") as e:
        save_checkpoint(tmp_path / "ck.pt", model, opt, 2)
    assert "\n" not in str(e.value) and os.listdir(tmp_path) == []


def test_extra_is_what_load_reads_back(tmp_path):
    """numpy scalars in ``extra`` are saved as Python numbers (load used to refuse the file); what load cannot
    read back, and a folder as the checkpoint's path, are refused in one line before anything is written."""
    model, opt = setup(0)
    save_checkpoint(tmp_path / "ck.pt", model, opt, 1, extra={"best": np.float64(0.5), "ks": (np.int32(3), "a")})
    assert load_checkpoint(tmp_path / "ck.pt", model, opt)["extra"] == {"best": 0.5, "ks": [3, "a"]}
    for extra, match in (({"f": open}, r"extra\['f'\] is a builtin_function_or_method"),
                         ({1: 2}, "key 1 that is not a string")):
        with pytest.raises(UserError, match=match):
            save_checkpoint(tmp_path / "bad.pt", model, opt, 1, extra=extra)
    with pytest.raises(UserError, match="is a folder; give the checkpoint's file name"):
        save_checkpoint(tmp_path, model, opt, 1)
    assert sorted(os.listdir(tmp_path)) == ["ck.pt"]


def test_unusable_checkpoints_are_one_line(tmp_path):
    model, opt = setup(0)
    cases = []
    with pytest.raises(CheckpointError) as e:
        load_checkpoint(tmp_path / "none.pt", model)
    cases.append(str(e.value))
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    torch.save({"weights": 1}, tmp_path / "foreign.pt")
    save_checkpoint(tmp_path / "no-opt.pt", model)
    small = torch.nn.Linear(4, 2)
    for name, m, o in (("junk.pt", model, None), ("foreign.pt", model, None), ("no-opt.pt", model, opt),
                       ("no-opt.pt", small, None)):
        with pytest.raises(CheckpointError) as e:
            load_checkpoint(tmp_path / name, m, o)
        cases.append(str(e.value).replace(str(tmp_path), "T"))
    assert cases[0] == f"{tmp_path}/none.pt: no checkpoint there"
    assert cases[1:4] == ["T/junk.pt: not a readable checkpoint (UnpicklingError)",
                          "T/foreign.pt: not a torchdist checkpoint (format shgcn-torchdist-checkpoint/1)",
                          "T/no-opt.pt: holds no optimizer state to resume"]
    assert cases[4].startswith("T/no-opt.pt: does not fit this model or optimizer (Error(s) in loading state_dict")
    assert all("\n" not in c for c in cases)


@pytest.fixture(scope="module")
def stores(tmp_path_factory, client):
    """The small SBM at P = 1 and 2, and another graph."""
    from helpers.stores import SBM, make_in

    root = tmp_path_factory.mktemp("identity")
    return {"p1": make_in(root, client, "p1.zarr", parts=1, models=("rp",)).path,
            "p2": make_in(root, client, "p2.zarr", parts=2, models=("rp",)).path,
            "other": make_in(root, client, "other.zarr", source=SBM, parts=1, models=("rp",)).path}


def test_the_identity_is_the_graphs_not_the_partitions(stores, built, tmp_path):
    ids = {k: graph_identity(v) for k, v in stores.items()}
    assert ids["p1"] == ids["p2"] == graph_identity(built.path) != ids["other"]
    assert len(ids["p1"]) == 64
    model, opt = setup(0)
    save_checkpoint(tmp_path / "ck.pt", model, opt, 2, store_path=stores["p2"])
    assert load_checkpoint(tmp_path / "ck.pt", model, opt, store_path=built.path)["epoch"] == 2
    with pytest.raises(CheckpointError) as e:
        load_checkpoint(tmp_path / "ck.pt", model, opt, store_path=stores["other"])
    assert str(e.value) == f"{tmp_path}/ck.pt: saved for another graph than the store {stores['other']}'s"


def test_a_checkpoint_keeps_the_loaders_position(stores, tmp_path):
    """``td.save`` / ``td.load`` with ``loader=``: the position mid-epoch comes back (at another P too); a
    checkpoint without one, or of other batches, is one line."""
    from shgcn.trainer import torchdist as td

    model, opt = setup(0)
    kw = {"batch_size": 100, "sampler": "rw", "seed": 1}
    with td.MiniBatches(stores["p2"], rank=1, size=2, **kw) as loader:
        it = loader.epoch(3)
        next(it), next(it), next(it)
        td.save(tmp_path / "ck.pt", model, opt, 3, store_path=stores["p2"], loader=loader)
    save_checkpoint(tmp_path / "plain.pt", model, opt, 3)
    with td.MiniBatches(stores["p1"], **kw) as other:
        got = td.load(tmp_path / "ck.pt", model, opt, store_path=stores["p1"], loader=other)
        assert got == {"epoch": 3, "extra": {}, "position": (3, 3)} and next(iter(other)).key == 3 * other.steps + 3
        with pytest.raises(CheckpointError) as e:
            load_checkpoint(tmp_path / "plain.pt", model, opt, loader=other)
        assert str(e.value) == f"{tmp_path}/plain.pt: holds no mini-batch loader's position to resume"
    with td.MiniBatches(stores["p1"], **{**kw, "seed": 2}) as third, pytest.raises(CheckpointError) as e:
        load_checkpoint(tmp_path / "ck.pt", model, opt, loader=third)
    assert str(e.value) == f"{tmp_path}/ck.pt: MiniBatches: the saved position is of other batches: seed 1 (here 2)"


def run(store, log, *args, ranks=1):
    cmd = [sys.executable, str(EXAMPLE), str(store), "--arch", "sage", "--log-file", str(log), *args]
    res = subprocess.run([mpirun(), "-n", str(ranks), *cmd] if ranks > 1 else cmd, capture_output=True, text=True,
                         timeout=300)
    losses = [json.loads(line)["loss"] for line in log.read_text().splitlines() if '"loss"' in line] \
        if res.returncode == 0 else None
    return res, losses


def test_resume_without_a_checkpoint_is_a_usage_error(capsys):
    import importlib.util

    spec = importlib.util.spec_from_file_location("torch_pyg_example", EXAMPLE)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    with pytest.raises(SystemExit) as e:
        example.parse(["s.zarr", "--resume"])
    assert e.value.code == 2 and capsys.readouterr().err.strip().endswith("error: --resume needs --checkpoint PATH")
    assert example.parse(["s.zarr", "--checkpoint", "c.pt", "--resume"]).resume


@pytest.mark.slow
def test_the_example_resumes_to_the_same_losses(stores, tmp_path):
    ck = str(tmp_path / "ck.pt")
    res, straight = run(stores["p1"], tmp_path / "a.jsonl", "--epochs", "10")
    assert res.returncode == 0, res.stderr
    res, first = run(stores["p1"], tmp_path / "b.jsonl", "--epochs", "5", "--checkpoint", ck)
    assert res.returncode == 0, res.stderr
    res, rest = run(stores["p1"], tmp_path / "c.jsonl", "--epochs", "10", "--checkpoint", ck, "--resume")
    assert res.returncode == 0, res.stderr
    assert len(straight) == 10 and first + rest == straight
    res, _ = run(stores["p1"], tmp_path / "d.jsonl", "--epochs", "10", "--checkpoint", ck, "--resume")
    assert (res.returncode, res.stderr) == (2, f"torch_pyg: error: {ck}: already at epoch 10, nothing left of --epochs 10\n")
    res, _ = run(stores["other"], tmp_path / "e.jsonl", "--epochs", "12", "--checkpoint", ck, "--resume")
    assert (res.returncode, res.stderr.count("\n")) == (2, 1) and "saved for another graph" in res.stderr


@pytest.mark.mpi
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_run_checkpointed_at_p4_resumes_at_p2(mpi_stores, tmp_path):
    """Stopped at epoch 6 of 12 at P = 4 and resumed at P = 2 (the model is not bound to a partition): one
    uninterrupted process's losses."""
    ck = str(tmp_path / "ck.pt")
    res, straight = run(mpi_stores["undirected", 1], tmp_path / "a.jsonl", "--epochs", "12")
    assert res.returncode == 0, res.stderr
    res, first = run(mpi_stores["undirected", 4], tmp_path / "b.jsonl", "--epochs", "6", "--checkpoint", ck,
                     "--checkpoint-every", "3", ranks=4)
    assert res.returncode == 0, res.stderr
    res, rest = run(mpi_stores["undirected", 2], tmp_path / "c.jsonl", "--epochs", "12", "--checkpoint", ck,
                    "--resume", ranks=2)
    assert res.returncode == 0, res.stderr
    assert len(first) == len(rest) == 6
    np.testing.assert_allclose(first + rest, straight, rtol=1e-5)
