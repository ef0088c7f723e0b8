"""User-facing errors of the pipeline.

Every problem caused by the user's input (a bad file, a bad option, a store
that does not fit the run) is raised as :class:`UserError` (defined at the
bottom of the package graph, in :mod:`shgcn.core.errors`). The CLI prints
its message on one line and exits with code 2; anything else is a bug and
keeps its traceback.
"""

from __future__ import annotations

from pathlib import Path

from shgcn.core.errors import UserError

__all__ = ["UserError", "located"]


def located(path: str | Path, message: str, line: int | None = None) -> UserError:
    """Build a :class:`UserError` that names the file (and the line, 1-based)."""
    where = f"{path}:{line}" if line is not None else f"{path}"
    return UserError(f"{where}: {message}")
