"""The fault suite, issue 33's cases as a user meets them: each from the
command line, end to end (the readers' and options' own tests are beside
their modules and in test_values.py). Each case: one line on stderr naming
the file or option, exit code 2, and nothing left behind (no
``.partial-*``, ``.lock`` or ``.tmp`` file, no half store)."""

import importlib.util
import json
import os
import shutil
import subprocess
import sys

import pytest
from helpers import build_cli, one_line, run_cli, run_main
from helpers.datasets import saint
from helpers.mpi import TRAIN

SBM = "sbm:n=200,classes=3,degree=6,features=4,seed=0"
ROLES = {"tr": [0, 1, 2], "va": [3, 6], "te": [4, 5]}


def _nothing_but(directory, *names):
    assert sorted(p.name for p in directory.iterdir()) == sorted(names)


def test_a_role_file_that_cannot_train_stops_the_build(tmp_path):
    """Case 5: ``"tr": []`` built and trained on nothing; now one line from the command, nothing left behind."""
    root = saint(tmp_path / "ds")
    (root / "role.json").write_text(json.dumps({**ROLES, "tr": []}))
    res = build_cli(str(root), "--parts", "2", "--model", "rp", "--out", str(tmp_path / "s.zarr"))
    one_line(res, f"{root / 'role.json'}", "the 'tr' list holds no vertex: nothing to train on")
    _nothing_but(tmp_path, "ds")


@pytest.mark.parametrize("change, message", [
    ({"tr": [True, False]}, "(tr): expected a flat list of vertex ids, got true/false values"),
    ({"tr": ["0", "1"]}, "(tr): expected a flat list of vertex ids, got values that are not numbers"),
    ({"tr": [{"id": 0}]}, "(tr): expected a flat list of vertex ids, got values that are not numbers"),
    ({"tr": [[0], [1, 2]]}, "(tr): expected a flat list of vertex ids"),
    ({"va": None}, "(va): expected a flat list of vertex ids, got a single value or null"),
])
def test_a_role_list_that_is_not_vertex_ids_is_one_message(tmp_path, change, message):
    """Case 6: lists of strings, dicts, ragged lists or null were tracebacks; JSON booleans became vertex ids
    1 and 0. The reader's message, which the command prints as the case above does (a UserError, exit 2)."""
    from shgcn.pipeline.errors import UserError
    from shgcn.pipeline.sources.saint import roles

    path = tmp_path / "role.json"
    path.write_text(json.dumps({**ROLES, **change}))
    with pytest.raises(UserError) as e:
        roles(str(path), 7)
    assert str(path) in str(e.value) and message in str(e.value) and "\n" not in str(e.value)


def test_a_process_substitution_is_a_pipe_not_an_empty_file(tmp_path):
    """Case 8: ``<(cat g.txt)`` was called an empty file."""
    g = tmp_path / "g.txt"
    g.write_text("0 1\n1 2\n2 0\n")
    res = subprocess.run(["bash", "-c", f'"{sys.executable}" -m shgcn.pipeline build <(cat "{g}") --parts 2 '
                          f'--model rp --out "{tmp_path / "s.zarr"}"'], capture_output=True, text=True, timeout=120)
    one_line(res, "/dev/fd/", "is a FIFO or pipe (such as <(...))", "write the data to a file first")
    assert "empty file" not in res.stderr
    _nothing_but(tmp_path, "g.txt")


def test_a_link_is_described_as_a_link(tmp_path):
    """Case 8: a link to a file was described as "a directory (a link)"; for a store's --out, a link to a
    store was "not a shgcn store"."""
    target = tmp_path / "mine.txt"
    target.write_text("my notes\n")
    (tmp_path / "parts.txt").symlink_to(target)
    one_line(run_cli("export", "graph", SBM, str(tmp_path / "parts.txt"), "--format", "metis", "--overwrite"),
             f"{tmp_path / 'parts.txt'}: exists and is a link (to {target})", "left as it is")
    (tmp_path / "s.zarr").symlink_to(target)
    one_line(run_main("build", SBM, "--parts", "2", "--model", "rp", "--out", str(tmp_path / "s.zarr"), "--overwrite"),
             f"{tmp_path / 's.zarr'}: exists and is a link (to {target})", "left as it is")
    assert target.read_text() == "my notes\n"
    _nothing_but(tmp_path, "mine.txt", "parts.txt", "s.zarr")


def test_an_export_into_a_store_is_refused_from_the_command_line(built, tmp_path):
    """Case 11: ``pipeline export graph`` into a store added a foreign file, and ``build --overwrite`` of that
    store then refused."""
    copy = tmp_path / "c.zarr"
    shutil.copytree(built.path, copy)
    res = run_cli("export", "graph", SBM, str(copy / "g.metis"), "--format", "metis")
    one_line(res, str(copy / "g.metis"), f"inside the store {copy}", "write the export elsewhere")
    assert not (copy / "g.metis").exists()
    res = run_main("export", str(copy), str(copy / "parts.txt"), "--format", "assignment")
    one_line(res, f"inside the store {copy}")
    _nothing_but(tmp_path, "c.zarr")


