"""The report's stores and run logs, built once for tests/notebooks: ``stores`` (a store with every model, one
with hp only, and a real 2-rank run log: mpirun), ``opened`` (the first, opened, and the log read), ``rendered``
(the first's report with the log, by ``pipeline report``, once per format), and ``hand_log`` (run logs written
record by record, for exact figures and tables without a training run)."""

import pytest
from helpers import run_cli
from helpers.mpi import train

from shgcn import store
from shgcn.core import runlog
from shgcn.notebooks import report
from shgcn.pipeline.builder import build
from shgcn.pipeline.config import BuildConfig

SBM = "sbm:n=400,classes=4,degree=6,features=8,seed=2"


@pytest.fixture(scope="session")
def stores(tmp_path_factory, client):
    root = tmp_path_factory.mktemp("report")
    full = root / "full.zarr"
    build(BuildConfig(source=SBM, out=str(full), parts=2, models=("rp", "gp", "hp", "shp")), client,
          echo=lambda *a: None)
    bare = root / "bare.zarr"
    build(BuildConfig(source=SBM, out=str(bare), parts=2, models=("hp",)), client, echo=lambda *a: None)
    log = root / "run.jsonl"
    res = train(2, full, "--epochs", 5, log=log)
    assert res.returncode == 0, res.stderr
    return full, bare, log


@pytest.fixture(scope="session")
def opened(stores):
    full, _, log = stores
    return store.open_store(full), report.load_runs([str(log)])


@pytest.fixture(scope="session")
def rendered(stores, tmp_path_factory):
    """``rendered(ext)``: ``pipeline report FULL --run LOG --out report.EXT`` (html or ipynb), run once per format in
    the session (a render executes the whole notebook); returns the output's path and the command's result."""
    full, _, log = stores
    root = tmp_path_factory.mktemp("full-report")
    done = {}

    def render(ext: str):
        if ext not in done:
            out = root / f"report.{ext}"
            done[ext] = out, run_cli("report", str(full), "--run", str(log), "--out", str(out))
        return done[ext]
    return render


@pytest.fixture
def hand_log(tmp_path):
    """``hand_log(name, header, epochs)``: a run log written by the trainer's writer, read back."""
    def write(name: str, hdr: runlog.Header, epochs: list[runlog.Epoch]) -> runlog.RunLog:
        path = tmp_path / name
        with runlog.RunLogWriter(path, hdr) as w:
            for e in epochs:
                w.write(e)
        return runlog.read_run_log(path)
    return write
