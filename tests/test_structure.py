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
        f.write("\nfrom ..stages import ingest  # noqa\nfrom shgcn.trainer import optim  # noqa\n")
    res = run_contracts(tree)
    assert res.returncode != 0
    assert "shgcn.pipeline.models.rp -> shgcn.pipeline.stages.ingest" in res.stdout
    assert "shgcn.pipeline.models.rp -> shgcn.trainer.optim" in res.stdout


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


# ---------------------------------------------------------------- the house's rules (issue 29)

PACKAGES = ("core", "store", "pipeline", "trainer", "notebooks")


def modules() -> dict[str, Path]:
    """Every module of the installed packages: dotted name -> file."""
    out = {}
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            rel = path.relative_to(REPO).with_suffix("").parts
            name = ".".join(("shgcn", *rel[:-1])) if rel[-1] == "__init__" else ".".join(("shgcn", *rel))
            out[name] = path
    return out


def imported(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The project modules ``name`` imports anywhere in its file (functions included)."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name in known}
        elif isinstance(node, ast.ImportFrom):
            base = package
            for _ in range((node.level or 1) - 1):
                base = base.rsplit(".", 1)[0]
            target = (f"{base}.{node.module}" if node.module else base) if node.level else (node.module or "")
            for a in node.names:
                sub = f"{target}.{a.name}"
                out.add(sub if sub in known else target)
    return {m for m in out if m in known and m != name}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_circle_even_inside_functions():
    known = modules()
    graph = {name: imported(name, path, known) for name, path in known.items()}
    assert cycles(graph) == []


def test_the_circle_finder_finds_a_circle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _is_kernel(node: ast.FunctionDef) -> bool:
    """A numba kernel: its arrays come flat (typed containers cost more than they explain)."""
    return any("njit" in ast.unparse(d) for d in node.decorator_list)


def test_no_function_takes_more_than_six_positional_parameters():
    long = []
    for name, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not _is_kernel(node):
                params = [a.arg for a in node.args.posonlyargs + node.args.args if a.arg not in ("self", "cls")]
                if len(params) > 6:
                    long.append(f"{name}.{node.name}: {len(params)}")
    assert long == []


def _registered() -> dict[str, tuple[set[str], set[str]]]:
    """Each kind of registered part: its names, and the modules allowed to name them (its own, the registry)."""
    from shgcn.core.algorithms import ALGORITHMS
    from shgcn.core.archs import ARCHS
    from shgcn.core.exchanges import EXCHANGES

    out = {}
    for kind, reg, homes in (("arch", ARCHS, {"shgcn.core.archs"}), ("algorithm", ALGORITHMS, {"shgcn.core.algorithms"}),
                             ("exchange", EXCHANGES, {"shgcn.core.exchanges"})):
        allowed = set(homes)
        for spec in reg.values():
            allowed.add(type(spec).__module__)
            allowed.add(spec.impl.split(":")[0])
        out[kind] = (set(reg.names()), allowed)
    return out


def name_comparisons(tree: ast.AST, kinds: dict[str, tuple[set[str], set[str]]]) -> list[str]:
    """Comparisons of an architecture's, algorithm's or exchange's name with a literal, and dicts keyed by them."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            literals = {s.value for s in sides if isinstance(s, ast.Constant) and isinstance(s.value, str)}
            for s in sides:
                if isinstance(s, (ast.Tuple, ast.List, ast.Set)):
                    literals |= {e.value for e in s.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
            names = " ".join(ast.unparse(s) for s in sides if not isinstance(s, ast.Constant))
            for kind, (values, _) in kinds.items():
                if kind in names and literals & values:
                    found.append(f"{kind}: {ast.unparse(node)}")
        elif isinstance(node, ast.Dict):
            keys = {k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
            for kind, (values, _) in kinds.items():
                if len(keys & values) >= 2:
                    found.append(f"{kind}: dict keyed by {sorted(keys & values)}")
    return found


def test_no_name_of_a_part_is_compared_outside_its_module_and_registry():
    kinds = _registered()
    bad = []
    for name, path in modules().items():
        tree = ast.parse(path.read_text())
        for hit in name_comparisons(tree, kinds):
            kind = hit.split(":")[0]
            if name not in kinds[kind][1]:
                bad.append(f"{name}: {hit}")
    assert bad == []


def test_the_name_check_finds_a_comparison():
    kinds = _registered()
    tree = ast.parse("if cfg.arch == 'gat':\n    pass\nx = job.exchange in ('bcast', 'p2p')\nOPS = {'gcn': 1, 'sage': 2}\n")
    assert len(name_comparisons(tree, kinds)) == 3


# a module without a test file of its name: where its behaviour is tested instead
TESTED_ELSEWHERE = {
    "shgcn.trainer.__main__": "tests/test_structure.py (entry points)",
    "shgcn.trainer.train": "tests/test_structure.py (entry points); every MPI test runs it",
    "shgcn.pipeline.__main__": "tests/test_structure.py (entry points)",
}


def has_logic(path: Path) -> bool:
    tree = ast.parse(path.read_text())
    return any(isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)) for n in tree.body)


def expected_test_file(name: str) -> Path:
    """tests/<package>/<subpackages>/test_<module>.py (a leading underscore dropped); a package's own
    ``__init__``: tests/<package>/<subpackages>/test_init.py."""
    parts = name.split(".")[1:]
    if modules()[name].name == "__init__.py":
        return REPO / "tests" / Path(*parts) / "test_init.py"
    *folders, module = parts
    return REPO / "tests" / Path(*folders) / f"test_{module.lstrip('_')}.py"


def test_every_module_with_logic_has_a_test_file_of_its_name():
    missing = []
    for name, path in modules().items():
        if name in TESTED_ELSEWHERE or not has_logic(path):
            continue
        if not expected_test_file(name).exists():
            missing.append(f"{name}: {expected_test_file(name).relative_to(REPO)}")
    assert missing == []


def test_lazy_modules_list_their_names():
    import importlib

    for name, path in modules().items():
        if "def __getattr__" in path.read_text():
            module = importlib.import_module(name)
            assert hasattr(module, "__dir__"), name
            assert set(getattr(module, "__all__", ())) <= set(dir(module)), name
