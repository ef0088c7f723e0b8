"""Issue 51's hostile cases, re-run as one set (issue 51.4): a sample from every family of the issue's list,
each as a user types it, ends with exit 2 and one line naming what was wrong (no traceback, no hang, nothing
left behind). Each case has its own test beside the module that refuses it; this set shows that none of them
regressed when the families are taken together. ``pipeline`` commands run in this process (:func:`run_main`:
every case here is refused before a Dask cluster would start); ``shgcn-train`` runs as one process."""

import os
import subprocess
import sys

import numpy as np
import pytest
from helpers import run_main
from helpers.mpi import TRAIN

LONG = "x" * 300  # a file name longer than any file system takes
SBM = "sbm:n=200,classes=3,degree=6,features=4,seed=0"


def _files(d):
    """The hostile inputs of the plan's family (case 1), written into ``d``."""
    (d / "empty.txt").write_text("")
    os.mkfifo(d / "fifo.txt")
    (d / "adir").mkdir()
    (d / "neg.graph").write_text("-5 -3\n")
    np.savez(d / "huge.npz", shape=np.array([10**12, 10**12]), indices=np.zeros(3, np.int32),
             indptr=np.zeros(2, np.int32), data=np.ones(3), format=np.array(b"csr"))
    (d / "list.json").write_text("[1, 2]")
    os.mkfifo(d / "machine.json")


# (case, the command's arguments ({d}: the inputs' folder, {s}: a built store), a fragment of its one line)
PIPELINE = [
    ("plan: a typo'd dataset", "build cora_typo --parts 2 --plan --out {d}/o.zarr", "not a known dataset"),
    ("plan: a missing file", "build {d}/missing.txt --parts 2 --plan --out {d}/o.zarr", "missing.txt: no such file"),
    ("plan: an empty file", "build {d}/empty.txt --parts 2 --plan --out {d}/o.zarr", "empty.txt: empty file"),
    ("plan: a FIFO", "build {d}/fifo.txt --parts 2 --plan --out {d}/o.zarr", "fifo.txt: is a FIFO"),
    ("plan: /dev/zero", "build /dev/zero --parts 2 --plan --out {d}/o.zarr", "/dev/zero: is a character device"),
    ("plan: a directory", "build {d}/adir --parts 2 --plan --out {d}/o.zarr", "file not found"),
    ("plan: METIS header -5 -3", "build {d}/neg.graph --parts 2 --plan --out {d}/o.zarr", "declared size -5"),
    ("plan: R-MAT scale -3", "build rmat:scale=-3 --parts 2 --plan --out {d}/o.zarr", "scale=-3"),
    ("plan: R-MAT scale 100", "build rmat:scale=100 --parts 2 --plan --out {d}/o.zarr", "scale=100"),
    ("plan: sbm:n=0", "build sbm:n=0 --parts 2 --plan --out {d}/o.zarr", "sbm: need n >= 2"),
    ("plan: sbm:n=1e30", "build sbm:n=1e30 --parts 2 --plan --out {d}/o.zarr", "sbm:n=1e30: the plan needs"),
    ("plan: --parts 1000000", "build sbm:n=100 --parts 1000000 --plan --out {d}/o.zarr", "--parts 1000000"),
    ("plan: an npz of 10^12 vertices", "build {d}/huge.npz --parts 2 --plan --out {d}/o.zarr", "the plan needs"),
    ("threads: build --threads 100000", "build " + SBM + " --parts 2 --threads 100000 --out {d}/o.zarr",
     "--threads 100000"),
    ("threads: build --threads -1", "build " + SBM + " --parts 2 --threads -1 --out {d}/o.zarr", "--threads -1"),
    ("threads: --workers -2", "build " + SBM + " --parts 2 --workers -2 --out {d}/o.zarr", "--workers -2"),
    ("options: --memory-limit 1e400", "build " + SBM + " --parts 2 --memory-limit 1e400 --out {d}/o.zarr",
     "--memory-limit"),
    ("options: --shp-min-gain nan", "build " + SBM + " --parts 2 --model shp --shp-min-gain nan --out {d}/o.zarr",
     "--shp-min-gain"),
    ("options: shp's budget without hp", "build " + SBM + " --parts 2 --model gp,shp --shp-time-factor 2 "
     "--out {d}/o.zarr", "--shp-time-factor"),
    ("simulate: link=0GB/s", "simulate {s} --machine link=0GB/s", "'link=0GB/s'"),
    ("simulate: a negative compute factor", "simulate {s} --machine compute=this*-2", "'compute=this*-2'"),
    ("simulate: a NaN compute factor", "simulate {s} --machine compute=this*nan", "'compute=this*nan'"),
    ("simulate: ranks=", "simulate {s} --machine ranks=", "'ranks='"),
    ("simulate: ranks=abc", "simulate {s} --machine ranks=abc", "'ranks=abc'"),
    ("simulate: ranks=1e3", "simulate {s} --machine ranks=1e3", "'ranks=1e3'"),
    ("simulate: 1..5us", "simulate {s} --machine intra=1..5us:1GB/s", "'1..5us' is not a time"),
    ("simulate: a JSON list", "simulate {s} --machine {d}/list.json", "list.json"),
    ("simulate: a FIFO machine", "simulate {s} --machine {d}/machine.json", "machine.json: not a regular file"),
    ("simulate: /dev/zero machine", "simulate {s} --machine /dev/zero", "/dev/zero"),
    ("simulate: --exchange ''", "simulate {s} --exchange=", "--exchange ''"),
    ("simulate: 2d on 3 ranks", "simulate {s} --algorithm 2d --ranks 3", "--algorithm 2d"),
    ("simulate: 1.5d --replication 8", "simulate {s} --algorithm 1.5d --replication 8", "--replication"),
]


