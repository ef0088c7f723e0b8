"""A command-line option that a part declares: an :class:`Option` says its
flag, default, help, how its text converts and which values it allows.

A part (a partition model in the pipeline; an architecture, algorithm,
exchange or backend in the trainer) lists its own options, so the command
line, the configuration and a checkpoint's identity follow from the part's
declaration: nothing outside the part names them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .errors import UserError


@dataclass(frozen=True)
class Option:
    """A command-line option of a part.

    ``flag`` is the option (``--hp-preset``); its value reaches the part as
    ``options[dest]`` (``hp_preset``). ``type`` converts the text;
    ``choices`` limits it; ``low`` (inclusive) and ``below`` (exclusive)
    bound a number, checked by :meth:`check`. Several parts may share an
    option (the same ``flag``): a command line adds it once.
    """

    flag: str
    default: Any
    help: str
    type: Callable[[str], Any] = str
    choices: tuple | None = None
    metavar: str | None = None
    low: float | None = None
    below: float | None = None

    @property
    def dest(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")

    def value(self, options: Mapping[str, Any]) -> Any:
        """This option's value in ``options`` (by :attr:`dest`), else its default."""
        return options.get(self.dest, self.default)

    def check(self, value: Any) -> None:
        """Raise :class:`~shgcn.core.errors.UserError` for a value this option does not allow (None: its
        default, when the default is None)."""
        if value is None and self.default is None:
            return
        if self.choices is not None and value not in self.choices:
            raise UserError(f"{self.flag} {value!r}: choose from {', '.join(map(str, self.choices))}")
        if self.low is None and self.below is None:
            return
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise UserError(f"{self.flag} {value!r}: must be a finite number")
        if self.low is not None and value < self.low:
            raise UserError(f"{self.flag} {value}: must be >= {self.low:g}")
        if self.below is not None and value >= self.below:
            raise UserError(f"{self.flag} {value}: must be below {self.below:g}")

    def add_to(self, parser: Any, given_only: bool = False) -> None:
        """Add this option to an argparse parser or argument group; ``given_only``: the parsed arguments hold it
        only when the command line gives it (so a value given is told from the default, even when equal)."""
        import argparse

        kw: dict[str, Any] = {"help": self.help, "default": self.default}
        if given_only:
            kw = {"help": f"{self.help} (default: {self.default})".replace("%", "%%").replace("%%%%", "%%"),
                  "default": argparse.SUPPRESS}
        if self.choices is not None:
            kw["choices"] = self.choices
        if self.metavar is not None:
            kw["metavar"] = self.metavar
        parser.add_argument(self.flag, type=self.type, **kw)


def check_options(options: Iterable[Option], values: Mapping[str, Any]) -> None:
    """Check every option's value in ``values`` (its default where absent)."""
    for opt in options:
        opt.check(opt.value(values))


def own_values(options: Iterable[Option], values: Mapping[str, Any]) -> dict[str, Any]:
    """``dest -> value`` of ``options`` from ``values`` (defaults where absent): what a part's constructor takes."""
    return {opt.dest: opt.value(values) for opt in options}
