"""The package's shape: one namespace, imports pointing one way, entry points,
package data."""

import ast
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from helpers import REPO

# what each subpackage may import from shgcn: store at the bottom; pipeline and
# trainer beside each other above it (what both need lives in store)
ALLOWED = {"store": {"store"}, "pipeline": {"store", "pipeline"}, "trainer": {"store", "trainer"}}


def shgcn_imports(path: Path, package: str) -> set[str]:
    """Subpackages of shgcn that the module at ``path`` (in ``package``) imports."""
    tree = ast.parse(path.read_text(), str(path))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: within its own package (level 1), or above it
                out.add(package if node.level == 1 else "<above>")
                continue
            names = [node.module or ""]
            if node.module == "shgcn":
                names = [f"shgcn.{a.name}" for a in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "shgcn" and len(parts) > 1:
                out.add(parts[1])
            elif parts[0] in ALLOWED:  # the old top-level names must not come back
                out.add(f"top-level {parts[0]}")
    return out


def violations(root: Path = REPO) -> list[str]:
    bad = []
    for package, allowed in ALLOWED.items():
        for path in sorted((root / package).rglob("*.py")):
            for dep in sorted(shgcn_imports(path, package) - allowed):
                bad.append(f"{path.relative_to(root)} imports {dep}")
    return bad


def test_imports_point_one_way():
    assert violations() == []


def test_the_check_finds_an_upward_import(tmp_path):
    for package in ALLOWED:
        (tmp_path / package).mkdir()
    (tmp_path / "store" / "bad.py").write_text("from shgcn.pipeline import build\n")
    (tmp_path / "trainer" / "bad.py").write_text("import shgcn.pipeline.sample\nfrom shgcn import pipeline\n")
    (tmp_path / "pipeline" / "bad.py").write_text("from trainer.model import GCN\nfrom .. import x\n")
    assert violations(tmp_path) == [
        "store/bad.py imports pipeline",
        "pipeline/bad.py imports <above>",
        "pipeline/bad.py imports top-level trainer",
        "trainer/bad.py imports pipeline",
    ]


def test_entry_points_answer_help():
    for cmd in ([sys.executable, "-m", "shgcn.trainer", "--help"], [sys.executable, "-m", "shgcn.pipeline", "--help"],
                [sys.executable, str(REPO / "trainer" / "train.py"), "--help"]):
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        assert res.returncode == 0 and "usage:" in res.stdout, (cmd, res.stderr)
    res = subprocess.run([sys.executable, "-m", "shgcn.trainer", "--help"], capture_output=True, text=True)
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