def test_dropout_one_is_named_as_dropout_from_the_command_line(tmp_path):
    """Case 8: ``--dropout 1.0`` was reported as ``--attn-dropout 1.0: must be in [0, 1)``."""
    for arch in ("gcn", "gat"):
        res = subprocess.run([sys.executable, str(TRAIN), str(tmp_path / "s.zarr"), "--arch", arch, "--dropout",
                              "1.0"], capture_output=True, text=True, timeout=120)
        assert res.returncode == 2 and res.stderr.strip() == "shgcn-train: error: --dropout 1.0: must be in [0, 1)", \
            res.stderr
    _nothing_but(tmp_path)


def _in_a_full_filesystem(directory, script: str, after: str = "", size: str = "4k") -> subprocess.CompletedProcess:
    """Run ``script`` (sh) with a tmpfs of ``size`` mounted over ``directory`` in a mount namespace of its own;
    its exit code is the script's, and it prints what is left there after a line ``left:``, then runs ``after``."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare to mount a small file system")
    probe = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                            f"mount -t tmpfs -o size={size} none {directory}"], capture_output=True, timeout=30)
    if probe.returncode != 0:
        pytest.skip(f"cannot mount in a new namespace here: {probe.stderr.decode()[:200]}")
    return subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                           f'mount -t tmpfs -o size={size} none {directory} && {{ {script}; }}; rc=$?; echo left:; '
                           f'ls -A {directory}; {after or "true"}; exit $rc'], capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("size", ["4k", "64k"])  # full as the store is begun; full as the build's tasks write it
def test_a_build_on_a_full_disk_is_one_line_and_leaves_nothing(tmp_path, size):
    """Case 4: zarr's OSError traceback, exit 1. A real full file system (the plan's disk check off, so that
    the writes meet it)."""
    full = tmp_path / "full"
    full.mkdir()
    res = _in_a_full_filesystem(full, f'"{sys.executable}" -m shgcn.pipeline build "{SBM}" --parts 2 --model rp '
                                f'--no-plan-check --out {full}/s.zarr', size=size)
    assert res.stdout.rstrip().endswith("left:"), res.stdout  # nothing in the full file system
    one_line(res, str(full))
    assert "no space left on" in res.stderr.lower(), res.stderr


def test_training_with_a_log_on_a_full_disk_is_one_line_and_exit_2(tmp_path, client):
    """Case 4: exit 1, and ``.run.jsonl.tmp-<pid>`` stayed. The log keeps its whole records."""
    from helpers.stores import make

    store = make(tmp_path / "p1.zarr", client, source=SBM, parts=1, models=("rp",)).path
    full = tmp_path / "full"
    full.mkdir()
    res = _in_a_full_filesystem(full, f'"{sys.executable}" {TRAIN} {store} --quiet --epochs 300 --log '
                                f'{full}/run.jsonl', after=f"echo; tail -c 1 {full}/run.jsonl | od -An -c")
    lines = [x for x in res.stderr.splitlines() if x.strip()]
    assert res.returncode == 2 and len(lines) == 1, res.stderr
    assert lines[0] == f"shgcn-train: error: {full}/run.jsonl: cannot write the run log (No space left on device)"
    left, end = res.stdout.split("left:")[1].split("\n\n")
    assert left.split() == ["run.jsonl"] and end.strip() == "\\n", res.stdout  # no .tmp-<pid>; whole records


def _filled(directory, command: str) -> str:
    """``command`` with the file system at ``directory`` filled first (a hidden filler, removed after it, so that
    ``left:`` lists what the command left); the script's exit code is the command's."""
    fill = f"{directory}/.filler"
    return (f"dd if=/dev/zero of={fill} bs=1k 2>/dev/null; {command}; rc=$?; rm -f {fill}; (exit $rc)")


def _left(res) -> list[str]:
    return res.stdout.split("left:")[1].split()


_DISTDGL = """
import sys
import numpy as np
from shgcn import store
from shgcn.pipeline.exports.distdgl import export_distdgl

class Writer:  # DGL's files as .npz archives (DGL is not installed beside this package)
    def tensors(self, path, tensors):
        with open(path, "wb") as f:
            np.savez(f, **{k.replace("/", "|"): v for k, v in tensors.items()})

    def graph(self, path, g):
        with open(path, "wb") as f:
            np.savez(f, src=g.src, dst=g.dst, node_ids=g.node_ids)

try:
    export_distdgl(store.open_store(sys.argv[1]), sys.argv[2], writer=Writer())
except OSError as e:
    print(f"{e.filename}: {e.strerror}", file=sys.stderr)
    sys.exit(2)
