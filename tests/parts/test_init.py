"""The extension interfaces (parts/__init__.py, ``shgcn.parts``): every name a plugin imports resolves, importing
the module imports nothing heavy, and the plugin of docs/parts.md (one file per kind, importing only
``shgcn.parts``) is seen by shgcn-train, pipeline build, pipeline simulate, the run-log reader and pipeline report, and its tests
pass with shgcn.testing's pytest plugin alone: no conftest.py, no warnings."""

import os
import re
import subprocess
import sys

import pytest
from helpers import REPO

import shgcn.parts as parts

FILES = ("my_model", "my_reader", "my_sampler", "my_arch", "my_exchange", "my_machine")
PLUGINS = ",".join(f"{f}:register" for f in FILES)


def test_every_name_resolves_and_an_unknown_one_is_an_attribute_error():
    assert sorted(parts.__all__) == sorted(parts._WHERE) and parts.__dir__() == parts.__all__
    for name in parts.__all__:
        assert getattr(parts, name) is not None, name
    assert parts.MODELS.option == "--model" and parts.SAMPLERS.option == "--sampler" and parts.ARCHS.option == "--arch"
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        parts.Nope  # noqa: B018


def test_importing_it_imports_nothing_heavy():
    code = ("import sys, shgcn.parts\nprint(sorted({m.split('.')[0] for m in sys.modules} & {'numba', 'dask', "
            "'zarr', 'mpi4py', 'scipy', 'distributed', 'torch'}))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and res.stdout.strip() == "[]", res.stdout + res.stderr


@pytest.fixture
def user(tmp_path):
    """docs/parts.md's files, written as a user would (each ```python block opens with ``# <file>.py``), and
    the environment that names them as plugins."""
    text = (REPO / "docs" / "parts.md").read_text()
    for block in re.findall(r"```python\n(.*?)```", text, flags=re.S):
        name = block.splitlines()[0].removeprefix("# ").strip()
        (tmp_path / name).write_text(block)
    assert {f"{f}.py" for f in FILES} | {"test_my_parts.py"} <= {p.name for p in tmp_path.iterdir()}
    for f in FILES:
        assert set(re.findall(r"^from (shgcn\S*)", (tmp_path / f"{f}.py").read_text(), re.M)) == {"shgcn.parts"}, f
    (tmp_path / "edges.pairs").write_text("".join(f"{i} {(i * 7 + 1) % 60}\n{i} {(i + 1) % 60}\n" for i in range(60)))
    env = {**os.environ, "SHGCN_PLUGINS": PLUGINS, "PYTHONPATH": str(tmp_path), "NUMBA_NUM_THREADS": "1"}
    return tmp_path, env


def run(args, env, cwd, timeout=300, ranks=0):
    from shgcn.testing.runs import mpirun

    launch = [mpirun(), "-n", str(ranks)] if ranks else []
    res = subprocess.run([*launch, sys.executable, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    return res


@pytest.mark.mpi
def test_the_plugin_is_a_part_of_every_command(user):
    path, env = user
    helptext = run([str(REPO / "trainer" / "train.py"), "--help"], env, path).stdout
    assert all(w in helptext for w in ("toygcn", "--toy-scale", "toy-p2p", "strided"))
    pipeline = ["-m", "shgcn.pipeline.cli"]
    run([*pipeline, "build", "edges.pairs", "--out", "g.zarr", "--parts", "2", "--model", "stripes",
         "--stripe-shift", "1", "--workers", "1", "--threads", "1"], env, path, timeout=600)
    train = [str(REPO / "trainer" / "train.py"), "g.zarr", "--epochs", "2", "--threads", "1", "--quiet"]
    run([*train, "--arch", "toygcn", "--toy-scale", "2", "--exchange", "toy-p2p",
         "--log", "run.jsonl"], env, path, ranks=2)
    run([*train, "--mode", "minibatch", "--sampler", "strided", "--batch-size", "20"], env, path, ranks=2)
    sim = run([*pipeline, "simulate", "g.zarr", "--exchange", "p2p,toy-p2p", "--arch", "toygcn", "--ranks", "2"],
              env, path).stdout
    assert "toy-p2p" in sim
    cluster = run([*pipeline, "simulate", "g.zarr", "--machine", "my-cluster", "--ranks", "8"], env, path).stdout
    assert "machine my-cluster: 4 ranks a node" in cluster and "at 4 ranks per node" in cluster, cluster[-2000:]
    job = run(["-c", "from shgcn.core.runlog import read_run_log\nprint(read_run_log('run.jsonl').header.job().arch)"],
              env, path).stdout
    assert job.strip() == "toygcn"
    pytest.importorskip("papermill")  # the report's extra
    run([*pipeline, "report", "g.zarr", "--run", "run.jsonl", "--out", "report.html"], env, path, timeout=600)
    assert "P=2 toy-p2p stripes, full-batch" in (path / "report.html").read_text()  # the run, with its parts


@pytest.mark.mpi
@pytest.mark.parametrize("marks", [pytest.param("not mpi", id="quick"),
                                   pytest.param("", id="all", marks=[pytest.mark.slow, pytest.mark.mpi])])
def test_its_tests_pass_with_no_conftest_and_no_warnings(user, marks):
    path, env = user
    res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", marks, "-W",
                          "error::pytest.PytestWarning", "test_my_parts.py"], capture_output=True, text=True, env=env,
                         cwd=path, timeout=1800)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    assert "passed" in res.stdout and "warning" not in res.stdout.lower(), res.stdout[-2000:]
    assert not (path / "conftest.py").exists()
