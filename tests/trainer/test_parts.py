"""The trainer's parts (trainer/parts.py): a registry of specs joined to implementations by a typed reference,
a part declared from outside the tree in one call, and every registered spec implemented."""

import dataclasses

import pytest

from shgcn.core.options import Option
from shgcn.core.registry import Registry
from shgcn.trainer.parts import Part, Parts


@dataclasses.dataclass(frozen=True)
class Spec:
    name: str
    description: str = ""
    options: tuple[Option, ...] = ()


SIZE = Option("--size", 1, "a size", type=int, low=1)


def impl_a(**kw):
    return ("a", kw)


def impl_b(**kw):
    return ("b", kw)


def test_a_part_is_its_spec_and_its_implementation():
    a = Spec("a", options=(SIZE,))
    parts = Parts.of(Registry.of("--thing", a), (a, impl_a))
    part = parts["a"]
    assert isinstance(part, Part) and part.name == "a" and part.impl is impl_a
    assert part.own({"size": 3, "other": 0}) == {"size": 3} and part.own({}) == {"size": 1}
    assert list(parts) == ["a"] and len(parts) == 1 and parts.option == "--thing" and parts.all_options() == [SIZE]


def test_register_adds_spec_and_implementation_in_one_call_and_unregister_removes_both():
    a = Spec("a")
    specs = Registry.of("--thing", a)
    parts = Parts.of(specs, (a, impl_a))
    parts.register(Spec("b"), impl_a)
    assert "b" in specs and parts.get("b").impl is impl_a
    with pytest.raises(ValueError):
        parts.register(Spec("b"), impl_a)
    parts.unregister("b")
    assert "b" not in specs and "b" not in parts


def test_a_spec_without_an_implementation_is_found_at_import():
    a, b = Spec("a"), Spec("b")
    with pytest.raises(ImportError, match="--thing: no implementation of b"):
        Parts.of(Registry.of("--thing", a, b), (a, impl_a))


def test_of_joins_each_implementation_to_its_spec_object_not_to_a_name():
    a, b = Spec("a"), Spec("b")
    specs = Registry.of("--thing", a, b)
    parts = Parts.of(specs, (b, impl_b), (a, impl_a))
    assert list(parts) == ["a", "b"] and parts["a"].impl is impl_a and parts.get("b").impl is impl_b
    assert parts["b"].spec is b
    with pytest.raises(ImportError, match="--thing a: a spec not of its registry"):
        Parts.of(specs, (Spec("a"), impl_a), (b, impl_b))  # an equal spec, not the registry's own
    with pytest.raises(ImportError, match="--thing a: implemented twice"):
        Parts.of(specs, (a, impl_a), (a, impl_b), (b, impl_b))


def test_of_refuses_an_implementation_that_declares_another_part():
    a, b = Spec("a"), Spec("b")
    specs = Registry.of("--thing", a, b)

    class Declares:
        spec = b

    class Named:
        name = "b"

    with pytest.raises(ImportError, match=r"--thing a: its implementation declares another part \('b'\)"):
        Parts.of(specs, (a, Declares), (b, impl_b))
    with pytest.raises(ImportError, match=r"--thing a: its implementation declares another part \('b'\)"):
        Parts.of(specs, (a, Named), (b, impl_b))
    Declares.spec = a
    assert Parts.of(specs, (a, Declares), (b, Named))["b"].impl is Named


def test_every_registered_part_of_the_trainer_has_its_implementation():
    from shgcn.trainer.algorithms import ALGORITHMS
    from shgcn.trainer.archs import ARCHS
    from shgcn.trainer.backends import BACKENDS
    from shgcn.trainer.exchanges import EXCHANGES

    for parts in (ARCHS, EXCHANGES, ALGORITHMS, BACKENDS):
        assert all(callable(p.impl) and p.spec.name == name for name, p in parts.items())
        # a class that declares its spec or its name declares its own (Parts.of checks it at import)
        assert all(getattr(p.impl, "spec", p.spec) is p.spec and getattr(p.impl, "name", name) == name
                   for name, p in parts.items())
