"""The package's shape: one namespace, import contracts (import-linter),
size limits, light command lines, entry points, package data."""

import ast
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from helpers import REPO

PACKAGES = ("core", "store", "pipeline", "trainer", "notebooks", "testing", "parts")
HEAVY = ("numba", "dask", "distributed", "zarr", "mtkahypar", "mpi4py", "pymetis", "kaminpar")


def lint_imports() -> str:
    exe = Path(sys.executable).parent / "lint-imports"
    if not exe.exists():
        pytest.skip("import-linter is not installed (the test extra)")
    return str(exe)


def link_tree(root: Path, copy: tuple[str, ...] = ()) -> Path:
    """``root/shgcn/<package>``: links to the sources with the installed names (copies for ``copy``)."""
    (root / "shgcn").mkdir(parents=True)
    for package in PACKAGES:
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
    for package in ("pipeline", "trainer", "store", "core", "testing", "parts"):
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
    """Each kind of registered part: its names, and the modules allowed to name them (the part's own modules,
    its registry)."""
    from shgcn.pipeline.models import registry as models
    from shgcn.pipeline.sources.registry import READERS
    from shgcn.trainer.algorithms import ALGORITHMS
    from shgcn.trainer.archs import ARCHS
    from shgcn.trainer.backends import BACKENDS
    from shgcn.trainer.exchanges import EXCHANGES

    out = {}
    # a part's modules: its spec's (and its registry's in core), its implementation's, and the trainer's registry
    for kind, parts, homes in (("arch", ARCHS, {"shgcn.core.archs", "shgcn.trainer.archs"}),
                               ("algorithm", ALGORITHMS, {"shgcn.core.algorithms", "shgcn.trainer.algorithms"}),
                               ("exchange", EXCHANGES, {"shgcn.core.exchanges", "shgcn.trainer.exchanges"})):
        allowed = set(homes)
        for part in parts.values():
            allowed.add(type(part.spec).__module__)
            allowed.add(part.impl.__module__)
        out[kind] = (set(parts), allowed)
    # a backend's modules: its factory's target, and the kernels and device modules named after it
    backends = {"shgcn.trainer.backends", *(f"shgcn.trainer.backends.{n}" for n in BACKENDS)}
    out["backend"] = (set(BACKENDS), backends | {f"{m}{tail}" for m in backends for tail in ("device", "kernels")})
    out["model"] = (set(models.REGISTRY), {"shgcn.pipeline.models.registry", "shgcn.pipeline.models",
                                           *(type(p).__module__ for p in models.REGISTRY.values())})
    out["reader"] = (set(READERS), {"shgcn.pipeline.sources.registry", "shgcn.pipeline.sources",
                                    *(type(r).__module__ for r in READERS.values())})
    from shgcn.core.sample import SAMPLERS

    out["sampler"] = (set(SAMPLERS), {"shgcn.core.sample"})  # declared with their capabilities, compared nowhere
    return out


def _strings(node: ast.AST | None) -> set[str]:
    """The string literals of ``node``: a constant, or the elements of a list, tuple or set literal (starred
    parts skipped: ``[*exchanges, 'bcast']`` gives ``bcast``), or of ``frozenset(...)``/``set(...)``/``tuple(...)``
    of one."""
    if isinstance(node, ast.Constant):
        return {node.value} if isinstance(node.value, str) else set()
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("frozenset", "set", "tuple") \
            and len(node.args) == 1:
        return _strings(node.args[0])
    return set()


def _named_literals(tree: ast.AST) -> dict[str, set[str]]:
    """Names bound to a literal of strings anywhere in the module (``NAMES = ("gcn", "gat")``): a comparison
    with the name compares with its strings."""
    out: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) \
            else []
        value = getattr(node, "value", None)
        for t in targets:
            if isinstance(t, ast.Name) and _strings(value) and not isinstance(value, ast.Constant):
                out.setdefault(t.id, set()).update(_strings(value))
    return out


