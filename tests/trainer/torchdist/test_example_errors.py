"""The example's failures read like the trainer's (examples/torch_pyg.py, trainer/torchdist/launch.py and
block.py): a store of the wrong part count, a missing store, a path that is not a store, a corrupt block and a
stale launcher environment end every rank with exit 2 and one line on stderr (rank 0's), no traceback, no
hang; open_block and init_from_env raise those lines."""

import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

import helpers  # noqa: E402
from helpers import REPO  # noqa: E402
from helpers.mpi import mpirun  # noqa: E402

from shgcn.core.errors import UserError  # noqa: E402
from shgcn.trainer.torchdist import launch  # noqa: E402
from shgcn.trainer.torchdist.block import JobError, agree  # noqa: E402
from shgcn.trainer.torchdist.launch import job_rank, stale_launcher_env  # noqa: E402

EXAMPLE = REPO / "examples" / "torch_pyg.py"
LAUNCH_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
               *(v for pair in launch.MPI_WORLD_VARS for v in pair), "MPI_LOCALNRANKS")


def example(store, ranks=1, env=None, timeout=120, launcher=None):
    """The example's stderr and exit code (mpirun for ranks > 1; ``launcher`` in its place)."""
    clean = {k: v for k, v in os.environ.items() if k not in LAUNCH_VARS}
    cmd = [sys.executable, str(EXAMPLE), str(store), "--epochs", "2"]
    if launcher is not None:
        cmd = [*launcher, *cmd[1:]]
    elif ranks > 1:
        cmd = [mpirun(), "-n", str(ranks), *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env={**clean, **(env or {})})


def one_line(res, *fragments):
    """The example's one line (the tests' helper), and nothing else on stderr."""
    helpers.one_line(res, *fragments, prefix="torch_pyg: error: ")
    assert res.stderr.count("\n") == 1, res.stderr


def test_one_process_on_a_store_for_three_ranks(built):
    one_line(example(built.path), "the store has 3 parts but the job has 1 rank; run with mpirun -n 3")


def test_a_missing_store_and_a_path_that_is_not_one(tmp_path):
    one_line(example(tmp_path / "nope.zarr"), "nope.zarr: store not found")
    one_line(example(tmp_path), "not a store")


def test_a_partial_torchrun_environment_is_one_line(built):
    """RANK and WORLD_SIZE without MASTER_ADDR: torch's env:// would fail with a traceback."""
    one_line(example(built.path, env={"RANK": "0", "WORLD_SIZE": "1"}, timeout=60),
             "RANK=0 WORLD_SIZE=1 in the environment but MASTER_ADDR and MASTER_PORT not set")


@pytest.mark.mpi
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_every_rank_ends_with_one_line_under_mpirun(built, copy, tmp_path):
    one_line(example(built.path, ranks=2), "the store has 3 parts but the job has 2 ranks; run with mpirun -n 3")
    one_line(example(tmp_path / "nope.zarr", ranks=2), "nope.zarr: store not found")
    one_line(example(tmp_path, ranks=2), "not a store")
    chunk = copy / "ranks" / "1" / "data" / "c" / "0"
    raw = bytearray(chunk.read_bytes())
    raw[0] ^= 0x40
    chunk.write_bytes(bytes(raw))
    # rank 1 alone fails: every rank learns it in open_block, none waits for it in the first exchange
    one_line(example(copy, ranks=3), "checksum mismatch", "(rank 1)")


