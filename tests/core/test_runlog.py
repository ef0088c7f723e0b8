"""The run log's records and files (core/runlog.py): JSON round trips, the job a header describes, resuming."""

import json

import pytest

from shgcn.core.costs import Job
from shgcn.core.errors import UserError
from shgcn.core.runlog import Epoch, Header, RunLogWriter, Step, from_dict, read_run_log, to_json

BASE = dict(store="s.zarr", dataset="sbm", parts=4, exchange="p2p", model="hp", dims=[8, 16, 4],
            w_first=[False, True], train_count=10)


def header(**kw) -> Header:
    return Header(**{"mode": "full", "config": {"lr": 0.01}, **BASE, **kw})


def epoch(e: int, **kw) -> Epoch:
    return Epoch(epoch=e, loss=1.0 / (e + 1), train_acc=0.5, bytes_sent=[10 * e, 20], **kw)


def step(e: int, s: int) -> Step:
    return Step(epoch=e, step=s, batch=10 * e + s, vertices=50, train_vertices=7, loss=0.5, bytes_sent=[1, 2])


def write(path, recs, hdr=None, resume_from=None):
    with RunLogWriter(path, hdr or header(), resume_from=resume_from) as w:
        for r in recs:
            w.write(r)


def test_records_round_trip(tmp_path):
    hdr = header(mode="minibatch", sampler="rw", batch_size=40, arch="gat", heads=[2, 1], nodes=[0, 0, 1, 1],
                 memory=[100, 200, 300, 400])
    recs = [step(0, 0), step(0, 1), epoch(0, val_acc=0.25, path_bytes=[{"intra": 1, "inter": 2}] * 4),
            step(1, 0), epoch(1, steps=1, step_bytes_mean=[1.5, 2.5])]
    path = tmp_path / "run.jsonl"
    write(path, recs, hdr)
    log = read_run_log(path)
    assert log.path == str(path) and log.header == hdr
    assert log.epochs == [recs[2], recs[4]] and log.steps == [recs[0], recs[1], recs[3]]
    assert [json.loads(line)["type"] for line in path.read_text().splitlines()] == \
        ["header", "step", "step", "epoch", "step", "epoch"]


def test_to_json_leaves_none_out_and_names_the_type():
    d = json.loads(to_json(epoch(3)))
    assert d["type"] == "epoch" and d["epoch"] == 3 and d["bytes_sent"] == [30, 20]
    assert "val_acc" not in d and "exchange_bytes" not in d
    assert "sampler" not in json.loads(to_json(header()))


def test_from_dict_ignores_unknown_keys_and_refuses_unknown_types():
    e = from_dict({"type": "epoch", "epoch": 2, "loss": 0.5, "train_acc": 0.1, "a_later_field": [1]})
    assert e == Epoch(epoch=2, loss=0.5, train_acc=0.1)
    with pytest.raises(ValueError, match="unknown record type 'batch'"):
        from_dict({"type": "batch"})
    with pytest.raises(ValueError, match="unknown record type None"):
        from_dict({"epoch": 1})


def test_the_job_of_a_header():
    h = header(arch="gat", heads=[2, 1], exchange="node", exchange_dtype="bfloat16", algorithm="1.5d",
               replication=2, combine="gather", ranks_per_node=2)
    assert h.job() == Job((8, 16, 4), arch="gat", heads=(2, 1), exchange="node", itemsize=2, algorithm="1.5d",
                          replication=2, combine="gather", ranks_per_node=2)
    assert header().job() == Job((8, 16, 4), ranks_per_node=1)  # float32, reduce, a node per rank
    assert header(exchange_dtype="float16").job().itemsize == 2 and header(exchange_dtype="float64").job().itemsize == 4
    # no combine recorded (a 1.5D run with one rank a row): the architecture's own, which 1.5D's model accepts
    assert header(arch="gat", heads=[2, 1], algorithm="1.5d").job().combine == "gather"
    assert header(arch="gcn", algorithm="1.5d").job().combine == "reduce"
    assert header(input_density=0.05).job().input_density == 0.05


@pytest.mark.parametrize("nodes, per_node", [([0, 0, 1, 1], 2), ([0, 0, 0, 1, 1], 3), ([0, 0, 1], 2),
                                             ([0, 0, 0, 0], 4), ([0, 1, 0, 1], 1), ([0, 1, 1, 1], 1), (None, 1),
                                             ([], 1)])
def test_ranks_per_node_from_the_nodes_when_they_are_blocks(nodes, per_node):
    assert header(nodes=nodes).job().ranks_per_node == per_node
    assert header(nodes=nodes, ranks_per_node=5).job().ranks_per_node == 5  # given: it wins


def test_labels_name_mode_and_sampler():
    full = Header(mode="full", config={}, **BASE)
    mini = Header(mode="minibatch", config={}, sampler="rw", batch_size=1200, **BASE)
    old = Header(mode="minibatch", config={"sampler": "edge", "batch_size": 0}, **BASE)  # older log
    assert full.label == "P=4 p2p hp, full-batch"
    assert mini.label == "P=4 p2p hp, mini-batch, rw sampler, B=1,200"
    assert old.label == "P=4 p2p hp, mini-batch, edge sampler"
    assert Header(mode="minibatch", config={}, **BASE).mode_label == "mini-batch"