@pytest.mark.parametrize("case, command, fragment", PIPELINE, ids=[c[0] for c in PIPELINE])
def test_the_issues_pipeline_cases_are_one_line_each(built, tmp_path, case, command, fragment, monkeypatch):
    _files(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    monkeypatch.chdir(tmp_path)
    res = run_main(*command.format(d=tmp_path, s=built.path).split(" "))
    lines = [x for x in res.stderr.splitlines() if x.strip()]
    assert res.returncode == 2 and len(lines) == 1 and "Traceback" not in res.stderr, (case, res.stderr)
    assert lines[0].startswith("pipeline: error: ") and fragment in lines[0], (case, lines[0])
    assert sorted(p.name for p in tmp_path.iterdir()) == before, case  # no store, partial, lock or report


TRAINER = [
    ("threads: --threads 100000 (was a segfault)", ["--threads", "100000"], "--threads 100000: at most"),
    ("threads: --threads -1", ["--threads", "-1"], "--threads -1"),
    ("options: --hidden 100000000 (allocated for minutes)", ["--hidden", "100000000"], "--hidden 100000000: the "
     "model's weights"),
    ("options: --memory-limit 1e400", ["--memory-limit", "1e400"], "--memory-limit: more bytes than can be counted"),
    ("options: --exchange node --algorithm 2d", ["--exchange", "node", "--algorithm", "2d"], "--exchange node"),
    ("outputs: a 300-byte --log", ["--log", LONG], "--log: a name of 300 bytes"),
    ("outputs: a 300-byte --checkpoint", ["--checkpoint", LONG], "--checkpoint: a name of 300 bytes"),
    ("threads: NUMBA_NUM_THREADS=0", ["ENV", "NUMBA_NUM_THREADS=0"], "NUMBA_NUM_THREADS='0'"),
]


@pytest.fixture(scope="module")
def p1(tmp_path_factory, client):
    from helpers.stores import make

    return make(tmp_path_factory.mktemp("issue51") / "p1.zarr", client, source=SBM, parts=1, models=("rp",)).path


@pytest.mark.parametrize("case, args, fragment", TRAINER, ids=[c[0] for c in TRAINER])
def test_the_issues_trainer_cases_are_one_line_each(p1, tmp_path, case, args, fragment):
    env = dict(os.environ)
    if args[0] == "ENV":
        key, _, value = args[1].partition("=")
        env[key], args = value, []
    res = subprocess.run([sys.executable, str(TRAIN), str(p1), "--quiet", "--epochs", "2", *args], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120, env=env)
    lines = [x for x in res.stderr.splitlines() if x.strip()]
    assert res.returncode == 2 and len(lines) == 1 and "Traceback" not in res.stderr, (case, res.stderr)
    assert lines[0].startswith("shgcn-train: error: ") and fragment in lines[0], (case, lines[0])
    assert list(tmp_path.iterdir()) == [], case
