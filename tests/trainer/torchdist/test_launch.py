"""Starting torch.distributed (trainer/torchdist/launch.py): the launcher is recognized from its
environment; one process, torchrun and mpirun each give the right rank and size; each rank's GPU and the
backend for a device (NCCL only when every rank of the node has a GPU of its own)."""

import json
import os
import re
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

from helpers.mpi import mpirun  # noqa: E402

from shgcn.core.errors import UserError  # noqa: E402
from shgcn.trainer.torchdist import launch  # noqa: E402
from shgcn.trainer.torchdist.launch import (  # noqa: E402
    choose_backend,
    device_backend,
    launched_by_mpi,
    local_device,
    local_world,
    stages_through_host,
)

LAUNCH_VARS = [v for pair in (*launch.LOCAL_VARS, *launch.WORLD_VARS) for v in pair]

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


@pytest.fixture
def no_launcher(monkeypatch):
    for var in LAUNCH_VARS:
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def test_the_rank_on_the_node_comes_from_the_launcher(no_launcher):
    assert local_world() == (0, 1)  # one process
    no_launcher.setenv("RANK", "5")
    no_launcher.setenv("WORLD_SIZE", "8")
    assert local_world() == (5, 8)  # a launcher that says nothing of nodes: as if all ran here
    no_launcher.setenv("MPI_LOCALRANKID", "2")
    no_launcher.setenv("MPI_LOCALNRANKS", "3")
    assert local_world() == (2, 3)  # MPICH
    no_launcher.setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1")
    no_launcher.setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "4")
    assert local_world() == (1, 4)  # Open MPI
    no_launcher.setenv("LOCAL_RANK", "3")
    no_launcher.setenv("LOCAL_WORLD_SIZE", "4")
    assert local_world() == (3, 4)  # torchrun


def gpus(monkeypatch, count, nccl=True):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: count > 0)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: count)
    monkeypatch.setattr(launch.dist, "is_nccl_available", lambda: nccl)


def test_each_rank_gets_the_gpu_of_its_rank_on_the_node(no_launcher):
    gpus(no_launcher, 2)
    assert local_device("cpu") == torch.device("cpu") and local_device() == torch.device("cpu")
    assert local_device("cuda") == torch.device("cuda", 0)
    no_launcher.setenv("LOCAL_RANK", "3")
    no_launcher.setenv("LOCAL_WORLD_SIZE", "4")
    assert local_device("cuda") == torch.device("cuda", 1)  # 3 % 2: two ranks per GPU
    assert local_device("cuda:0") == torch.device("cuda", 0)  # a GPU named is kept
    gpus(no_launcher, 0)
    with pytest.raises(UserError, match="torch sees no CUDA GPU here"):
        local_device("cuda")


@pytest.mark.parametrize("device,local,count,nccl,want", [
    ("cpu", 1, 0, False, "gloo"),
    ("cpu", 2, 4, True, "gloo"),           # the CPU: gloo whatever GPUs there are
    ("cuda", 1, 1, True, "nccl"),
    ("cuda", 4, 4, True, "nccl"),          # a GPU per rank
    ("cuda:1", 2, 8, True, "nccl"),
    ("cuda", 3, 2, True, "gloo"),          # ranks sharing a GPU: NCCL refuses them
    ("cuda", 2, 2, False, "gloo"),         # a torch without NCCL
    ("cuda", 1, 0, True, "gloo"),
])
def test_the_backend_for_a_device(monkeypatch, device, local, count, nccl, want):
    gpus(monkeypatch, count, nccl)
    assert choose_backend(device, local, count) == want
    assert choose_backend(torch.device(device), local, count) == want


def test_the_backend_defaults_to_the_node_and_its_gpus(no_launcher):
    gpus(no_launcher, 2)
    no_launcher.setenv("LOCAL_RANK", "0")
    no_launcher.setenv("LOCAL_WORLD_SIZE", "2")
    assert choose_backend("cuda") == "nccl"
    no_launcher.setenv("LOCAL_WORLD_SIZE", "3")
    assert choose_backend("cuda") == "gloo"


@pytest.mark.parametrize("config,cpu,cuda,staged", [
    ("cpu:gloo,cuda:gloo", "gloo", "gloo", True),  # init_from_env("gloo")
    ("cpu:gloo,cuda:nccl", "gloo", "nccl", False),  # init_from_env("nccl")
    ("cuda:nccl", None, "nccl", False),  # a user's own NCCL-only group
    ("mpi", "mpi", "mpi", True),
])
def test_what_crosses_through_host_memory(monkeypatch, config, cpu, cuda, staged):
    monkeypatch.setattr(launch.dist, "get_backend_config", lambda group=None: config)
    assert device_backend("cpu") == cpu and device_backend(torch.device("cuda", 1)) == cuda
    assert stages_through_host("cuda:0") is staged and stages_through_host(torch.device("cuda")) is staged
    assert not stages_through_host("cpu") and not stages_through_host("meta")