def test_resume_from_keeps_the_old_header_and_the_epochs_before(tmp_path):
    path = tmp_path / "run.jsonl"
    write(path, [step(0, 0), epoch(0), step(1, 0), epoch(1), step(2, 0), epoch(2)])
    write(path, [step(2, 1), epoch(2, val_acc=0.9)], header(start_epoch=2, exchange="bcast"), resume_from=2)
    log = read_run_log(path)
    assert log.header == header()  # the run's own header, not the resumed one's
    assert [e.epoch for e in log.epochs] == [0, 1, 2] and log.epochs[2].val_acc == 0.9
    assert [(s.epoch, s.step) for s in log.steps] == [(0, 0), (1, 0), (2, 1)]  # the old epoch 2 is dropped
    write(path, [], resume_from=0)
    assert read_run_log(path).epochs == [] and read_run_log(path).steps == []
    assert [p.name for p in tmp_path.iterdir()] == ["run.jsonl"]  # no temporary file left


def test_resume_without_a_log_starts_one_and_a_new_log_replaces_the_old(tmp_path):
    path = tmp_path / "run.jsonl"
    write(path, [epoch(0)], header(exchange="bcast"), resume_from=3)
    assert read_run_log(path).header.exchange == "bcast"
    write(path, [])
    assert read_run_log(path).header == header() and read_run_log(path).epochs == []


def test_every_record_is_on_disk_once_written(tmp_path):
    path = tmp_path / "run.jsonl"
    w = RunLogWriter(path, header())
    w.write(epoch(0))
    assert read_run_log(path).epochs == [epoch(0)]
    w.close()


@pytest.mark.parametrize("text, fragment", [
    ("", "not a run log (its first line is not a header record)"),
    ('{"type": "epoch", "epoch": 0, "loss": 1.0, "train_acc": 0.5}\n', "not a run log (its first line is not a header"),
    ('{"type": "header"}\n', ":1: not a run-log record"),  # a header without its fields
    (to_json(header()) + "\n{oops\n", ":2: not a run-log record"),
    (to_json(header()) + '\n{"type": "metrics"}\n', ":2: not a run-log record (unknown record type 'metrics')"),
])
def test_what_is_not_a_run_log_is_one_line(tmp_path, text, fragment):
    path = tmp_path / "x.jsonl"
    path.write_text(text)
    with pytest.raises(UserError) as e:
        read_run_log(path)
    assert str(e.value).startswith(str(path)) and fragment in str(e.value) and "\n" not in str(e.value)


def test_a_missing_or_unreadable_log_is_one_line(tmp_path):
    with pytest.raises(UserError, match="run log not found$"):
        read_run_log(tmp_path / "none.jsonl")
    (tmp_path / "bin.jsonl").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(UserError, match="cannot read the run log"):
        read_run_log(tmp_path / "bin.jsonl")
    with pytest.raises(UserError, match="cannot read the run log"):
        read_run_log(tmp_path)


def test_blank_lines_are_skipped(tmp_path):
    path = tmp_path / "run.jsonl"
    path.write_text("\n" + to_json(header()) + "\n\n" + to_json(epoch(0)) + "\n  \n")
    assert read_run_log(path).epochs == [epoch(0)]


def test_a_log_that_cannot_be_written_is_a_user_error_and_leaves_no_temporary(tmp_path, monkeypatch):
    # issue 33, case 4: --log on a full filesystem exited 1 and left .run.jsonl.tmp-<pid>
    import builtins
    import errno

    real = builtins.open

    def full(path, mode="r", *a, **k):
        f = real(path, mode, *a, **k)
        if "w" in mode or "a" in mode:
            def write(text):
                raise OSError(errno.ENOSPC, "No space left on device")
            f.write = write
        return f

    path = tmp_path / "run.jsonl"
    monkeypatch.setattr(builtins, "open", full)
    with pytest.raises(UserError, match="run.jsonl: cannot write the run log \\(No space left on device\\)"):
        RunLogWriter(path, header())
    monkeypatch.undo()
    assert list(tmp_path.iterdir()) == []
    w = RunLogWriter(path, header())
    monkeypatch.setattr(w._f, "write", lambda text: (_ for _ in ()).throw(OSError(errno.ENOSPC, "No space")))
    with pytest.raises(UserError, match="cannot write the run log"):
        w.write(epoch(0))


def test_a_disk_full_mid_record_leaves_the_whole_records_and_closes_quietly(tmp_path, monkeypatch):
    # issue 33, case 4: the buffered tail of a failed write raised again at close (OSError, exit 1) and a
    # half-written record ended the log
    import errno

    path = tmp_path / "run.jsonl"
    w = RunLogWriter(path, header())
    w.write(epoch(0))
    whole = path.read_bytes()
    real = w._f.write

    def half(data):
        real(data[: len(data) // 2])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(w._f, "write", half)
    with pytest.raises(UserError, match="run.jsonl: cannot write the run log \\(No space left on device\\)"):
        w.write(epoch(1))
    w.close()  # nothing left to flush: no second error
    assert path.read_bytes() == whole and read_run_log(path).epochs == [epoch(0)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.jsonl"]


def test_a_fifo_is_refused_not_read(tmp_path):
    # issue 33: `pipeline report --run FIFO` waited forever
    import os

    os.mkfifo(tmp_path / "run.jsonl")
    with pytest.raises(UserError, match="run.jsonl: not a regular file \\(a FIFO, a device\\)"):
        read_run_log(tmp_path / "run.jsonl")
