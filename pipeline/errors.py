"""User-facing errors.

Every problem caused by the user's input (a bad file, a bad option, a store
that does not fit the run) is raised as :class:`UserError`. The CLI prints its
message on one line and exits with code 2; anything else is a bug and keeps
its traceback.
"""

from __future__ import annotations

from pathlib import Path


class UserError(Exception):
    """A problem with the user's input; the CLI exits with code 2."""

    exit_code = 2


def located(path: str | Path, message: str, line: int | None = None) -> UserError:
    """Build a :class:`UserError` that names the file (and the line, 1-based)."""
    where = f"{path}:{line}" if line is not None else f"{path}"
    return UserError(f"{where}: {message}")
