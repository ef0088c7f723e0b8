"""User-facing errors of the pipeline.

Every problem caused by the user's input (a bad file, a bad option, a store
that does not fit the run) is raised as :class:`UserError` (defined at the
bottom of the package graph, in :mod:`shgcn.core.errors`). The CLI prints
its message on one line and exits with code 2; anything else is a bug and
keeps its traceback.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from shgcn.core.errors import UserError

__all__ = ["UserError", "api_words", "located", "option", "quoted"]

# whether the caller is the Python API (whose parameters the messages then name) or the command line; a context
# variable, so a build in one thread does not change the words of another's
_API_WORDS: contextvars.ContextVar[bool] = contextvars.ContextVar("shgcn_pipeline_api_words", default=False)
_API_NAMES = {"--model": "models", "--partition-file": "partition_files", "--layout-model": "layout_model"}
_API_SWITCHES = {"--undirected": "directed=False", "--directed": "directed=True", "--overwrite": "overwrite=True"}
_UNSET: Any = object()


@contextlib.contextmanager
def api_words() -> Iterator[None]:
    """Within it, :func:`option` spells options as the Python API's
    parameters (``shgcn.pipeline.build`` enters it)."""
    token = _API_WORDS.set(True)
    try:
        yield
    finally:
        _API_WORDS.reset(token)


def option(flag: str, value: Any = _UNSET, cli: str | None = None) -> str:
    """An option as the caller spells it: ``--features random:D`` on the
    command line, ``features="random:D"`` in the Python API (inside
    :func:`api_words`).

    Parameters
    ----------
    flag : the command line's long option, e.g. ``--features``
    value : the value, if the message shows one (the API shows a string quoted, anything else by ``repr``)
    cli : how the command line shows the value, when not ``str(value)`` (e.g. ``0.6,0.2,0.2`` for a split)
    """
    if not _API_WORDS.get():
        return flag if value is _UNSET else f"{flag} {value if cli is None else cli}"
    if flag in _API_SWITCHES:
        return _API_SWITCHES[flag]
    name = _API_NAMES.get(flag, flag.lstrip("-").replace("-", "_"))
    if value is _UNSET:
        return name
    return f'{name}="{value}"' if isinstance(value, str) else f"{name}={value!r}"


def located(path: str | Path, message: str, line: int | None = None) -> UserError:
    """Build a :class:`UserError` that names the file (and the line, 1-based)."""
    where = f"{path}:{line}" if line is not None else f"{path}"
    return UserError(f"{where}: {message}")


def quoted(flag: str, value: str) -> str:
    """:func:`option` with a string value the command line shows quoted too
    (``--balance 'x'``, where a stray space would hide)."""
    return option(flag, value, repr(value))
