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


def test_a_part_is_its_spec_and_its_implementation():
    parts = Parts(Registry("--thing", {"a": Spec("a", options=(SIZE,))}), {"a": impl_a})
    part = parts["a"]
    assert isinstance(part, Part) and part.name == "a" and part.impl is impl_a
    assert part.own({"size": 3, "other": 0}) == {"size": 3} and part.own({}) == {"size": 1}
    assert list(parts) == ["a"] and len(parts) == 1 and parts.option == "--thing" and parts.all_options() == [SIZE]


def test_register_adds_spec_and_implementation_in_one_call_and_unregister_removes_both():
    specs = Registry("--thing", {"a": Spec("a")})
    parts = Parts(specs, {"a": impl_a})
    parts.register(Spec("b"), impl_a)
    assert "b" in specs and parts.get("b").impl is impl_a
    with pytest.raises(ValueError):
        parts.register(Spec("b"), impl_a)
    parts.unregister("b")
    assert "b" not in specs and "b" not in parts


def test_a_spec_without_an_implementation_is_found_at_import():
    with pytest.raises(ImportError, match="--thing: no implementation of b"):
        Parts(Registry("--thing", {"a": Spec("a"), "b": Spec("b")}), {"a": impl_a})


def test_every_registered_part_of_the_trainer_has_its_implementation():
    from shgcn.trainer.algorithms import ALGORITHMS
    from shgcn.trainer.archs import ARCHS
    from shgcn.trainer.backends import BACKENDS
    from shgcn.trainer.exchanges import EXCHANGES

    for parts in (ARCHS, EXCHANGES, ALGORITHMS, BACKENDS):
        assert all(callable(p.impl) and p.spec.name == name for name, p in parts.items())
