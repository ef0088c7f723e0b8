"""The package's shape: one namespace, import contracts (import-linter),
size limits, light command lines, entry points, package data."""

import ast
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from helpers import REPO

HEAVY = ("numba", "dask", "distributed", "zarr", "mtkahypar", "mpi4py", "pymetis", "kaminpar")


def lint_imports() -> str:
    exe = Path(sys.executable).parent / "lint-imports"
    if not exe.exists():
        pytest.skip("import-linter is not installed (the test extra)")
    return str(exe)


def link_tree(root: Path, copy: tuple[str, ...] = ()) -> Path:
    """``root/shgcn/<package>``: links to the sources with the installed names (copies for ``copy``)."""
    (root / "shgcn").mkdir(parents=True)
    for package in ("core", "store", "pipeline", "trainer", "notebooks"):
        if package in copy:
            shutil.copytree(REPO / package, root / "shgcn" / package, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            (root / "shgcn" / package).symlink_to(REPO / package)
    return root


def run_contracts(tree: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run([lint_imports(), "--no-cache", str(REPO / "pyproject.toml")], capture_output=True, text=True,
                          env=env, cwd=tree, timeout=300)


def test_import_contracts_hold(tmp_path):
    res = run_contracts(link_tree(tmp_path))
    assert res.returncode == 0 and "0 broken" in res.stdout, res.stdout + res.stderr


def test_the_contracts_find_an_upward_import(tmp_path):
    tree = link_tree(tmp_path, copy=("pipeline",))
    with open(tree / "shgcn" / "pipeline" / "models" / "rp.py", "a") as f:
        f.write("\nfrom ..stages import ingest  # noqa\nfrom shgcn.trainer import model  # noqa\n")
    res = run_contracts(tree)
    assert res.returncode != 0
    assert "shgcn.pipeline.models.rp -> shgcn.pipeline.stages.ingest" in res.stdout
    assert "shgcn.pipeline.models.rp -> shgcn.trainer.model" in res.stdout


def test_no_function_over_60_lines_and_no_module_over_400():
    long = []
    for package in ("pipeline", "trainer", "store", "core"):
        for path in sorted((REPO / package).rglob("*.py")):
            text = path.read_text()
            if text.count("\n") > 400:
                long.append(f"{path.relative_to(REPO)}: {text.count(chr(10))} lines")
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    size = (node.end_lineno or node.lineno) - node.lineno + 1
                    if size > 60:
                        long.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name}: {size} lines")
    assert long == []


@pytest.mark.parametrize("args", [["--help"], ["--version"], ["build", "--help"]])
def test_the_command_line_imports_nothing_heavy(args):
    code = ("import sys\nfrom shgcn.pipeline.cli import main\n"
            f"try:\n    main({args!r})\nexcept SystemExit:\n    pass\n"
            f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip().splitlines()[-1] == "[]"


def test_entry_points_answer_help():
    for cmd in ([sys.executable, "-m", "shgcn.trainer", "--help"], [sys.executable, "-m", "shgcn.pipeline", "--help"],
                [sys.executable, str(REPO / "trainer" / "train.py"), "--help"]):
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        assert res.returncode == 0 and "usage:" in res.stdout, (cmd, res.stderr)
    res = subprocess.run([sys.executable, "-m", "shgcn.trainer", "--help"], capture_output=True, text=True, timeout=60)
    assert "(default: 0.01)" in res.stdout  # every default is shown


def test_notebook_is_package_data():
    from importlib import resources

    assert (resources.files("shgcn.notebooks") / "quality_report.ipynb").is_file()


@pytest.mark.slow
def test_wheel_holds_only_shgcn(tmp_path):
    res = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w",
                          str(tmp_path), str(REPO)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    (wheel,) = tmp_path.glob("shgcn-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"shgcn"}
    assert "shgcn/notebooks/quality_report.ipynb" in names
    assert {"shgcn/store/py.typed", "shgcn/pipeline/py.typed", "shgcn/trainer/py.typed"} <= set(names)


def _untimed_waits(path: Path) -> list[str]:
    """Calls in ``path`` that could wait forever: ``subprocess.run`` and its
    kin, and ``.wait()`` / ``.communicate()``, without a ``timeout``."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        name, owner = node.func.attr, node.func.value
        starts = name in ("run", "check_output", "check_call", "call") and isinstance(owner, ast.Name) and \
            owner.id == "subprocess"
        waits = name in ("wait", "communicate") and not node.args
        if (starts or waits) and not any(k.arg == "timeout" for k in node.keywords):
            out.append(f"{path.relative_to(REPO)}:{node.lineno} {name}")
    return out


def test_every_process_a_test_starts_has_a_timeout():
    """The suite cannot hang (issue 24, case 17): every process a test runs,
    and every wait on one, has a timeout (pytest-timeout is the last resort)."""
    found = [w for path in sorted((REPO / "tests").rglob("*.py")) for w in _untimed_waits(path)]
    assert found == []
