"""Starting torch.distributed (trainer/torchdist/launch.py): the launcher is recognized from its
environment; one process, torchrun and mpirun each give the right rank and size."""

import json
import os
import re
import subprocess
import sys

import pytest

pytest.importorskip("torch")

from helpers.mpi import mpirun  # noqa: E402

from shgcn.trainer.torchdist.launch import launched_by_mpi  # noqa: E402

PROBE = "from shgcn.trainer.torchdist import init_from_env; import json; print(json.dumps(init_from_env()))"


def test_mpi_launchers_are_recognized(monkeypatch):
    for var in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MPI_LOCALNRANKS"):
        monkeypatch.delenv(var, raising=False)
    assert not launched_by_mpi()
    monkeypatch.setenv("PMI_SIZE", "1")
    assert not launched_by_mpi()
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "4")
    assert launched_by_mpi()


def probe(cmd, env=None):
    env = {k: v for k, v in (env or os.environ).items() if k not in ("RANK", "WORLD_SIZE", "PMI_SIZE")}
    res = subprocess.run([*cmd, sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120, env=env)
    assert res.returncode == 0, res.stderr
    # each rank prints one pair; the ranks' writes may land on one line, so the pairs are found, not split
    return sorted(json.loads(pair) for pair in re.findall(r"\[\d+, \d+\]", res.stdout))


def test_one_process():
    assert probe([]) == [[0, 1]]


@pytest.mark.mpi
@pytest.mark.slow
def test_mpirun_gives_every_rank_its_place():
    assert probe([mpirun(), "-n", "3"]) == [[0, 3], [1, 3], [2, 3]]


FINISH = ("from shgcn.trainer.torchdist import finish, init_from_env; import json, torch.distributed as dist; "
          "r = init_from_env(); finish(); finish(); print(json.dumps([*r, dist.is_initialized()]))")


@pytest.mark.mpi
@pytest.mark.slow
@pytest.mark.timeout(180)
def test_finish_lets_every_rank_leave_in_turn():
    """Every rank's group is gone after finish (a second call does nothing) and the job exits 0; one process
    too."""
    def run(cmd):
        env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "PMI_SIZE")}
        res = subprocess.run([*cmd, sys.executable, "-c", FINISH], capture_output=True, text=True, timeout=120,
                             env=env)
        assert res.returncode == 0, res.stderr
        return sorted(json.loads(t) for t in re.findall(r"\[\d+, \d+, (?:true|false)\]", res.stdout))

    assert run([mpirun(), "-n", "3"]) == [[0, 3, False], [1, 3, False], [2, 3, False]]
    assert run([]) == [[0, 1, False]]
