"""The trainer's parts, each one declared object: a spec from the registries
at the bottom of the package graph (:mod:`shgcn.core.registry`: the part's
name, description, options, capabilities and cost model) joined to its
implementation here by a typed reference, not a string: a part's name is
written once, in its spec.

:data:`shgcn.trainer.archs.ARCHS`, :data:`shgcn.trainer.exchanges.EXCHANGES`,
:data:`shgcn.trainer.algorithms.ALGORITHMS` and
:data:`shgcn.trainer.backends.BACKENDS` are :class:`Parts`; ``shgcn-train``'s
``--arch``/``--exchange``/``--algorithm``/``--backend``/``--device`` flags,
each part's own options, the configuration's checks and a checkpoint's
identity follow from them. Each is made by :meth:`Parts.of` from pairs of
a spec object and its implementation, ``Parts.of(archs.ARCHS, (archs.GCN,
GCN), ...)``; a part declared outside the tree is one call,
:meth:`Parts.register` (its spec and its implementation: the same pair).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from shgcn.core.options import Option, own_values
from shgcn.core.plugins import PluginError
from shgcn.core.registry import Registry


class Spec(Protocol):
    """What every part's spec says of itself."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def options(self) -> tuple[Option, ...]: ...


S = TypeVar("S", bound=Spec)
I = TypeVar("I")  # noqa: E741 - the implementation's type


@dataclass(frozen=True)
class Part(Generic[S, I]):
    """One part: its spec (cost model, options, capabilities) and its implementation."""

    spec: S
    impl: I

    @property
    def name(self) -> str:
        return self.spec.name

    def own(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """Its options' values (``dest -> value``) from ``values`` (defaults where absent): what its
        constructor takes."""
        return own_values(self.spec.options, values)


@dataclass(frozen=True)
class Parts(Mapping[str, Part[S, I]], Generic[S, I]):
    """The parts of one kind: the specs of a :class:`~shgcn.core.registry.Registry` (which the epoch model and
    the pipeline read without the trainer) joined to their implementations (made by :meth:`of`, from each
    spec object and its implementation; looked up by name, as the command line gives one).

    Attributes
    ----------
    specs : the kind's registry of specs (``--arch``'s :data:`shgcn.core.archs.ARCHS`)
    impls : name -> implementation (a class, or a function), the names its specs'
    """

    specs: Registry[S]
    impls: dict[str, I]

    def __post_init__(self) -> None:
        missing = set(self.specs.built_in) - set(self.impls)
        if missing:  # a built-in spec the trainer cannot run is a wiring error, found at import
            raise ImportError(f"{self.specs.option}: no implementation of {', '.join(sorted(missing))}")

    @classmethod
    def of(cls, specs: Registry[S], *parts: tuple[S, I]) -> Parts[S, I]:
        """The parts of ``specs``' kind, each a pair of a spec object of ``specs`` and its implementation
        (``(archs.GCN, GCN)``): joined by reference, the name written only in the spec. An ImportError (a wiring
        error, found at import) for a spec that is not ``specs``' own, a spec given twice, an implementation
        declaring another part (its ``spec``, as the architectures' layers have, or its ``name``, as the
        exchanges' classes have: their spec's), or a built-in spec left without an implementation."""
        impls: dict[str, I] = {}
        for spec, impl in parts:
            if specs.entries.get(spec.name) is not spec:
                raise ImportError(f"{specs.option} {spec.name}: a spec not of its registry")
            if spec.name in impls:
                raise ImportError(f"{specs.option} {spec.name}: implemented twice")
            declared, named = getattr(impl, "spec", spec), getattr(impl, "name", spec.name)
            if declared is not spec or (isinstance(named, str) and named != spec.name):  # a property is no name
                other = getattr(declared, "name", None) if declared is not spec else named
                raise ImportError(f"{specs.option} {spec.name}: its implementation declares another part ({other!r})")
            impls[spec.name] = impl
        return cls(specs, impls)

    def implemented(self) -> Registry[S]:
        """The specs, once the plugins have loaded; a :class:`~shgcn.core.plugins.PluginError` for a spec a
        plugin registered without an implementation (the trainer could run none of it)."""
        names = self.specs.names()
        missing = [n for n in names if n not in self.impls]
        if missing:
            raise PluginError(f"{self.specs.option} {', '.join(missing)}: a spec registered without an "
                              f"implementation (shgcn.parts: register the spec and its implementation in one call)")
        return self.specs

    def __getitem__(self, name: str) -> Part[S, I]:
        return Part(self.implemented()[name], self.impls[name])

    def __iter__(self) -> Iterator[str]:
        return iter(self.implemented())

    def __len__(self) -> int:
        return len(self.specs)

    @property
    def option(self) -> str:
        return self.specs.option

    def get(self, name: str) -> Part[S, I]:  # type: ignore[override]
        """The part ``name``; a :class:`UserError` listing the choices for an unknown one."""
        return Part(self.implemented().get_spec(name), self.impls[name])

    def register(self, spec: S, impl: I) -> Part[S, I]:
        """Declare a part from outside the tree: its spec (into the registry the cost models read) and its
        implementation. A ValueError for a name taken."""
        self.specs.register(spec)
        self.impls[spec.name] = impl
        return Part(spec, impl)

    def unregister(self, name: str) -> None:
        """Remove a part :meth:`register` added (a test's toy part, once its test ends)."""
        self.specs.unregister(name)
        self.impls.pop(name, None)

    def all_options(self) -> list[Option]:
        """Every option its parts declare, each flag once (:meth:`shgcn.core.registry.Registry.all_options`)."""
        return self.specs.all_options()
