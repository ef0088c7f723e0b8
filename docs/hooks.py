"""MkDocs hooks (mkdocs.yml ``hooks:``) for the documentation.

1. The API reference reads the sources as the installed package ``shgcn``. The folders ``core/``, ``store/``,
   ``pipeline/``, ``trainer/``, ``notebooks/`` and ``testing/`` install as ``shgcn.core``, ``shgcn.store``... (a package-dir
   mapping in pyproject.toml), which mkdocstrings' static reader (griffe) cannot follow through the editable
   install. As .ci/typecheck and .ci/imports do, this hook lays a tree of links with the installed names,
   ``build/docs-api/shgcn/<package>``, which mkdocs.yml gives mkdocstrings as its search path: the reference
   documents ``shgcn.store`` from ``store/``, whatever is installed.
2. The docstrings use Sphinx's roles (``:func:`open_store```), which Markdown shows as they are written; on
   the reference's pages the role's prefix is dropped, and the name stays as code.
3. A page's line ``--8<-- "benchmarks/RESULTS.md"`` is replaced by that file (docs/results.md: the figures
   stay in RESULTS.md, in one place). A relative link there to a file of the repository (a script beside
   RESULTS.md) has no page on the site: it becomes its text and the file's path, as code; its links to its
   own headings (``#...``) stay links.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

PACKAGES = ("core", "store", "pipeline", "trainer", "notebooks", "testing", "parts")
TREE = Path("build") / "docs-api"
_ROLE = re.compile(r":(?:py:)?(?:mod|func|class|meth|data|attr|obj|exc):(?=<code>)")
_INCLUDE = re.compile(r'^--8<--[ \t]+"([^"]+)"[ \t]*$', re.M)
_FENCE = re.compile(r"^```.*?^```[ \t]*$", re.M | re.S)
_LINK = re.compile(r"(?<!!)\[((?:[^\]\[]|\[[^\]]*\])*)\]\(([^)\s]+)\)")


def link_tree(root: Path) -> Path:
    """Make (or repair) ``root/build/docs-api/shgcn/<package>`` -> ``root/<package>``; return the tree."""
    tree = root / TREE
    shgcn = tree / "shgcn"
    shgcn.mkdir(parents=True, exist_ok=True)
    for package in PACKAGES:
        link, target = shgcn / package, root / package
        if link.is_symlink() and os.readlink(link) == str(target):
            continue
        if link.is_symlink() or link.exists():
            link.unlink()
        try:
            link.symlink_to(target, target_is_directory=True)
        except FileExistsError:  # another build made it at the same moment
            pass
    return tree


def unlink_files(markdown: str, base: str) -> str:
    """``markdown`` (a file in the folder ``base``) with its relative links to files as text and path."""

    def plain(m: re.Match) -> str:
        text, target = m.group(1), m.group(2)
        if target.startswith("#") or re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
            return m.group(0)
        path = os.path.normpath(os.path.join(base, target.partition("#")[0]))
        return f"{text} (`{path}`)"

    out, last = [], 0
    for fence in _FENCE.finditer(markdown):
        out += [_LINK.sub(plain, markdown[last:fence.start()]), fence.group(0)]
        last = fence.end()
    return "".join([*out, _LINK.sub(plain, markdown[last:])])


def include(markdown: str, root: Path) -> str:
    """``markdown`` with each ``--8<-- "PATH"`` line replaced by the file PATH (from ``root``)."""

    def one(m: re.Match) -> str:
        path = root / m.group(1)
        return unlink_files(path.read_text(encoding="utf-8"), path.parent.relative_to(root).as_posix())

    return _INCLUDE.sub(one, markdown)


def on_startup(**kwargs: Any) -> None:
    # before any plugin's on_config: mkdocstrings resolves its search paths when it starts its handler
    link_tree(Path(__file__).resolve().parent.parent)


def on_config(config: Any, **kwargs: Any) -> Any:
    link_tree(Path(config.config_file_path).resolve().parent)
    return config


def on_page_markdown(markdown: str, page: Any, config: Any, **kwargs: Any) -> str:
    return include(markdown, Path(config.config_file_path).resolve().parent)


def on_page_content(html: str, page: Any, **kwargs: Any) -> str:
    if page.file.src_uri.startswith("reference/"):
        return _ROLE.sub("", html)
    return html
