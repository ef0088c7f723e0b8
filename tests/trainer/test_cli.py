"""shgcn-train as a command: one rank without mpirun, the run log's keys, and
the stores it must refuse before any work."""

import json
import os
import subprocess
import sys

import pytest
from helpers.mpi import train


@pytest.fixture
def stores(mpi_stores):
    return mpi_stores


def test_runs_without_mpirun_and_log_keys(stores, tmp_path):
    import json

    log = tmp_path / "run.jsonl"
    res = train(1, stores["undirected", 1], "--epochs", 3, log=log, use_mpirun=False)
    assert res.returncode == 0, res.stderr
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    header, epochs = lines[0], lines[1:]
    for key in ("store", "parts", "exchange", "mode", "versions"):  # the JSON keys are an interface
        assert key in header
    for key in ("epoch", "loss", "train_acc", "val_acc", "test_acc", "epoch_time", "comm_time", "compute_time",
                "bytes_sent", "msgs_sent"):
        assert key in epochs[0]
    assert epochs[0]["bytes_sent"] == [0] and len(epochs) == 3
    # the machine the run started on, for the report's note on ranks that shared its cores
    assert (header["config"]["cores"], header["config"]["local_ranks"]) == (os.cpu_count(), 1)


def test_wrong_rank_count(stores):
    res = train(2, stores["undirected", 4], "--epochs", 1)
    assert res.returncode != 0
    assert "has 4 parts but the job has 2 ranks" in res.stderr and res.stderr.count("shgcn-train: error") == 1
    res1 = train(1, stores["undirected", 4], "--epochs", 1, use_mpirun=False)
    assert res1.returncode == 2 and "mpirun -n 4" in res1.stderr


def test_missing_store(tmp_path):
    res = train(1, tmp_path / "nope.zarr", use_mpirun=False)
    assert res.returncode == 2 and "store not found" in res.stderr and "Traceback" not in res.stderr


@pytest.mark.parametrize("args,fragment", [(["--device", "cuda"], "--device cuda: the numpy backend runs on cpu"),
                                           (["--device", "tpu"], "invalid choice: 'tpu'")])
def test_a_device_the_backend_does_not_run_on_is_refused(tmp_path, args, fragment):
    res = train(1, tmp_path / "nope.zarr", *args, use_mpirun=False, timeout=120)
    assert res.returncode == 2 and fragment in res.stderr and "Traceback" not in res.stderr


def test_corrupt_block_is_reported_before_training(stores, tmp_path):
    import shutil
    path = tmp_path / "c.zarr"
    shutil.copytree(stores["undirected", 2], path)
    chunk = path / "ranks" / "1" / "data" / "c" / "0"
    raw = bytearray(chunk.read_bytes())
    raw[0] ^= 0x40
    chunk.write_bytes(bytes(raw))
    log = tmp_path / "run.jsonl"
    res = train(2, path, "--epochs", 5, log=log, timeout=120)
    assert res.returncode != 0
    assert "(rank 1)" in res.stderr and "checksum mismatch" in res.stderr
    assert not log.exists()  # no epoch ran


def test_injected_failure_aborts_the_job(stores):
    res = train(4, stores["undirected", 4], "--epochs", 50, "--fail-at", "2:3", timeout=120)
    assert res.returncode != 0
    assert "rank 2: RuntimeError: injected failure at epoch 3" in res.stderr


def test_the_batch_size_option_is_auto_by_default():
    from shgcn.trainer.cli import parser

    assert parser().parse_args(["s.zarr"]).batch_size is None
    assert parser().parse_args(["s.zarr", "--batch-size", "auto"]).batch_size is None
    assert parser().parse_args(["s.zarr", "--batch-size", "40"]).batch_size == 40
    assert "auto: 10% of the vertices" in " ".join(parser().format_help().split())


def test_help_shows_no_flags_default_backwards():
    """``--no-verify`` stores False in ``verify``: "(default: True)" beside "skip the block checksum" read as
    skipping by default. A flag's help says what it does; every other option keeps its default."""
    from shgcn.trainer.cli import parser

    text = " ".join(parser().format_help().split())
    assert "(default: True)" not in text and "(default: False)" not in text
    assert "--no-verify skip the block checksum (bounds are still checked; without it the checksum is verified) " in text
    assert "--lr LR Adam learning rate (default: 0.01)" in text


