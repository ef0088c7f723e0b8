"""The README is a landing page and the documentation's links hold (issue 50).

Cheap checks, run with the quick tests: README.md has at most 250 lines; its first two fenced blocks are the
two commands (install and run the main job end to end; install and run the tests), and the first one still
parses with the commands' own parsers; every relative link in README.md and docs/ points at a file that
exists, and at a heading there when it names one (GitHub's anchors, which mkdocs.yml's slugify also makes);
every page of docs/ is in mkdocs.yml's nav. The strict MkDocs build itself (which also checks the API
reference against the sources) runs in .ci/run, and here as a slow test.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
DOCS = REPO / "docs"

MAX_README_LINES = 250

_FENCE = re.compile(r"^```[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
_LINK = re.compile(r"(?<!!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_SNIPPET = re.compile(r'^--8<--\s+"([^"]+)"\s*$', re.M)


def fenced_blocks(text: str) -> list[str]:
    return [m.group(1) for m in _FENCE.finditer(text)]


def command_lines(block: str) -> list[str]:
    """A shell block's commands: its lines without the comments and blank lines."""
    return [line.strip() for line in block.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def _prose(text: str) -> str:
    """``text`` without its fenced blocks and code spans (links there are not links)."""
    text = _FENCE.sub("", text)
    return re.sub(r"`[^`\n]*`", "", text)


def links(text: str) -> list[str]:
    return [m.group(1) for m in _LINK.finditer(_prose(text))]


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading (and pymdownx.slugs.slugify(case="lower"), mkdocs.yml's)."""
    text = re.sub(r"<[^>]+>", "", heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link in a heading: its text
    text = text.replace("`", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors of a Markdown file's headings, those of the files it includes (``--8<--``) too."""
    text = path.read_text()
    for included in _SNIPPET.findall(text):
        text += "\n" + (REPO / included).read_text()
    out: set[str] = set()
    seen: dict[str, int] = {}
    for m in re.finditer(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", _FENCE.sub("", text), re.M):
        slug = github_slug(m.group(1))
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
        out.add(slug if n == 0 else f"{slug}_{n}")  # Python-Markdown's suffix for a repeated heading
    return out


def markdown_files() -> list[Path]:
    return [README, *sorted(DOCS.rglob("*.md"))]


def broken_links(path: Path) -> list[str]:
    """The relative links of a Markdown file whose file, or heading, is not there."""
    out = []
    for target in links(path.read_text()):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # https:, mailto: ...
            continue
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        where = f"{_shown(path)}: {target}"
        if not dest.exists():
            out.append(f"{where} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            out.append(f"{where} (no such heading in {_shown(dest)})")
    return out


def _shown(path: Path) -> str:
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else path.name


# ---------------------------------------------------------------- the README is a landing page


def test_the_readme_is_a_landing_page_of_at_most_250_lines():
    lines = README.read_text().splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines; the rest belongs in docs/"


def test_the_readmes_first_command_installs_builds_and_trains():
    first = command_lines(fenced_blocks(README.read_text())[0])
    assert len(first) == 1, f"the first block is one command line, not {first}"
    steps = [s.strip() for s in first[0].split("&&")]
    assert steps[:2] == ["python3 -m venv .venv", ". .venv/bin/activate"], steps
    install = shlex.split(steps[2])
    assert install[:3] == ["pip", "install", "-e"], steps[2]
    m = re.fullmatch(r"\.(?:\[([\w,-]+)\])?", install[3])
    assert m, f"it installs the checkout: {install[3]}"
    extras = set(tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    assert set(filter(None, (m.group(1) or "").split(","))) <= extras, f"{install[3]}: extras of pyproject.toml"

    from shgcn.pipeline.cli import parser as pipeline_parser
    from shgcn.trainer.cli import parser as train_parser

    build, train = shlex.split(steps[3]), shlex.split(steps[4])
    assert build[:2] == ["pipeline", "build"], steps[3]
    b = pipeline_parser().parse_args(build[1:])
    assert train[:2] == ["mpirun", "-n"] and train[3] == "shgcn-train", steps[4]
    t = train_parser().parse_args(train[4:])
    assert t.store == b.out, "it trains the store it built"
    assert int(train[2]) == b.parts, "one rank a part"
    assert t.ranks_per_node in (None, b.ranks_per_node), "nodes as the store's placement"
    assert len(steps) == 5


def test_the_readmes_second_command_runs_the_tests():
    second = command_lines(fenced_blocks(README.read_text())[1])
    assert second == [".ci/run"]
    ci = REPO / ".ci" / "run"
    assert os.access(ci, os.X_OK)
    text = ci.read_text()
    assert "pip install" in text and "pytest" in text


# ---------------------------------------------------------------- the documentation's links


def test_the_link_checker_finds_a_broken_file_and_a_broken_heading(tmp_path):
    (tmp_path / "other.md").write_text("# Other\n\n## Its section\n")
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n## A `--plan` section\n\n[ok](#a---plan-section) [x](#nope) [y](no-such.md) "
                    "[z](https://example.org) `[code](no.md)` [o](other.md#its-section) [p](other.md#not-its)\n")
    assert sorted(broken_links(page)) == ["page.md: #nope (no such heading in page.md)",
                                          "page.md: no-such.md (no such file)",
                                          "page.md: other.md#not-its (no such heading in other.md)"]
    assert github_slug("Build: `--memory-limit` binds the Dask workers") == "build---memory-limit-binds-the-dask-workers"


def test_every_relative_link_in_the_readme_and_the_docs_points_at_a_file_that_exists():
    found = [b for path in markdown_files() for b in broken_links(path)]
    assert found == []


def test_the_readme_links_into_the_docs_and_to_the_results():
    targets = {t.partition("#")[0] for t in links(README.read_text())}
    assert "benchmarks/RESULTS.md" in targets
    assert {"docs/getting-started.md", "docs/training.md", "docs/gpus.md", "docs/interop.md",
            "docs/architecture.md"} <= targets


def test_every_docs_page_is_in_the_nav():
    config = (REPO / "mkdocs.yml").read_text()
    pages = [p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")]
    assert pages
    assert [p for p in pages if not re.search(rf"(^|[\s:-]){re.escape(p)}\s*$", config, re.M)] == []


# ---------------------------------------------------------------- the hook that lets mkdocstrings read `shgcn`


def _hooks():
    spec = importlib.util.spec_from_file_location("shgcn_docs_hooks", DOCS / "hooks.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_hook_lays_the_installed_names_over_the_folders(tmp_path):
    hooks = _hooks()
    for package in hooks.PACKAGES:
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    tree = hooks.link_tree(tmp_path)
    tree = hooks.link_tree(tmp_path)  # again: kept as it is
    for package in hooks.PACKAGES:
        assert (tree / "shgcn" / package).resolve() == tmp_path / package
    package_dir = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    assert {name.removeprefix("shgcn.") for name in package_dir} == set(hooks.PACKAGES)
    assert hooks.on_page_content('<p>:func:<code>open_store</code></p>', page=_Page("reference/store.md")) == \
        "<p><code>open_store</code></p>"
    assert ":func:" in hooks.on_page_content("<p>:func:<code>x</code></p>", page=_Page("training.md"))


def test_the_hook_includes_a_file_and_unlinks_its_links_to_files(tmp_path):
    hooks = _hooks()
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "R.md").write_text(
        "# R\n\n[a section](#r) [the script](build/x.py) [site](https://example.org)\n\n```\n[kept](y.py)\n```\n")
    page = 'before\n--8<-- "benchmarks/R.md"\nafter\n'
    assert hooks.include(page, tmp_path) == ("before\n# R\n\n[a section](#r) the script (`benchmarks/build/x.py`) "
                                             "[site](https://example.org)\n\n```\n[kept](y.py)\n```\n\nafter\n")


class _Page:
    def __init__(self, src_uri: str):
        self.file = type("File", (), {"src_uri": src_uri})()


# ---------------------------------------------------------------- the build itself


@pytest.mark.slow
def test_the_documentation_builds_strict(tmp_path):
    """What .ci/run does: a broken link, anchor or API reference fails the build (about 10-30 s)."""
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings_handlers.python")
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent)) or shutil.which("mkdocs")
    assert mkdocs
    done = subprocess.run([mkdocs, "build", "--strict", "--site-dir", str(tmp_path / "site")], cwd=REPO,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "reference" / "store" / "index.html").read_text().count("open_store") > 1


def test_the_results_name_no_path_of_the_machine_they_ran_on():
    """benchmarks/RESULTS.md (the docs' results page) in prose: a reader's checkout has no /work/... of ours."""
    text = (REPO / "benchmarks" / "RESULTS.md").read_text()
    found = [f"{i}: {line.strip()[:80]}" for i, line in enumerate(text.splitlines(), 1)
             if re.search(r"(?<![\w.])/(work|home|root|scratch)/", line)]
    assert found == []
