"""Registries of named parts: a name on the command line -> its spec.

The trainer's parts (GNN architectures, distributed algorithms, exchanges)
are each described here, at the bottom of the package graph, by a spec that
says what they cost (bytes, messages, time, memory), which options they take
(:class:`shgcn.core.options.Option`) and what they can do. The epoch model,
the pipeline and the report read the specs; the trainer joins each spec to
its implementation by a typed reference (:class:`shgcn.trainer.parts.Parts`),
so nothing here names a module above it. A new part is its module(s) plus one
registry line (:meth:`Registry.register` for one declared outside the tree),
and nothing outside them compares its name.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from .errors import UserError
from .options import Option


class Named(Protocol):
    """What a registered spec says of itself: its name, and the command-line options it takes."""

    @property
    def name(self) -> str: ...

    @property
    def options(self) -> tuple[Option, ...]: ...


T = TypeVar("T", bound=Named)


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

    def register(self, spec: T) -> T:
        """Add ``spec`` under its name (a part declared outside the tree); a ValueError for a name taken."""
        if spec.name in self.entries:
            raise ValueError(f"{self.option} {spec.name!r} is registered already")
        self.entries[spec.name] = spec
        return spec

    def unregister(self, name: str) -> None:
        """Remove ``name`` (a test's part, once its test ends)."""
        self.entries.pop(name, None)


    def all_options(self) -> list[Option]:
        """Every option its specs declare, each flag once (specs may share one), in registry order."""
        seen: dict[str, Option] = {}
        for spec in self.entries.values():
            for opt in spec.options:
                seen.setdefault(opt.flag, opt)
        return list(seen.values())

    def owners(self, opt: Option) -> list[str]:
        """The names of the specs that declare ``opt`` (by flag)."""
        return [n for n, spec in self.entries.items() if any(o.flag == opt.flag for o in spec.options)]

    def check_options(self, chosen: str, values: Mapping[str, Any]) -> None:
        """Raise :class:`UserError` for a value ``chosen``'s options do not allow, or an option of another spec
        of this kind given a value other than its default (an option the run would ignore)."""
        mine = {o.flag for o in self.get_spec(chosen).options}
        for opt in self.all_options():
            value = opt.value(values)
            if opt.flag in mine:
                opt.check(value)
            elif value != opt.default:
                raise UserError(f"{opt.flag} {value}: an option of {self.option} {' or '.join(self.owners(opt))}, "
                                f"not of {self.option} {chosen}")