"""


@pytest.mark.parametrize("what", ["report", "report-ipynb", "assignment", "metis", "parhip", "distdgl"])
def test_a_report_or_export_onto_a_full_disk_is_one_line_naming_the_file_and_leaves_nothing(built, tmp_path, what):
    """Case 7 on a real full file system (the commands' own tests patch the write): ``report`` and ``export
    --format assignment`` left ``.NAME.partial-PID``; ``export graph`` named no file. Exit 2, the file the user
    named in the one line, nothing left in the file system."""
    full = tmp_path / "full"
    full.mkdir()
    (tmp_path / "distdgl.py").write_text(_DISTDGL)
    py = f'"{sys.executable}"'
    out, cmd = {
        "report": (f"{full}/r.html", f"{py} -m shgcn.pipeline report {built.path} --out {full}/r.html"),
        "report-ipynb": (f"{full}/r.ipynb", f"{py} -m shgcn.pipeline report {built.path} --out {full}/r.ipynb"),
        "assignment": (f"{full}/a.txt", f"{py} -m shgcn.pipeline export {built.path} {full}/a.txt --format assignment"),
        "metis": (f"{full}/g.metis", f'{py} -m shgcn.pipeline export graph "{SBM}" {full}/g.metis --format metis'),
        "parhip": (f"{full}/g.parhip", f'{py} -m shgcn.pipeline export graph "{SBM}" {full}/g.parhip --format parhip'),
        "distdgl": (f"{full}/dd", f"{py} {tmp_path}/distdgl.py {built.path} {full}/dd"),
    }[what]
    res = _in_a_full_filesystem(full, _filled(full, cmd), size="64k")
    one_line(res, f"{out}: No space left on device")
    assert _left(res) == [], res.stdout  # no .NAME.partial-PID, no half file


@pytest.mark.slow  # quick-suite budget: CI runs it (-m '')
def test_a_feature_beyond_float32_is_one_line_without_numpy_warnings(tmp_path):
    """Features real and finite: a float64 1e300 became inf in the float32 cast with numpy's RuntimeWarning
    (two more lines on stderr) before the one line, which said "NaN or infinity"."""
    import numpy as np

    root = saint(tmp_path / "ds")
    x = np.load(root / "feats.npy")
    x[2, 1] = 1e300
    np.save(root / "feats.npy", x)
    res = build_cli(str(root), "--parts", "2", "--model", "rp", "--out", str(tmp_path / "s.zarr"))
    one_line(res, "non-finite feature at vertex 2, column 1 (NaN, infinity, or beyond float32's range)")
    assert "RuntimeWarning" not in res.stderr
    _nothing_but(tmp_path, "ds")


def _run(*cmd):
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=120)


def test_a_fifo_where_a_command_reads_or_replaces_a_file_is_refused_not_waited_on(built, tmp_path):
    """Case 2 (inputs that never end), beyond the graph: each of these waited forever on a FIFO (found while
    re-checking issue 33): ``--features x.npy`` (the plan read its width), ``export --overwrite`` and
    ``report --overwrite`` onto one (they read it to tell whether they wrote it), ``report --run``, and the
    trainer's ``--log`` and ``--checkpoint`` with ``--overwrite`` or ``--resume``. ``--partition-file`` said
    "file not found"."""
    fifo = {name: tmp_path / name for name in ("x.npy", "parts.txt", "r.html", "run.jsonl")}
    for f in fifo.values():
        os.mkfifo(f)
    (tmp_path / "ck").mkdir()
    os.mkfifo(tmp_path / "ck" / "checkpoint.npz")
    out = ("--out", tmp_path / "s.zarr")
    one_line(build_cli(SBM, "--parts", "2", "--model", "rp", "--features", fifo["x.npy"], *out, timeout=120),
             str(fifo["x.npy"]), "is a FIFO or pipe")
    one_line(build_cli(SBM, "--parts", "2", "--model", "rp", "--partition-file", fifo["parts.txt"], *out,
                       timeout=120), f"--partition-file {fifo['parts.txt']}: not a regular file")
    one_line(run_cli("export", str(built.path), str(fifo["parts.txt"]), "--format", "assignment", "--overwrite",
                     timeout=120), str(fifo["parts.txt"]), "exists and is not a regular file")
    if importlib.util.find_spec("papermill") is not None:  # the report's extra
        one_line(run_cli("report", str(built.path), "--out", str(fifo["r.html"]), "--overwrite", timeout=120),
                 str(fifo["r.html"]), "not a report this command wrote")
        one_line(run_cli("report", str(built.path), "--run", str(fifo["run.jsonl"]), "--out",
                         str(tmp_path / "q.html"), timeout=120), str(fifo["run.jsonl"]), "not a regular file")
    train = (sys.executable, TRAIN, tmp_path / "none.zarr", "--quiet")  # the outputs are checked first
    for args, words in ((("--log", fifo["run.jsonl"], "--overwrite"), "exists and is not a run log"),
                        (("--checkpoint", tmp_path / "ck", "--resume"), "checkpoint.npz is not a regular file"),
                        (("--checkpoint", tmp_path / "ck", "--overwrite"), "checkpoint.npz is not a regular file")):
        res = _run(*train, *args)
        assert res.returncode == 2 and res.stderr.count("\n") == 1 and words in res.stderr, res.stderr
    _nothing_but(tmp_path, "ck", *fifo)
    assert os.listdir(tmp_path / "ck") == ["checkpoint.npz"]
