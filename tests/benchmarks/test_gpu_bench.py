"""benchmarks/training/gpu_bench.py's pure parts: a run's epoch time from its run log, the thread sweep, the
launcher's kind, the ratio tables (the runs themselves need a GPU machine: issue 48)."""

import sys

from helpers import REPO

if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.training import gpu_bench as gb  # noqa: E402


def records(times: list[float]) -> list[dict]:
    return [{"type": "epoch", "epoch": k, "epoch_time": t} for k, t in enumerate(times)]


def test_epoch_median_counts_epochs_from_skip_to_the_end():
    recs = records([9.0] * 10 + [1.0, 2.0, 3.0]) + [{"type": "step", "epoch": 11, "loss": 0.5}]
    assert gb.epoch_median(recs, 10) == (2.0, 3)


def test_a_short_run_counts_every_epoch_but_the_first():
    assert gb.epoch_median(records([9.0, 1.0, 3.0]), 10) == (2.0, 2)
    assert gb.epoch_median(records([4.0]), 10) == (4.0, 1)


def test_a_run_log_without_epochs_is_an_error():
    try:
        gb.epoch_median([{"type": "step", "epoch": 0}], 10)
    except ValueError:
        return
    raise AssertionError("no ValueError")


def test_the_sweep_stops_at_the_cores():
    assert gb.sweep(16) == [1, 2, 4, 8, 16]
    assert gb.sweep(6) == [1, 2, 4]
    assert gb.sweep(2, (4, 8)) == [1]


def test_open_mpi_is_told_from_mpich():
    assert gb.is_open_mpi("mpirun (Open MPI) 4.1.6\n\nReport bugs to http://www.open-mpi.org/community/help/")
    assert not gb.is_open_mpi("HYDRA build details:\n    Version:                                 4.2.0")


def test_gat_keeps_the_total_width_and_the_cpu_trains_fewer_epochs():
    args = gb.parse(["store", "--hidden", "256", "--gat-heads", "4", "--epochs", "60", "--cpu-epochs", "30",
                     "--gat-epochs", "20"])
    assert (gb.epochs_of(args, "gcn", True), gb.epochs_of(args, "gcn", False), gb.epochs_of(args, "gat", True)) == \
        (60, 30, 20)
    opts, per, heads = gb.arch_opts(args, "gat", 20)
    assert (per, heads) == (64, 4)
    assert opts[opts.index("--hidden") + 1] == 64 and opts[opts.index("--heads") + 1] == 4


def test_the_tables_give_every_ratio_and_mark_missing_runs():
    runs = {k: gb.Run(k, [], ms=v) for k, v in {"gcn numpy cpu": 100.0, "gcn torch cpu": 200.0, "gcn torch cuda": 10.0,
                                                 "gcn pyg cuda": 5.0, "gcn csr cuda": 4.0}.items()}
    runs["sage numpy cpu"] = gb.Run("sage numpy cpu", [], error="timed out after 90 s")
    runs["sage torch cpu"] = gb.Run("sage torch cpu", [], error="skipped: the budget is spent")
    epochs = gb.epoch_table(runs, ["gcn", "sage"], "cuda")
    assert "| gcn | 100.0 | 200.0 | 10.0 | 5.0 | 4.0 |" in epochs
    assert "| sage | failed | skipped | - | - |  |" in epochs
    ratios = gb.ratio_table(runs, ["gcn", "sage"], "cuda")
    assert "| gcn | 2.00 | 0.10 | 0.05 | 2.00 | 20.00 | ours 2.50, PyG 1.25 |" in ratios
    assert "| sage | - | - | - | - | - |  |" in ratios


def test_agreement_compares_the_common_epochs_and_the_bytes():
    from benchmarks.training.gpu_bench import Run, agreement

    a = Run("a", [], extra={"losses": [2.0, 1.0, 0.5], "bytes": [8, 8, 8]})
    b = Run("b", [], extra={"losses": [2.0, 1.001], "bytes": [8, 8]})
    assert agreement(a, b) == "1.0e-03 over 2 epochs, bytes equal"
    c = Run("c", [], extra={"losses": [2.0, 1.0], "bytes": [8, 9]})
    assert agreement(a, c) == "0.0e+00 over 2 epochs, bytes DIFFER"
    assert agreement(a, None) == "-" and agreement(Run("d", []), a) == "-"
