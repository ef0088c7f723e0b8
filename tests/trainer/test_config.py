"""The trainer's options (trainer/config.py): refusals through the registries' specs, the job they describe,
and what a checkpoint must agree with."""

import pytest

from shgcn.trainer.config import TrainConfig, TrainError


def test_the_job_of_the_options():
    cfg = TrainConfig(store="s", hidden=(8, 4), arch="gat", options={"heads": 3, "out_heads": 2}, exchange="node",
                      ranks_per_node=4, exchange_dtype="bfloat16")
    job = cfg.job(10, 5)
    assert job.dims == (10, 8, 4, 5) and job.heads == (3, 3, 2) and job.itemsize == 2 and job.ranks_per_node == 4
    assert TrainConfig(store="s", algorithm="1.5d", options={"replication": 2}, arch="gat").combine == "gather"
    assert TrainConfig(store="s", algorithm="1.5d", options={"replication": 2}).combine == "reduce"


def test_an_architectures_own_options_enter_the_checkpoint_identity():
    assert "heads" in TrainConfig(store="s", arch="gat").training_options()
    assert "heads" not in TrainConfig(store="s", arch="sage").training_options()


@pytest.mark.parametrize("kw,fragment", [
    ({"arch": "mlp"}, "--arch 'mlp'"), ({"exchange": "smoke"}, "--exchange 'smoke'"),
    ({"algorithm": "3d"}, "--algorithm '3d'"), ({"ranks_per_node": -1}, "--ranks-per-node"),
    ({"exchange": "bcast", "exchange_dtype": "float16"}, "bcast"), ({"algorithm": "2d", "arch": "gat"}, "2d"),
    ({"options": {"replication": 2}}, "--replication 2: an option of --algorithm 1.5d, not of --algorithm 1d"),
    ({"options": {"heads": 4}}, "--heads 4: an option of --arch gat, not of --arch gcn"),
    ({"arch": "gat", "options": {"heads": 0}}, "--heads 0: must be >= 1"),
    ({"options": {"torch_kernels": "cuda"}}, "--torch-kernels cuda: an option of --backend torch"),
    ({"options": {"colour": 1}}, "unknown option colour: no part declares it"), ({"lr": float("nan")}, "--lr"),
    ({"device": "cuda"}, "--device cuda: the numpy backend"), ({"backend": "torch", "device": "tpu"}, "--device tpu"),
    ({"backend": "abacus"}, "--backend 'abacus'"), ({"threads": 0}, "--threads 0: must be >= 1"),
    ({"mode": "minibatch", "plan_ahead": "later"}, "--plan-ahead 'later': choose auto, inline, thread")])
def test_bad_options_are_one_line_errors(kw, fragment):
    with pytest.raises(TrainError, match=fragment.replace("(", r"\(")):
        TrainConfig(store="s", **kw).check()


@pytest.mark.parametrize("plan_ahead,threads,threaded", [
    ("auto", 1, False), ("auto", 2, True), ("inline", 4, False), ("thread", 1, True), ("thread", 2, True)])
def test_the_next_batch_is_made_on_a_thread_when_the_rank_has_threads(plan_ahead, threads, threaded):
    assert TrainConfig(store="s", plan_ahead=plan_ahead, threads=threads).plan_thread is threaded


@pytest.mark.parametrize("size", [0, -1, True, 2.5, "100"])
def test_a_batch_size_that_is_no_count_of_vertices_is_refused(size):
    """Issue 33: --mode minibatch --batch-size 0 trained (0 meant 10% of the vertices); the default is now
    auto (None), and 0, negatives and non-integers are refused in one line, in the Python API too."""
    with pytest.raises(TrainError, match=r"^--batch-size .*: vertices per batch, a whole number >= 1 \(or auto"):
        TrainConfig(store="s", mode="minibatch", batch_size=size).check()


def test_the_batch_size_is_auto_unless_given():
    auto = TrainConfig(store="s", mode="minibatch")
    auto.check()
    assert auto.batch_size is None and auto.batch_size_for(1000) == 100 and auto.batch_size_for(5) == 1
    assert TrainConfig(store="s", mode="minibatch", batch_size=7).batch_size_for(1000) == 7
    # a checkpoint of an auto run says 0, as checkpoints written before the default was named did
    assert auto.training_options()["batch_size"] == 0
    assert {"walk_length", "batches_per_epoch", "saint", "norm_batches"} <= set(auto.training_options())


@pytest.mark.parametrize("kw,message", [
    ({"threads": 9, "cores": 2}, "--threads 9: at most 8 (4 per core of this machine's 2; more threads only compete "
                                 "for the cores)"),
    ({"threads": 100000, "cores": 16}, "--threads 100000: at most 64 (4 per core of this machine's 16; more threads "
                                       "only compete for the cores)"),
    ({"threads": -1, "cores": 2}, "--threads -1: must be >= 1 (default: the cores of the machine / its ranks)"),
    ({"memory_limit": 2**63}, "--memory-limit: more bytes than can be counted (at most 9,223,372,036,854,775,807, "
                              "just under 8192P)"),
    ({"exchange": "node", "algorithm": "2d"}, "--exchange node: --algorithm 2d communicates by its own summa "
                                              "broadcasts, not by an --exchange: leave --exchange out"),
    ({"exchange": "bcast", "algorithm": "2d"}, "--exchange bcast: --algorithm 2d communicates by its own summa "
                                               "broadcasts, not by an --exchange: leave --exchange out")])
