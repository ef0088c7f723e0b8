"""The error every user-facing problem derives from.

:class:`UserError` lives at the bottom of the package graph so that the
store, the pipeline and the trainer raise one family of errors, which every
command prints on one line and answers with exit code 2.
"""

from __future__ import annotations


class UserError(Exception):
    """A problem with the user's input, options or files (not a bug).
    Commands print the message on one line and exit with code 2."""

    exit_code = 2