def test_a_gpu_rank_starts_on_its_gpu(no_launcher):
    """init_from_env with a GPU makes it the current one; with NCCL the group has gloo beside it (for CPU
    tensors) and NCCL's communicator is made at once (device_id)."""
    gpus(no_launcher, 2)
    calls = []
    no_launcher.setattr(launch.dist, "is_initialized", lambda: False)
    no_launcher.setattr(launch.dist, "init_process_group", lambda backend, **kw: calls.append((backend, kw)))
    no_launcher.setattr(launch.dist, "get_rank", lambda: 0)
    no_launcher.setattr(launch.dist, "get_world_size", lambda: 1)
    no_launcher.setattr(launch.atexit, "register", lambda f: None)
    no_launcher.setattr(torch.cuda, "set_device", lambda d: calls.append(("set_device", d)))
    assert launch.init_from_env("nccl", device=torch.device("cuda", 1)) == (0, 1)
    assert calls[0] == ("set_device", torch.device("cuda", 1))
    assert calls[1][0] == "cpu:gloo,cuda:nccl" and calls[1][1]["device_id"] == torch.device("cuda", 1)
    calls.clear()
    launch.init_from_env("gloo", device="cuda:0")
    assert calls[0] == ("set_device", torch.device("cuda", 0))
    assert calls[1][0] == "gloo" and "device_id" not in calls[1][1]
    calls.clear()
    launch.init_from_env("gloo", device="cpu")
    assert len(calls) == 1 and calls[0][0] == "gloo" and "device_id" not in calls[0][1]


def test_slurm_task_without_mpi(no_launcher):
    """srun without MPI: the rank on the node and the ranks there from Slurm's variables; an MPI launcher's or
    torchrun's variables come first."""
    for var in ("SLURM_STEP_NUM_TASKS", "SLURM_PROCID", "SLURM_STEP_ID", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE"):
        no_launcher.delenv(var, raising=False)
    assert launch.slurm_task() is None
    for var, value in {"SLURM_STEP_NUM_TASKS": "4", "SLURM_PROCID": "3", "SLURM_STEP_ID": "0", "SLURM_LOCALID": "1",
                       "SLURM_NODEID": "1", "SLURM_STEP_TASKS_PER_NODE": "2(x2)", "SLURM_STEP_NODELIST": "n[1-2]"}.items():
        no_launcher.setenv(var, value)
    assert launch.slurm_task() is not None and local_world() == (1, 2) and launch.job_rank() == 3
    no_launcher.setenv("PMI_SIZE", "4")  # srun --mpi=pmi2: MPI's rendezvous
    assert launch.slurm_task() is None


@pytest.mark.slow
@pytest.mark.slurm
@pytest.mark.timeout(600)
def test_srun_gives_one_process_losses(slurm, mpi_stores, tmp_path):
    """``srun -n 2 python examples/torch_pyg.py STORE`` (no MPI: Slurm's variables, rank 0's store on the first
    node) trains what one process trains: the same losses."""
    from pathlib import Path

    import numpy as np

    example = Path(__file__).resolve().parents[3] / "examples" / "torch_pyg.py"

    def losses(prefix, path, log):
        cmd = [*prefix, sys.executable, str(example), str(path), "--epochs", "5", "--log-file", str(log)]
        env = {k: v for k, v in slurm.env().items() if k not in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
        assert res.returncode == 0, res.stdout + res.stderr + slurm.logs()
        return np.array([json.loads(line)["loss"] for line in log.read_text().splitlines() if '"loss"' in line])

    one = losses([], mpi_stores["undirected", 1], tmp_path / "one.jsonl")
    two = losses(["srun", "--ntasks=2", "--overcommit", "--mpi=none", "--kill-on-bad-exit=1"],
                 mpi_stores["undirected", 2], tmp_path / "srun.jsonl")
    assert one.shape == (5,)
    np.testing.assert_allclose(two, one, rtol=1e-5)


def test_torchrun_under_mpirun_is_one_line_before_mpi_starts(monkeypatch):
    """mpirun -n 2 torchrun --nproc-per-node 2: torchrun's workers see its RANK/WORLD_SIZE and mpirun's PMI_SIZE;
    MPICH's PMI_Init aborted each with stacks. Refused before mpi4py is touched; one worker per MPI rank says it."""
    for k, v in {"TORCHELASTIC_RUN_ID": "none", "PMI_SIZE": "2", "PMI_RANK": "0", "RANK": "1", "WORLD_SIZE": "2",
                 "LOCAL_RANK": "1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setitem(sys.modules, "mpi4py", None)  # importing it here would fail the test
    assert launch.nested_launch() and launch.job_rank() == 1
    with pytest.raises(UserError, match=r"started by torchrun under mpirun .*: use one, mpirun -n N python SCRIPT"):
        launch._check_launcher_env()
    monkeypatch.setenv("LOCAL_RANK", "0")
    assert launch.job_rank() == 0
    monkeypatch.delenv("TORCHELASTIC_RUN_ID")
    assert not launch.nested_launch()


def test_init_from_env_refuses_an_unknown_backend_in_one_line():
    with pytest.raises(UserError, match=r"^init_from_env\(backend='bogus'\): choose gloo, nccl or mpi"):
        launch.init_from_env("bogus")
