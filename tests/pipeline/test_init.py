"""The package (pipeline/__init__.py): its lazy attributes, listed by dir(); and its shape: no import circle
between its modules (imports inside functions count), no function over 6 positional parameters, a lazily
loading module lists its lazy names, every module with logic has its test file."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO

PIPELINE = REPO / "pipeline"
PACKAGE = "shgcn.pipeline"


def test_dir_lists_the_lazy_names_before_they_load():
    code = ("import sys, shgcn.pipeline as pl\nnames = dir(pl)\n"
            "print(all(n in names for n in ('build', 'BuildConfig', 'BuildResult', 'model_names', '__version__')),"
            " 'shgcn.pipeline.api' in sys.modules, 'dask' in sys.modules)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and res.stdout.split() == ["True", "False", "False"], res.stderr


def test_lazy_names_load_their_module_and_others_are_attribute_errors():
    import shgcn.pipeline as pl
    from shgcn.pipeline.config import BuildConfig

    assert pl.BuildConfig is BuildConfig and pl.model_names()[:4] == ("rp", "gp", "hp", "shp")
    with pytest.raises(AttributeError, match="module 'shgcn.pipeline' has no attribute 'nope'"):
        pl.nope  # noqa: B018


def modules(root: Path = PIPELINE) -> dict[str, Path]:
    """Every module of the package by its dotted name."""
    out = {}
    for p in sorted(root.rglob("*.py")):
        parts = list(p.relative_to(root).with_suffix("").parts)
        out[".".join([PACKAGE] + (parts[:-1] if parts[-1] == "__init__" else parts))] = p
    return out


def import_graph(mods: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the package's modules it imports, anywhere in it (inside functions too)."""
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for m, p in mods.items():
        here = m.split(".") if p.name == "__init__.py" else m.split(".")[:-1]
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = ".".join(here[:len(here) - node.level + 1] + [node.module or ""] if node.level else
                                [node.module or ""]).rstrip(".")
                names = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            else:
                continue
            for name in names:
                while name and name not in mods:  # a name inside a module: the module
                    name = name.rpartition(".")[0]
                if name and name != m:
                    graph[m].add(name)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while (w := stack.pop()) != v:
                component.append(w)
            if component:
                found.append(sorted([v, *component]))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_cycle_finder_finds_a_circle_hidden_in_a_function(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "a.py").write_text("from .b import x\n")
    (tmp_path / "pkg" / "b.py").write_text("def x():\n    from . import c\n")
    (tmp_path / "pkg" / "c.py").write_text("from shgcn.pipeline.a import y\n")
    assert cycles(import_graph(modules(tmp_path / "pkg"))) == [[f"{PACKAGE}.a", f"{PACKAGE}.b", f"{PACKAGE}.c"]]


def test_no_import_circle_in_the_package():
    assert cycles(import_graph(modules())) == []


def test_no_function_takes_more_than_six_positional_parameters():
    """Values that travel together are a dataclass; options after ``*``."""
    long = []
    for m, p in modules().items():
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                names = [a.arg for a in node.args.posonlyargs + node.args.args if a.arg not in ("self", "cls")]
                if len(names) > 6:
                    long.append(f"{m}:{node.lineno} {getattr(node, 'name', 'lambda')}({', '.join(names)})")
    assert long == []


def test_every_lazily_loading_module_lists_its_lazy_names():
    lazy = [m for m, p in modules().items() if "def __getattr__" in p.read_text()]
    assert lazy == [PACKAGE]
    assert [m for m in lazy if "def __dir__" not in modules()[m].read_text()] == []


def test_every_module_with_logic_has_its_test_file():
    """tests/pipeline/<folder>/test_<module>.py for every module that defines a function or a class."""
    missing = []
    for p in modules().values():
        tree = ast.parse(p.read_text())
        if not any(isinstance(n, (ast.FunctionDef, ast.ClassDef)) for n in tree.body):
            continue
        rel = p.relative_to(PIPELINE)
        stem = "init" if p.stem == "__init__" else p.stem.lstrip("_")
        test = REPO / "tests" / "pipeline" / rel.parent / f"test_{stem}.py"
        if not test.exists():
            missing.append(str(test.relative_to(REPO)))
    assert missing == []
