"""The build's workers as batch jobs (pipeline/runtime/jobqueue.py): the options' checks, and under a real Slurm
a build whose workers are SLURMCluster's jobs, byte-identical to the embedded build's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from shgcn.pipeline.cli import parser as build_parser
from shgcn.pipeline.errors import UserError
from shgcn.pipeline.runtime.jobqueue import BatchConfig, batch_config

BUILD_SCRIPT = Path(__file__).resolve().parents[3] / "examples" / "slurm" / "build.sbatch"
SOURCE = "sbm:n=300,classes=3,degree=5,features=4,seed=7"


def parse(*extra: str):
    return build_parser().parse_args(["build", SOURCE, "--parts", "2", "--out", "x.zarr", *extra])


def test_batch_config_from_the_command_line():
    assert batch_config(parse()) is None
    cfg = batch_config(parse("--cluster", "slurm", "--cluster-cores", "2", "--cluster-memory", "2GiB",
                             "--cluster-option=--account=a", "--cluster-option=--qos=b"))
    assert cfg == BatchConfig("slurm", jobs=1, cores=2, memory="2GiB", options=("--account=a", "--qos=b"))


@pytest.mark.parametrize("extra,match", [
    (("--cluster-memory", "lots"), "--cluster-memory 'lots': not a size"),
    (("--cluster-jobs", "0"), "--cluster-jobs 0: must be >= 1"),
    (("--cluster-cores", "0"), "--cluster-cores 0: must be >= 1"),
    (("--cluster-wait", "0"), "--cluster-wait 0"),
    (("--scheduler", "tcp://127.0.0.1:1"), "--cluster and --scheduler: give one"),
    (("--workers", "4"), "--workers and --processes shape the embedded cluster"),
])
def test_bad_options_are_one_line(extra, match):
    with pytest.raises(UserError, match=match):
        batch_config(parse("--cluster", "slurm", *extra))


def build(out: Path, *extra: str, env=None, cwd=None) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "shgcn.pipeline", "build", SOURCE, "--parts", "2", "--model", "rp,gp", "--out",
           str(out), *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=400, env=env, cwd=cwd)


@pytest.mark.slow
@pytest.mark.slurm
@pytest.mark.timeout(900)
def test_a_slurm_built_store_is_the_embedded_builds(slurm, tmp_path):
    """``pipeline build ... --cluster slurm``: the worker is a Slurm job (SLURMCluster), the dashboard link is
    shown, and the store is byte for byte the embedded build's."""
    from benchmarks.build.compare_stores import compare

    res = build(tmp_path / "embedded.zarr")
    assert res.returncode == 0, res.stderr
    env = slurm.env()
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    res = build(tmp_path / "slurm.zarr", "--cluster", "slurm", "--cluster-cores", "1", "--cluster-memory", "2GiB",
                "--cluster-wait", "120", env=env, cwd=tmp_path)
    assert res.returncode == 0, res.stderr + slurm.logs()
    assert "Dask dashboard: http://127.0.0.1:" in res.stderr + res.stdout
    assert compare(tmp_path / "embedded.zarr", tmp_path / "slurm.zarr") == []
    assert list(tmp_path.glob("slurm-*.out"))  # the worker ran as a Slurm job (its output file)
    # a worker job Slurm refuses is one line, at once (sbatch --test-only), not a wait for a worker
    res = build(tmp_path / "refused.zarr", "--cluster", "slurm", "--cluster-queue", "nosuch", env=env, cwd=tmp_path)
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith("pipeline: error: --cluster slurm: Slurm refuses the worker job: ") and \
        "partition" in last.lower(), res.stderr
    # the same from a job: examples/slurm/build.sbatch runs the build in a batch job, its worker a job of its own
    out = tmp_path / "job.out"
    res = slurm.sbatch_wait([f"--output={out}", f"--chdir={tmp_path}", "--mem=1G", str(BUILD_SCRIPT), SOURCE, "--parts",
                             "2", "--model", "rp,gp", "--out", str(tmp_path / "job.zarr"), "--cluster-memory", "2GiB",
                             "--cluster-wait", "120"], env=env, timeout=400)
    assert res.returncode == 0, res.stderr + (out.read_text() if out.exists() else "") + slurm.logs()
    assert compare(tmp_path / "embedded.zarr", tmp_path / "job.zarr") == []


@pytest.mark.slow
@pytest.mark.slurm
@pytest.mark.timeout(600)
def test_an_existing_slurm_clusters_scheduler(slurm, tmp_path, monkeypatch):
    """A SLURMCluster the user started (in a notebook, a script) takes the build through ``--scheduler``, as any
    scheduler does: the store is the embedded build's."""
    from dask_jobqueue import SLURMCluster
    from distributed import Client

    from benchmarks.build.compare_stores import compare

    monkeypatch.setenv("SLURM_CONF", str(slurm.conf))
    monkeypatch.chdir(tmp_path)
    res = build(tmp_path / "embedded.zarr")
    assert res.returncode == 0, res.stderr
    with SLURMCluster(cores=1, processes=1, memory="2GiB", python=sys.executable,
                      scheduler_options={"dashboard_address": "127.0.0.1:0"}) as cluster, Client(cluster) as client:
        cluster.scale(jobs=1)
        client.wait_for_workers(1, timeout=120)
        res = build(tmp_path / "scheduler.zarr", "--scheduler", cluster.scheduler_address)
    assert res.returncode == 0, res.stderr + slurm.logs()
    assert compare(tmp_path / "embedded.zarr", tmp_path / "scheduler.zarr") == []


def test_a_batch_system_that_is_not_here_is_one_line(monkeypatch):
    """--cluster pbs where there is no qsub: one line naming the command, before any scheduler starts."""
    import shutil

    from shgcn.pipeline.runtime.jobqueue import start

    pytest.importorskip("dask_jobqueue")
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(UserError, match=r"--cluster pbs: qsub not found"):
        start(BatchConfig("pbs"), "127.0.0.1:0")