@pytest.mark.mpi
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_stale_torchrun_environment_under_mpirun_does_not_hang(built):
    """RANK/WORLD_SIZE left from torchrun, MASTER_ADDR and MASTER_PORT too: rank 0's RANK fits, so without the
    check it would wait in torch's rendezvous for a rank 1 that never comes."""
    stale = {"RANK": "0", "WORLD_SIZE": "3", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29531"}
    one_line(example(built.path, ranks=3, env=stale, timeout=60),
             "RANK=0 WORLD_SIZE=3 in the environment disagree with the MPI launcher's", "unset RANK and WORLD_SIZE")
    one_line(example(built.path, ranks=2, env={"RANK": "0", "WORLD_SIZE": "2"}, timeout=60), "disagree")


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_torchrun_with_a_world_the_store_does_not_have(built):
    """Our line once (rank 0's), no rank's traceback; torchrun then reports its failed children itself (its
    own summary, exit 1)."""
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    res = example(built.path, launcher=torchrun)
    rc, err = res.returncode, res.stderr
    ours = [line for line in err.splitlines() if line.startswith("torch_pyg:")]
    assert rc != 0 and ours == ["torch_pyg: error: " + f"{built.path}: the store has 3 parts but the job has 2 "
                                "ranks; run with mpirun -n 3 (or torchrun --nproc-per-node 3), or build a store "
                                "with --parts 2"], err
    assert "[rank" not in err and "Connection closed" not in err, err


@pytest.fixture
def no_launcher(monkeypatch):
    for var in LAUNCH_VARS:
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def test_stale_launcher_environments_are_named(no_launcher):
    assert stale_launcher_env() is None
    no_launcher.setenv("RANK", "1")
    assert stale_launcher_env() is None  # half a pair: init_from_env does not use it
    no_launcher.setenv("WORLD_SIZE", "1")
    assert "RANK=1 WORLD_SIZE=1 in the environment: not a rank of a world" in stale_launcher_env()
    no_launcher.setenv("WORLD_SIZE", "x")
    assert "not a rank of a world" in stale_launcher_env()
    no_launcher.setenv("WORLD_SIZE", "2")
    assert "but MASTER_ADDR and MASTER_PORT not set" in stale_launcher_env()
    no_launcher.setenv("MASTER_ADDR", "127.0.0.1")
    assert "but MASTER_PORT not set" in stale_launcher_env()
    no_launcher.setenv("MASTER_PORT", "29500")
    assert stale_launcher_env() is None  # torchrun's
    no_launcher.setenv("OMPI_COMM_WORLD_RANK", "1")
    no_launcher.setenv("OMPI_COMM_WORLD_SIZE", "2")
    assert stale_launcher_env() is None  # a launcher of one's own that says the same as mpirun
    no_launcher.setenv("PMI_RANK", "0")
    no_launcher.setenv("PMI_SIZE", "2")
    assert stale_launcher_env() == (
        "RANK=1 WORLD_SIZE=2 in the environment disagree with the MPI launcher's PMI_RANK=0 PMI_SIZE=2 (stale "
        "torchrun variables?); unset RANK and WORLD_SIZE to run one process or under mpirun (torchrun sets them "
        "itself)")
    assert job_rank() == 1  # Open MPI's own first, then MPICH's, then RANK


def test_init_from_env_refuses_before_any_rendezvous(no_launcher):
    no_launcher.setattr(launch.dist, "is_initialized", lambda: False)
    no_launcher.setattr(launch.dist, "init_process_group", lambda *a, **kw: pytest.fail("a rendezvous started"))
    no_launcher.setattr(launch.atexit, "register", lambda f: None)
    no_launcher.setenv("RANK", "0")
    no_launcher.setenv("WORLD_SIZE", "2")
    with pytest.raises(JobError, match="MASTER_ADDR and MASTER_PORT not set") as e:
        launch.init_from_env()
    assert isinstance(e.value, UserError) and e.value.exit_code == 2 and e.value.every_rank


def test_agree_alone_raises_the_ranks_own_error():
    assert agree(None) is None
    with pytest.raises(KeyError):
        agree(KeyError("a bug keeps its type and traceback"))
    with pytest.raises(UserError, match="^x.zarr: store not found$"):
        agree(UserError("x.zarr: store not found"))


FAILS = REPO / "tests" / "helpers" / "torch_example_fails.py"


def failing(store, rank, epoch, how, *args, timeout=240):
    """The example under ``mpirun -n 2`` with rank ``rank`` failing at ``epoch`` (tests/helpers/
    torch_example_fails.py): (exit code, stderr, seconds)."""
    import time

    clean = {k: v for k, v in os.environ.items() if k not in LAUNCH_VARS}
    cmd = [mpirun(), "-n", "2", sys.executable, str(FAILS), str(rank), str(epoch), how, str(store), "--epochs", "50",
           *args]
    start = time.monotonic()
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=clean)
    return res.returncode, res.stderr, time.monotonic() - start