def test_counts_and_sizes_are_bounded(kw, message):
    with pytest.raises(TrainError) as e:
        TrainConfig(store="s", **kw).check()
    assert str(e.value) == message


def test_the_most_threads_are_accepted_and_2d_keeps_its_default_exchange():
    TrainConfig(store="s", threads=8, cores=2).check()
    TrainConfig(store="s", algorithm="2d").check()


def test_ranks_per_node_is_bounded_by_the_jobs_ranks():
    TrainConfig(store="s", ranks_per_node=4).check_ranks(4)
    TrainConfig(store="s").check_ranks(1)
    with pytest.raises(TrainError) as e:
        TrainConfig(store="s", ranks_per_node=10**20).check_ranks(4)
    assert str(e.value) == "--ranks-per-node 100000000000000000000: at most the job's 4 ranks (every rank on one node)"
    with pytest.raises(TrainError) as e:
        TrainConfig(store="s", ranks_per_node=2).check_ranks(1)
    assert str(e.value) == "--ranks-per-node 2: at most the job's 1 rank (every rank on one node)"


def test_the_default_memory_limit_is_what_the_machine_has_available(monkeypatch, tmp_path):
    import builtins

    from shgcn.trainer import config

    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       16000000 kB\nMemFree:         1000 kB\nMemAvailable:    3000000 kB\n")
    real_open = builtins.open

    def fake_open(path, *a, **k):
        if path == "/proc/meminfo":
            return real_open(meminfo, *a, **k)
        if str(path).startswith("/sys/fs/cgroup/"):
            raise FileNotFoundError(path)
        return real_open(path, *a, **k)

    monkeypatch.setattr(builtins, "open", fake_open)
    monkeypatch.setattr("shgcn.core.memory.machine_memory", lambda: 16000000 * 1024)
    assert config.default_memory_limit() == 3000000 * 1024  # the available memory, not the machine's 16 GB
    monkeypatch.setattr("shgcn.core.memory.machine_memory", lambda: 2000000 * 1024)
    assert config.default_memory_limit() == 2000000 * 1024  # never above the machine's (or its cgroup's) memory


def test_a_seed_numpy_refuses_is_one_line():
    """shgcn-train --seed -1 ended in numpy's traceback (rc 1)."""
    with pytest.raises(TrainError, match=r"^--seed -1: must be in 0\.\.2\^63-1$"):
        TrainConfig(store="s", seed=-1).check()


@pytest.mark.parametrize("given,message", [
    ({"sampler": "edge"}, "--sampler: mini-batch options (--mode minibatch); full-batch training uses none"),
    ({"batch_size": 40, "walk_length": 3}, "--batch-size, --walk-length: mini-batch options (--mode minibatch); "
                                           "full-batch training uses none"),
    ({"mode": "minibatch", "sampler": "node", "walk_length": 4},
     "--walk-length 4: an option of the samplers that walk (rw), not of --sampler node")])
def test_an_option_the_run_would_ignore_is_refused(given, message):
    """Away from its default (a config built in code), or given on the command line even at its default."""
    with pytest.raises(TrainError) as e:
        TrainConfig(store="s", **given).check()
    assert str(e.value) == message


@pytest.mark.parametrize("given,message", [
    ({"options": {"heads": 8}}, "--heads 8: an option of --arch gat, not of --arch gcn"),
    ({"algorithm": "2d", "options": {"replication": 1}}, "--replication 1: an option of --algorithm 1.5d, not of "
                                                         "--algorithm 2d"),
    ({"options": {"torch_kernels": "auto"}}, "--torch-kernels auto: an option of --backend torch, not of "
                                             "--backend numpy")])
def test_another_parts_option_is_refused_even_at_its_default(given, message):
    with pytest.raises(TrainError) as e:
        TrainConfig(store="s", **given).check()
    assert str(e.value) == message


def test_threads_are_counted_over_the_ranks_that_share_the_machine():
    TrainConfig(store="s", threads=8, cores=2, local_ranks=1).check()  # 4 per core
    with pytest.raises(TrainError) as e:
        TrainConfig(store="s", threads=8, cores=2, local_ranks=2).check()
    assert str(e.value) == ("--threads 8: at most 4 with 2 ranks on this machine (4 per core of this machine's 2; more "
                            "threads only compete for the cores)")


def test_norm_batches_are_bounded():
    """--norm-batches 10^9 ran without end: at most 10,000 (td.MiniBatches' norm_batches too: test_loader)."""
    with pytest.raises(TrainError, match=r"^--norm-batches 1000000000: at most 10,000$"):
        TrainConfig(store="s", mode="minibatch", norm_batches=10**9).check()
    TrainConfig(store="s", mode="minibatch", norm_batches=10_000).check()


@pytest.mark.parametrize("given,message", [
    ({"sampler": "node", "given": ("sampler",)},
     "--sampler: mini-batch options (--mode minibatch); full-batch training uses none"),
    ({"mode": "minibatch", "sampler": "node", "walk_length": 2, "given": ("sampler", "walk_length")},
     "--walk-length 2: an option of the samplers that walk (rw), not of --sampler node")])
def test_an_option_given_at_its_default_is_refused_where_the_run_ignores_it(given, message):
    with pytest.raises(TrainError) as e:
        TrainConfig(store="s", **given).check()
    assert str(e.value) == message
    TrainConfig(store="s", mode="minibatch", sampler="node", given=("sampler",)).check()  # where it counts
