"""Slurm's layout read from its variables (shgcn.trainer.slurm), and the trainer under a real Slurm: an sbatch'd
``srun shgcn-train`` equal to ``mpirun -n P`` (losses and bytes), and an srun MPI plugin that mpi4py's MPI cannot
use refused in one line before MPI_Init."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from helpers.mpi import read_log, train

from shgcn.trainer import slurm

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "slurm" / "train.sbatch"
TASK = {"SLURM_STEP_NUM_TASKS": "6", "SLURM_PROCID": "4", "SLURM_STEP_ID": "0", "SLURM_LOCALID": "1",
        "SLURM_NODEID": "1", "SLURM_STEP_TASKS_PER_NODE": "3(x2)", "SLURM_STEP_NODELIST": "n[07-08]", "SLURM_JOB_ID": "42"}


def test_counts_and_hosts():
    assert slurm.counts("2(x3),1") == (2, 2, 2, 1)
    assert slurm.counts("4") == (4,)
    assert slurm.counts("x") == ()
    assert slurm.first_host("node[07-09,11]-ib,gpu1") == "node07-ib"
    assert slurm.first_host("gpu1,gpu2") == "gpu1"
    assert slurm.first_host("vm") == "vm"


def test_step():
    task = slurm.step(TASK)
    assert task is not None and (task.tasks, task.rank, task.local_rank, task.local_size) == (6, 4, 1, 3)
    assert task.first_host() == "n07" and task.plugin == "none" and task.port() == slurm.BASE_PORT + 42 * 8
    assert slurm.layout_ranks_per_node(TASK) == 3
    assert slurm.layout_ranks_per_node({**TASK, "SLURM_DISTRIBUTION": "cyclic"}) == 0
    assert slurm.layout_ranks_per_node({**TASK, "SLURM_STEP_TASKS_PER_NODE": "4,2"}) == 0
    assert slurm.step({k: v for k, v in TASK.items() if k != "SLURM_STEP_ID"}) is None  # a batch script's process
    assert slurm.plugin({**TASK, "PMI_FD": "5"}) == "pmi2"
    assert slurm.plugin({**TASK, "PMIX_RANK": "4"}) == "pmix"
    assert slurm.plugin({**TASK, "SLURM_MPI_TYPE": "pmix_v4"}) == "pmix_v4"


def _job_env(slurm_) -> dict[str, str]:
    env = slurm_.env()
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # shgcn-train, as an activated venv
    env.pop("SHGCN_SRUN_MPI", None)
    return env


@pytest.mark.slow
@pytest.mark.slurm
@pytest.mark.mpi
@pytest.mark.timeout(600)
def test_sbatch_equals_mpirun(slurm, mpi_stores, tmp_path):
    """``sbatch --ntasks=2 examples/slurm/train.sbatch STORE`` trains what ``mpirun -n 2`` trains: the same
    losses and bytes, with the ranks per node taken from Slurm's layout."""
    path = mpi_stores["undirected", 2]
    args = ["--epochs", "3", "--exchange", "node"]
    res = train(2, path, *args, log=tmp_path / "mpirun.jsonl", timeout=300)
    assert res.returncode == 0, res.stderr
    log = tmp_path / "slurm.jsonl"
    out = tmp_path / "job.out"
    res = slurm.sbatch_wait(["--ntasks=2", "--overcommit", f"--output={out}", f"--chdir={tmp_path}", str(EXAMPLE),
                             str(path), *args, "--quiet", "--log", str(log)], env=_job_env(slurm), timeout=300)
    assert res.returncode == 0, f"{res.stderr}\n{out.read_text() if out.exists() else ''}\n{slurm.logs()}"
    (h1, e1), (h2, e2) = read_log(tmp_path / "mpirun.jsonl"), read_log(log)
    assert [e.loss for e in e2] == [e.loss for e in e1]
    assert [e.bytes_sent for e in e2] == [e.bytes_sent for e in e1]
    assert [e.path_bytes for e in e2] == [e.path_bytes for e in e1]
    assert h2.ranks_per_node == 2 and h2.nodes == h1.nodes


@pytest.mark.slow
@pytest.mark.slurm
@pytest.mark.timeout(300)
def test_srun_plugin_mismatch_is_one_line(slurm, mpi_stores, tmp_path):
    """``srun --mpi=none`` under mpi4py's MPICH: every task would be a job of 1 rank. Refused before MPI_Init,
    in one line naming the plugin and the MPI, exit code 2."""
    path = mpi_stores["undirected", 2]
    res = slurm.run(["srun", "--ntasks=2", "--overcommit", "--mpi=none", f"--chdir={tmp_path}", "shgcn-train",
                     str(path), "--epochs", "1", "--quiet"], env=_job_env(slurm), timeout=200)
    assert res.returncode == 2, res.stderr
    lines = [line for line in res.stderr.splitlines() if not line.startswith("srun:")]
    assert len(lines) == 1, res.stderr
    assert "srun --mpi=none" in lines[0] and "MPICH" in lines[0] and "--mpi=pmi2" in lines[0]
    assert "Traceback" not in res.stderr


def test_the_ranks_on_this_node_under_srun(monkeypatch):
    """The trainer's local size (each rank's share of the cores) under srun: Slurm's tasks on this node, not the
    job's PMI_SIZE; Hydra's own count first (mpirun inside an allocation)."""
    from shgcn.trainer.cli import local_ranks

    for var in ("MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE", "MV2_COMM_WORLD_LOCAL_SIZE"):
        monkeypatch.delenv(var, raising=False)
    for var, value in {**TASK, "PMI_SIZE": "6"}.items():
        monkeypatch.setenv(var, value)
    assert local_ranks() == 3
    monkeypatch.setenv("MPI_LOCALNRANKS", "2")
    assert local_ranks() == 2