@pytest.mark.mpi
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_one_ranks_failure_mid_run_ends_every_rank_at_once(client, tmp_path):
    """Issue 51.6: rank 1's exception at epoch 3 left rank 0 to find its peer gone in the next exchange, with
    a traceback from each (gloo's "Connection closed by peer" last); a rank that stopped answering left the
    others in the exchange for torch.distributed's timeout. Now one line naming the rank and the error, and
    every rank ended at once (MPI_Abort): well within a --timeout of 600 s that it never waits for."""
    from helpers.stores import make

    store = make(tmp_path / "p2.zarr", client, parts=2, models=("rp",)).path
    rc, err, seconds = failing(store, 1, 3, "raise", "--timeout", "600")
    assert (rc, err) == (1, "torch_pyg: rank 1: RuntimeError: injected failure at epoch 3\n") and seconds < 200
    # one rank's own user error mid-run (rank 0 alone writes the checkpoint, into a folder that is not there)
    ck = tmp_path / "none" / "ck.pt"
    rc, err, seconds = failing(store, 9, 0, "raise", "--checkpoint", ck, "--checkpoint-every", "2", "--timeout", "600")
    assert (rc, err) == (2, f"torch_pyg: rank 0: error: {ck}: cannot write the checkpoint (No such file or "
                            "directory); the last one written, if any, is kept\n") and seconds < 200
    assert not (tmp_path / "none").exists()
    # a rank that stops answering: the others end when their exchange has waited --timeout seconds
    rc, err, seconds = failing(store, 1, 3, "hang", "--timeout", "5")
    assert rc == 1 and err.count("\n") == 1 and err.startswith("torch_pyg: rank 0: RuntimeError: ") and \
        "Timed out" in err and "another rank stopped answering" in err and seconds < 200, err


def test_run_main_ends_a_process_as_the_trainer_does(capfd):
    """One process (no launcher): main's return; a user error's line and exit 2; any other failure's line
    (type and message, no traceback) and exit 1; Ctrl-C 130; argparse's exit passes through."""
    def raising(e):
        def main():
            raise e
        return main

    assert launch.run_main(lambda: None, "p") == 0 and launch.run_main(lambda: 3, "p") == 3
    assert launch.run_main(raising(UserError("s.zarr: store not found")), "p") == 2
    assert capfd.readouterr().err == "p: error: s.zarr: store not found\n"
    assert launch.run_main(raising(JobError("every rank's")), "p") == 2
    assert capfd.readouterr().err == "p: error: every rank's\n"
    assert launch.run_main(raising(ValueError("a bug\nin two lines")), "p") == 1
    assert capfd.readouterr().err == "p: ValueError: a bug in two lines\n"
    assert launch.run_main(raising(KeyboardInterrupt()), "p") == 130
    assert "p: interrupted" in capfd.readouterr().err
    with pytest.raises(SystemExit):
        launch.run_main(raising(SystemExit(2)), "p")


@pytest.mark.parametrize("args,fragment", [
    (["--epochs", "0"], "--epochs 0: must be >= 1"),  # was "None: already at epoch 0"
    (["--hidden", "0"], "--hidden 0: widths must be >= 1"),  # trained a 0-wide layer
    (["--hidden", "-5"], "--hidden -5: widths must be >= 1"), (["--arch", "gat", "--heads", "0"], "--heads 0: must be >= 1"),
    (["--lr", "nan"], "--lr nan: must be a finite number > 0"), (["--seed", "-1"], "--seed -1: must be in 0..2^63-1")])
def test_the_examples_bad_arguments_are_one_line(built, args, fragment):
    """torch's RuntimeError or ValueError (rc 1) before: one line, exit 2, before torch.distributed starts."""
    clean = {k: v for k, v in os.environ.items() if k not in LAUNCH_VARS}
    res = subprocess.run([sys.executable, str(EXAMPLE), str(built.path), *args], capture_output=True, text=True,
                         timeout=120, env=clean)
    one_line(res, fragment)


def test_a_peer_that_left_is_named_not_gloo():
    """rank 1 exited 3: rank 0's line blamed gloo ("Connection closed by peer ... GLHF!"); now the rank that left."""
    for words in ("[gloo/transport/tcp/pair.cc:553] Connection closed by peer [127.0.0.1]:13483. GLHF!",
                  "[pair.cc:537] Read error [127.0.0.1]:11939: Connection reset by peer."):
        text = launch.failure_text(RuntimeError(words))
        assert text.startswith("another rank left the job") and "gloo" not in text and "GLHF" not in text
    assert launch.failure_text(RuntimeError("Timed out waiting")).endswith("(another rank stopped answering, or fell "
                                                                           "that far behind)")
    assert launch.failure_text(ValueError("x")) == "ValueError: x"