@pytest.mark.parametrize("args", [["--help"], ["--version"]])
def test_help_and_version_import_nothing_heavy(args):
    """--help and --version answer without loading MPI, zarr, Dask, numba or torch."""
    code = ("import sys\nfrom shgcn.trainer.cli import main\n"
            f"try:\n    main({args!r})\nexcept SystemExit:\n    pass\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'mpi4py', 'zarr', 'dask', 'numba', 'scipy', "
            "'mtkahypar', 'distributed', 'torch'}))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip().splitlines()[-1] == "[]"
    if args == ["--version"]:
        assert res.stdout.startswith("shgcn ")


def test_banner_names_the_mode_and_the_run_ends_with_a_summary(stores, tmp_path):
    from helpers.mpi import TRAIN

    log = tmp_path / "run.jsonl"
    res = subprocess.run([sys.executable, str(TRAIN), str(stores["undirected", 1]), "--epochs", "3", "--mode",
                          "minibatch", "--batch-size", "40", "--threads", "1", "--log", str(log)], capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.strip().splitlines()
    assert lines[0].startswith("1d, mini-batch (node sampler, batch size 40) on 1 rank (1 node) of 1 thread; memory "), lines
    # what changes the losses without an option on the command line: the store's partition and feature
    # normalization, the weight decay and where it applies, the exchange
    assert lines[1].startswith("trains on: partition ") and "; features " in lines[1], lines
    assert "; weight decay 0.0005 on the first layer's weights only" in lines[1] and lines[1].endswith("exchange p2p")
    assert "; sent 0 bytes per epoch; " in lines[-1]  # one rank: nothing to send (mini-batch: no prediction)
    assert lines[-1].startswith("summary: best validation accuracy ") and " (test accuracy there " in lines[-1]
    assert lines[-1].endswith(f"; run log: {log}") and "final loss " in lines[-1]
    # the busiest rank's measured peak beside its modelled bytes; the run log has every rank's peak per epoch
    assert "; peak memory " in lines[-1] and " at rank 0 (modelled " in lines[-1]
    epochs = [json.loads(x) for x in log.read_text().splitlines() if '"epoch"' in x and '"peak_memory"' in x]
    assert epochs and all(len(e["peak_memory"]) == 1 and e["peak_memory"][0] > 50 * 2**20 for e in epochs)
    full = subprocess.run([sys.executable, str(TRAIN), str(stores["undirected", 1]), "--epochs", "1", "--threads", "1"],
                          capture_output=True, text=True, timeout=300)
    assert full.returncode == 0 and "; sent 0 bytes per epoch as predicted; " in full.stdout, full.stdout + full.stderr


@pytest.mark.parametrize("argv,expected", [
    (["s.zarr", "--threads", "3"], 3), (["s.zarr", "--threads=2"], 2), (["--thread", "4", "s.zarr"], 4),
    (["s.zarr"], None), (["s.zarr", "--threads", "0"], None), (["s.zarr", "--threads", "x"], None),
    (["s.zarr", "--threads"], None), (["s.zarr", "--threads", "100000"], None), (["s.zarr", "--threads=-1"], None)])
def test_threads_are_read_before_argparse(argv, expected):
    from shgcn.trainer.cli import threads_option

    assert threads_option(argv) == expected


def test_share_cores_sets_the_threads_or_leaves_the_users_variables(monkeypatch):
    from shgcn.trainer import cli

    for var in cli.THREAD_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("MPI_LOCALNRANKS", "2")
    monkeypatch.setattr(cli.os, "cpu_count", lambda: 8)
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "3")  # the user's: kept without --threads
    assert cli.share_cores() == 4
    assert [cli.os.environ[v] for v in cli.THREAD_VARS] == ["1", "3", "1", "4"]  # BLAS one thread, numba the share
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "8")
    assert cli.share_cores(3) == 3 and [cli.os.environ[v] for v in cli.THREAD_VARS] == ["1", "1", "1", "3"]
    monkeypatch.setattr(cli.os, "cpu_count", lambda: 1)
    assert cli.cores_share() == 1  # never 0 threads


def test_numbas_openmp_workers_sleep_between_kernels_unless_the_user_chose(monkeypatch):
    from shgcn.trainer import cli

    for var in (*cli.THREAD_VARS, "OMP_WAIT_POLICY"):  # restored after the test
        monkeypatch.delenv(var, raising=False)
    cli.share_cores(2)
    assert cli.os.environ["OMP_WAIT_POLICY"] == "PASSIVE"
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    cli.share_cores(2)
    assert cli.os.environ["OMP_WAIT_POLICY"] == "ACTIVE"


def test_threads_zero_is_one_line_exit_2(tmp_path):
    res = train(1, tmp_path / "nope.zarr", "--threads", 0, use_mpirun=False, timeout=120)
    assert res.returncode == 2 and res.stderr.strip() == \
        "shgcn-train: error: --threads 0: must be >= 1 (default: the cores of the machine / its ranks)"


def test_an_empty_thread_variable_is_an_unset_one(monkeypatch):
    from shgcn.trainer import cli

    for var in cli.THREAD_VARS:
        monkeypatch.setenv(var, "")
    monkeypatch.setattr(cli.os, "cpu_count", lambda: 4)
    monkeypatch.delenv("MPI_LOCALNRANKS", raising=False)
    assert cli.thread_env_problem() is None and cli.share_cores() == 4
    assert [cli.os.environ[v] for v in cli.THREAD_VARS] == ["1", "1", "1", "4"]


def _train_env(tmp_path, *args, **env):
    from helpers.mpi import TRAIN

    full = {**os.environ, **env}
    return subprocess.run([sys.executable, str(TRAIN), str(tmp_path / "nope.zarr"), "--quiet", *args],
                          capture_output=True, text=True, timeout=120, env=full)


def test_thread_counts_beyond_the_machine_are_one_line_exit_2(tmp_path):
    top = 4 * os.cpu_count()
    for args, env, message in [
            (("--threads", "100000"), {}, f"--threads 100000: at most {top} (4 per core of this machine's "
                                          f"{os.cpu_count()}; more threads only compete for the cores)"),
            (("--threads", "-1"), {}, "--threads -1: must be >= 1 (default: the cores of the machine / its ranks)"),
            ((), {"NUMBA_NUM_THREADS": "0"}, f"NUMBA_NUM_THREADS='0' in the environment: threads, a whole number from "
                                             f"1 to {top} (4 per core of this machine's {os.cpu_count()}); unset it "
                                             "or fix it")]:
        res = _train_env(tmp_path, *args, **env)
        assert (res.returncode, res.stderr) == (2, f"shgcn-train: error: {message}\n"), res.stderr[-2000:]


def test_a_memory_limit_beyond_bytes_is_one_line_exit_2(tmp_path):
    res = _train_env(tmp_path, "--memory-limit", "1e400")
    assert (res.returncode, res.stderr) == (2, "shgcn-train: error: --memory-limit: more bytes than can be counted (at "
                                               "most 9,223,372,036,854,775,807, just under 8192P)\n")