def name_comparisons(tree: ast.AST, kinds: dict[str, tuple[set[str], set[str]]]) -> list[str]:
    """Every string literal equal to a registered name (of any kind in ``kinds``) that a test uses: a side of a
    comparison or membership test (a constant, a list, tuple or set literal, or a name bound to one), a
    ``case`` pattern, a key of a dict literal, or an element of a list that extends a registry's names.
    ``kind: "literal" in <the code>`` per hit."""
    named = _named_literals(tree)
    found = []
    for node in ast.walk(tree):
        literals: set[str] = set()
        if isinstance(node, ast.Compare):
            for side in (node.left, *node.comparators):
                literals |= _strings(side) | named.get(side.id if isinstance(side, ast.Name) else "", set())
        elif isinstance(node, ast.MatchValue):
            literals = _strings(node.value)
        elif isinstance(node, ast.Dict):
            literals = {k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
        elif isinstance(node, (ast.List, ast.Tuple, ast.Set)) and any(isinstance(e, ast.Starred) for e in node.elts):
            literals = _strings(node)  # a registry's names extended by one by hand: [*exchanges, 'bcast']
        for kind, (values, _) in kinds.items():
            for name in sorted(literals & values):
                found.append(f"{kind}: {name!r} in {ast.unparse(node)[:80]}")
    return found


# a part's name where the guard finds it outside the part's module and registry, and why that is right for now
_ALLOWED_BY_REASON: dict[str, list[tuple[str, str, str]]] = {
    "homonym: the GraphSAINT sampler's options, not the reader": [("shgcn.trainer.config", "reader", "saint")],
    "homonym: METIS the partitioner (gp's backend) or METIS' graph file format (export), not the reader": [
        ("shgcn.pipeline.commands", "reader", "metis"), ("shgcn.pipeline.models.gp", "reader", "metis"),
        ("shgcn.pipeline.stages.graphfile", "reader", "metis"), ("shgcn.notebooks.figures", "reader", "metis")],
    "homonym: the dataset registry's hosts and layouts (sources.datasets), not the readers": [
        ("shgcn.pipeline.sources.datasets", "reader", r) for r in ("metis", "ogb", "planetoid", "saint", "npz")],
    "homonym: the ogb library a graph object comes from (sources.peers)": [("shgcn.pipeline.sources.peers", "reader",
                                                                            "ogb")],
    "homonym: the torch module (sys.modules), not the backend": [("shgcn.trainer.context", "backend", "torch")],
    "shp starts from an hp or gp partition (its start order): shp's own choice of base models": [
        ("shgcn.pipeline.models.shp.build", "model", "gp"), ("shgcn.pipeline.models.shp.build", "model", "hp")],
}
NAMES_ALLOWED: dict[tuple[str, str, str], str] = {k: why for why, keys in _ALLOWED_BY_REASON.items() for k in keys}


def test_no_name_of_a_part_is_compared_outside_its_module_and_registry():
    kinds = _registered()
    bad, used = [], set()
    for name, path in modules().items():
        if name.startswith("shgcn.testing"):
            continue  # the conformance classes name parts as cases, as the tests do
        for hit in name_comparisons(ast.parse(path.read_text()), kinds):
            kind, literal = hit.split(":")[0], hit.split("'")[1]
            if name in kinds[kind][1]:
                continue
            if (name, kind, literal) in NAMES_ALLOWED:
                used.add((name, kind, literal))
                continue
            bad.append(f"{name}: {hit}")
    assert bad == []
    assert set(NAMES_ALLOWED) - used == set()  # an allowance nothing needs any more goes


def test_the_name_check_finds_a_comparison():
    kinds = _registered()
    code = ("if cfg.arch == 'gat':\n    pass\n"               # a variable that says what it holds
            "x = job.exchange in ('bcast', 'p2p')\n"
            "OPS = {'gcn': 1, 'sage': 2}\n"
            "if spec.name == 'gat':\n    pass\n"             # a variable that does not
            "kinds = [*exchanges, 'bcast']\nok = e in kinds\n"
            "FAST = frozenset({'hp', 'gp-vb'})\nif m in FAST:\n    pass\n"
            "match fmt:\n    case 'planetoid':\n        pass\n"
            "if be != 'torch':\n    pass\n"
            "if n == 'unrelated' or x in ('gcn-ish',):\n    pass\n")   # strings that merely resemble names
    hits = name_comparisons(ast.parse(code), kinds)
    assert sorted(h.split(" in ")[0] for h in hits) == sorted([
        "arch: 'gat'", "exchange: 'bcast'", "exchange: 'p2p'", "arch: 'gcn'", "arch: 'sage'", "arch: 'gat'",
        "exchange: 'bcast'", "exchange: 'bcast'", "model: 'gp-vb'", "model: 'hp'", "reader: 'planetoid'",
        "backend: 'torch'"])  # 'bcast' twice: the extended list, and the test with the name bound to it
    loop = "for ex in dict.fromkeys([*exchanges, 'bcast']):\n    pass\n"  # core/epoch.py's, no comparison
    assert [h.split(" in ")[0] for h in name_comparisons(ast.parse(loop), kinds)] == ["exchange: 'bcast'"]


# a module without a test file of its name: where its behaviour is tested instead
TESTED_ELSEWHERE = {
    "shgcn.trainer.__main__": "tests/test_structure.py (entry points)",
    "shgcn.trainer.train": "tests/test_structure.py (entry points); every MPI test runs it",
    "shgcn.pipeline.__main__": "tests/test_structure.py (entry points)",
    # shgcn.testing: the conformance classes are tested by being used
    "shgcn.testing.archs": "tests/trainer/archs/test_*.py subclass ArchitectureTests; tests/test_testing.py",
    "shgcn.testing.exchanges": "tests/trainer/exchanges/test_*.py subclass ExchangeTests",
    "shgcn.testing.exchange_check": "every ExchangeTests subclass runs it under mpirun",
    "shgcn.testing.algorithms": "tests/trainer/algorithms/test_*.py subclass AlgorithmTests; tests/test_testing.py",
    "shgcn.testing.backends": "tests/trainer/backends/test_numpy.py and test_torch.py subclass BackendTests",
    "shgcn.testing.partitioners": "tests/pipeline/models/test_*.py subclass PartitionerTests",
    "shgcn.testing.readers": "tests/pipeline/sources/test_*.py subclass ReaderTests; tests/test_testing.py",
    "shgcn.testing.runs": "every MPI conformance test trains through it",
    "shgcn.testing.quick": "tests/test_testing.py",
    "shgcn.testing.samplers": "tests/core/test_sample.py subclasses SamplerTests for every built-in sampler",
    "shgcn.testing.plugin": "tests/parts/test_init.py runs a user's parts' tests with it alone (no conftest)",
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


# ---------------------------------------------------------------- the maps (issue 47, item 5)

MAP_REF = re.compile(r":(?:mod|class|func|data|meth|exc):`~?([\w.]+)`")
MAP_FILE = re.compile(r"``([\w/]+\.py)``")
MAP_BARE = re.compile(r"``([a-z_][a-z0-9_]*)``")


def bare_module_names(package: str, doc: str, known: dict[str, Path], parts: set[str]) -> list[str]:
    """Modules of ``package`` its docstring names in double backquotes (``config``) instead of as references
    (:mod:`.config`), which the map check could not follow; a registered part's name (``rp``) is a value."""
    children = {n.rsplit(".", 1)[1] for n in known if n.rsplit(".", 1)[0] == package}
    return sorted({w for w in MAP_BARE.findall(doc) if w in children and w not in parts})


def map_targets(package: str, doc: str) -> list[str]:
    """What the docstring of ``package`` (dotted, ``shgcn.x``) names of the code, as dotted names to resolve:
    every ``:mod:`` reference, and the module part of every ``:class:``/``:func:``/``:data:``/``:meth:``/``:exc:``
    one, relative (``.name``, ``..name``: to the package) or absolute (``shgcn.name``); a reference without a dot
    (``:data:`ALGORITHMS```) names something of the package itself."""
    out = []
    for m in MAP_REF.finditer(doc):
        role, ref = m.group(0).split(":")[1], m.group(1)
        if not ref.startswith((".", "shgcn.")):
            continue
        if ref.startswith("."):
            dots = len(ref) - len(ref.lstrip("."))
            base = package.rsplit(".", dots - 1)[0] if dots > 1 else package
            ref = f"{base}.{ref.lstrip('.')}"
        out.append(ref if role == "mod" else ref.rsplit(".", 1)[0])
    return out


def resolves(name: str, known: dict[str, Path]) -> bool:
    """``name`` is a module or package of ours."""
    return name in known


def test_every_module_a_package_docstring_names_exists():
    """A package's docstring is its map. The convention: it names a module or subpackage as a reference,
    ``:mod:`.name``` (relative to the package; ``..name`` one up) or ``:mod:`shgcn.pkg.name```, and a class or
    function by its module (``:class:`.base.Reader```); a file as ``path.py`` in double backquotes (relative to
    the package's folder or to the repository). Every one of them must exist. A word in double backquotes is an
    option, a value or a command: one that is the name of one of the package's modules (and not a registered
    part's) is refused, since a module named that way could be gone without the check seeing it."""
    known = modules()
    parts = set().union(*(names for names, _ in _registered().values()))
    missing = []
    for name, path in known.items():
        if path.name != "__init__.py":
            continue
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
        missing += [f"{name}: ``{w}`` (write :mod:`.{w}`)" for w in bare_module_names(name, doc, known, parts)]
        missing += [f"{name}: {t}" for t in map_targets(name, doc) if not resolves(t, known)]
        missing += [f"{name}: {f}" for f in MAP_FILE.findall(doc)
                    if not (path.parent / f).exists() and not (REPO / f).exists()]
    assert missing == []


def test_the_map_check_finds_a_module_that_is_gone():
    known = modules()
    doc = "Modules: :mod:`.loop`, :mod:`.exchange` (gone), :class:`~.context.Context`, :mod:`..core.epoch`,\n" \
          ":mod:`shgcn.trainer.summa`, :data:`ALGORITHMS`, ``spmm15.py``."
    targets = map_targets("shgcn.trainer", doc)
    assert targets == ["shgcn.trainer.loop", "shgcn.trainer.exchange", "shgcn.trainer.context", "shgcn.core.epoch",
                       "shgcn.trainer.summa"]
    assert [t for t in targets if not resolves(t, known)] == ["shgcn.trainer.exchange", "shgcn.trainer.summa"]
    assert MAP_FILE.findall(doc) == ["spmm15.py"] and not (REPO / "trainer" / "spmm15.py").exists()
    # the map trainer/__init__.py had (issue 47, item 5): modules named in double backquotes, some long gone
    old = "Modules: ``config`` (options), ``loop`` (epochs), ``exchange`` (p2p / alltoallv / bcast), ``gcn``."
    assert bare_module_names("shgcn.trainer", old, known, {"gcn"}) == ["config", "loop"]


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the docstring constants of a module, its classes and functions."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def test_no_module_wires_a_part_by_a_string_path():
    """Issue 47, item 3: core's specs named their trainer implementations as ``"shgcn.trainer...:Class"``
    strings, an import loop core -> trainer -> core that import-linter, mypy and an import graph could not see.
    Now no string (docstrings aside) anywhere in the package is a ``module:attribute`` path, and none in core
    names a package above it."""
    bad = []
    for name, path in modules().items():
        tree = ast.parse(path.read_text())
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs \
                    and (re.fullmatch(r"shgcn(\.\w+)+:\w+", node.value)  # an importable "module:attribute"
                         or name.startswith("shgcn.core.") and re.match(r"shgcn\.(store|pipeline|trainer)\b", node.value)):
                bad.append(f"{name}: {node.value!r}")
    assert bad == []


# a part's spec looked up by its name written again (``ARCHS["gat"]``, ``SPECS.get_spec("torch")``), and a registry
# or the trainer's parts built from names written again (``Registry("--arch", {"gcn": ...})``, ``Parts(.., {"gcn":``)
_SPEC_BY_NAME = re.compile(r"\b(ARCHS|EXCHANGES|ALGORITHMS|BACKENDS|SPECS|SAMPLERS|READERS|REGISTRY|MODELS)"
                           r"\s*(\[|\.get_spec\(|\.get\()\s*[\"'][^\"']*[\"']")
_BUILT_BY_NAME = re.compile(r"(?<!class )\b(Registry|Parts)\(")


def names_written_again(text: str) -> list[str]:
    """Where ``text`` writes a part's name beside its spec: a registry looked up by a string literal, or a
    registry or parts built by the plain constructor (from a dict keyed by names)."""
    return [m.group(0) for rx in (_SPEC_BY_NAME, _BUILT_BY_NAME) for m in rx.finditer(text)]


def test_a_part_is_named_once_in_its_spec():
    """Issue 61, item 5: a part's name is written once, in its spec. Every registry is ``Registry.of`` its
    specs (each under its own name), the trainer's parts are ``Parts.of`` pairs of a spec object and its
    implementation, and a layer declares its spec by reference (``spec = specs.GAT``, not ``ARCHS["gat"]``)."""
    bad = [f"{name}: {hit}" for name, path in modules().items() for hit in names_written_again(path.read_text())]
    assert bad == []


def test_the_name_once_check_finds_a_name_written_again():
    code = ('class GAT(Layers):\n    spec = ARCHS["gat"]\n'
            "torch = SPECS.get_spec('torch')\n"
            'R = Registry("--x", {"a": A})\nP = Parts(R, {"a": a})\n'
            "class Registry(Mapping):\n    pass\n"                     # its definition: not a construction
            'ok = Registry.of("--x", A), Parts.of(R, (A, a)), ARCHS[spec.name], ARCHS.get_spec(name)\n')
    assert names_written_again(code) == ['ARCHS["gat"', "SPECS.get_spec('torch'", "Registry(", "Parts("]
