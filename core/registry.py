"""Registries of named parts: a name on the command line -> its spec.

The trainer's parts (GNN architectures, distributed algorithms, exchanges)
are each described here, at the bottom of the package graph, by a spec that
says what they cost (bytes, messages, time, memory), which options they take
(:class:`shgcn.core.options.Option`) and what they can do. The epoch model,
the pipeline and the report read the specs; the trainer joins each spec to
its implementation by a typed reference (:class:`shgcn.trainer.parts.Parts`),
so nothing here names a module above it. A part's name is written once, in
its spec: a registry is made of its specs (:meth:`Registry.of`), each under
its own name. A new part is its module(s) plus its spec in its registry's
:meth:`Registry.of` (:meth:`Registry.register` for one declared outside the
tree), and nothing outside them compares its name.

Every registry of parts (partition models, readers, samplers, architectures,
exchanges, algorithms, backends, machines) is a :class:`Registry`; each loads the plugins
(:mod:`shgcn.core.plugins`) on its first lookup, in whatever process looks.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from . import plugins
from .errors import UserError
from .options import Option


class Named(Protocol):
    """What a registered spec says of itself: its name (and, where it takes any, its command-line options:
    ``options``, a tuple of :class:`Option`)."""

    @property
    def name(self) -> str: ...


def options_of(spec: object) -> tuple[Option, ...]:
    """The command-line options ``spec`` declares (none where it has no ``options``)."""
    return tuple(getattr(spec, "options", ()))


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
    built_in: frozenset[str] = field(init=False)  # the names it was made with (the others: registered since)

    def __post_init__(self) -> None:
        object.__setattr__(self, "built_in", frozenset(self.entries))

    @classmethod
    def of(cls, option: str, *specs: T) -> Registry[T]:
        """The registry of ``specs`` (chosen by ``option``), each under its own name, in the order given: a
        part's name is written once, in its spec. A ValueError (at import) for a name two of them take."""
        entries: dict[str, T] = {}
        for spec in specs:
            if spec.name in entries:
                raise ValueError(f"{option} {spec.name!r} is declared twice (a name is one spec's)")
            entries[spec.name] = spec
        return cls(option, entries)

    @property
    def specs(self) -> dict[str, T]:
        """Its entries, once the plugins have loaded (:func:`shgcn.core.plugins.load_plugins`: once a process)."""
        plugins.load_plugins()
        return self.entries

    def __getitem__(self, name: str) -> T:
        # a name already here is found without loading the plugins (a built-in part's module looks its spec up
        # while the package imports; the plugins' modules import that package)
        return self.entries[name] if name in self.entries else self.specs[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.specs)

    def __len__(self) -> int:
        return len(self.specs)

    def __contains__(self, name: object) -> bool:
        return name in self.entries or name in self.specs

    def get_spec(self, name: str) -> T:
        """The spec of ``name``; a :class:`UserError` listing the choices for an unknown one."""
        if name not in self:
            raise UserError(f"{self.option} {name!r}: choose from {', '.join(self.entries)}")
        return self.entries[name]

    def names(self) -> tuple[str, ...]:
        return tuple(self.specs)

    def register(self, spec: T) -> T:
        """Add ``spec`` under its name (a part declared outside the tree). A ValueError for a name taken;
        a :class:`~shgcn.core.plugins.PluginError` for malformed options (a flag without dashes, a default its
        own bounds refuse, a flag another part declares differently)."""
        if spec.name in self.entries:
            raise ValueError(f"{self.option} {spec.name!r} is registered already")
        for opt in options_of(spec):
            self._check_declared(spec.name, opt)
        self.entries[spec.name] = spec
        return spec

    def _check_declared(self, name: str, opt: Option) -> None:
        what = f"{self.option} {name}: option {opt.flag!r}"
        if not isinstance(opt.flag, str) or not opt.flag.startswith("--") or len(opt.flag) < 3 or opt.flag.strip() != opt.flag:
            raise plugins.blame(f"{what}: a flag is '--' and a name (--my-option)")
        try:
            opt.check(opt.default)
        except UserError as e:
            raise plugins.blame(f"{what}: its own default is refused ({e})") from None
        for other, spec in self.entries.items():
            if any(o.flag == opt.flag and o != opt for o in options_of(spec)):
                raise plugins.blame(f"{what}: declared differently by {self.option} {other}")

    def unregister(self, name: str) -> None:
        """Remove ``name`` (a test's part, once its test ends)."""
        self.entries.pop(name, None)


    def all_options(self) -> list[Option]:
        """Every option its specs declare, each flag once (specs may share one), in registry order."""
        seen: dict[str, Option] = {}
        for spec in self.entries.values():
            for opt in options_of(spec):
                seen.setdefault(opt.flag, opt)
        return list(seen.values())

    def owners(self, opt: Option) -> list[str]:
        """The names of the specs that declare ``opt`` (by flag)."""
        return [n for n, spec in self.entries.items() if any(o.flag == opt.flag for o in options_of(spec))]

    def check_options(self, chosen: str, values: Mapping[str, Any]) -> None:
        """Raise :class:`UserError` for a value ``chosen``'s options do not allow, or an option of another spec
        of this kind given (``values`` holds the options given; any value, its default too: an option the run
        would ignore)."""
        mine = {o.flag for o in options_of(self.get_spec(chosen))}
        for opt in self.all_options():
            value = opt.value(values)
            if opt.flag in mine:
                opt.check(value)
            elif opt.dest in values:
                raise UserError(f"{opt.flag} {value}: an option of {self.option} {' or '.join(self.owners(opt))}, "
                                f"not of {self.option} {chosen}")
