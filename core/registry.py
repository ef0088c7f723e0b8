"""Registries of named parts: a name on the command line -> its spec.

The trainer's parts (GNN architectures, distributed algorithms, exchanges)
are each described here, at the bottom of the package graph, by a spec that
says what they cost (bytes, messages, time, memory) and where their
implementation lives (``impl``: ``"package.module:attribute"``). The epoch
model, the pipeline and the report read the specs; the trainer imports the
implementation by that path (:func:`load`). So a new part is its module(s)
plus one registry line, and nothing outside them compares its name.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from .errors import UserError

T = TypeVar("T")


@dataclass(frozen=True)
class Registry(Mapping[str, T], Generic[T]):
    """Named specs of one kind, in the order the command line lists them.

    Attributes
    ----------
    option : the command-line option that chooses one (``--arch``), for messages
    entries : name -> spec
    """

    option: str
    entries: dict[str, T]

    def __getitem__(self, name: str) -> T:
        return self.entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def get_spec(self, name: str) -> T:
        """The spec of ``name``; a :class:`UserError` listing the choices for an unknown one."""
        if name not in self.entries:
            raise UserError(f"{self.option} {name!r}: choose from {', '.join(self.entries)}")
        return self.entries[name]

    def names(self) -> tuple[str, ...]:
        return tuple(self.entries)


def load(path: str) -> Any:
    """The object at ``"package.module:attribute"`` (imported on first use)."""
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)
