"""Registries of named parts (core/registry.py)."""

import dataclasses
from collections.abc import Mapping

import pytest

from shgcn.core.errors import UserError
from shgcn.core.options import Option
from shgcn.core.registry import Registry

REG = Registry("--colour", {"red": 1, "green": 2, "blue": 3})


def test_an_unknown_name_is_one_line_listing_the_choices_in_order():
    with pytest.raises(UserError) as e:
        REG.get_spec("mauve")
    assert str(e.value) == "--colour 'mauve': choose from red, green, blue"
    assert REG.get_spec("green") == 2


def test_names_keep_the_order_given():
    assert REG.names() == ("red", "green", "blue")
    assert Registry("--x", {}).names() == ()


def test_it_is_a_read_only_mapping():
    assert isinstance(REG, Mapping)
    assert len(REG) == 3 and list(REG) == ["red", "green", "blue"]
    assert REG["blue"] == 3 and "red" in REG and "mauve" not in REG
    assert dict(REG) == {"red": 1, "green": 2, "blue": 3} and REG.get("mauve", 0) == 0
    assert list(REG.items()) == [("red", 1), ("green", 2), ("blue", 3)]
    with pytest.raises(KeyError):
        REG["mauve"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        REG.option = "--color"  # type: ignore[misc]
    with pytest.raises(TypeError):
        REG["mauve"] = 4  # type: ignore[index]


@dataclasses.dataclass(frozen=True)
class Spec:
    name: str
    options: tuple[Option, ...] = ()


WIDTH = Option("--width", 3, "a width", type=int, low=1)
SHADE = Option("--shade", "dark", "a shade", choices=("dark", "light"))


def test_register_adds_a_spec_under_its_name_once_and_unregister_removes_it():
    reg = Registry("--shape", {"square": Spec("square")})
    assert reg.register(Spec("circle")) == Spec("circle") and reg.names() == ("square", "circle")
    with pytest.raises(ValueError, match="'circle' is registered already"):
        reg.register(Spec("circle"))
    reg.unregister("circle")
    reg.unregister("circle")  # gone already: nothing to do
    assert reg.names() == ("square",)


def test_options_are_checked_for_the_chosen_spec_and_refused_for_another():
    reg = Registry("--shape", {"square": Spec("square", (WIDTH,)), "round": Spec("round", (WIDTH, SHADE)),
                               "dot": Spec("dot")})
    assert reg.all_options() == [WIDTH, SHADE] and reg.owners(SHADE) == ["round"]
    reg.check_options("round", {"width": 5, "shade": "light"})
    reg.check_options("dot", {})
    with pytest.raises(UserError, match="--width 3: an option of --shape square or round, not of --shape dot"):
        reg.check_options("dot", {"width": 3})  # another spec's option, given at its default: refused too
    with pytest.raises(UserError) as e:
        reg.check_options("square", {"shade": "light"})
    assert str(e.value) == "--shade light: an option of --shape round, not of --shape square"
    with pytest.raises(UserError, match=r"--width 0: must be >= 1"):
        reg.check_options("square", {"width": 0})
    with pytest.raises(UserError, match=r"--shade 'grey': choose from dark, light"):
        reg.check_options("round", {"shade": "grey"})


def test_the_registered_parts_name_themselves():
    from shgcn.core.algorithms import ALGORITHMS
    from shgcn.core.archs import ARCHS
    from shgcn.core.exchanges import EXCHANGES

    for reg, option in ((ARCHS, "--arch"), (ALGORITHMS, "--algorithm"), (EXCHANGES, "--exchange")):
        assert reg.option == option
        assert all(spec.name == name and isinstance(spec.options, tuple) for name, spec in reg.items())


def test_of_keys_each_spec_by_its_own_name_in_the_order_given():
    square, circle = Spec("square", (WIDTH,)), Spec("circle")
    reg = Registry.of("--shape", square, circle)
    assert reg.option == "--shape" and reg.names() == ("square", "circle") and reg["circle"] is circle
    assert reg.built_in == frozenset({"square", "circle"}) and Registry.of("--x").names() == ()
    reg.register(Spec("dot"))  # a registry made of specs takes a plugin's as any other
    assert reg.names() == ("square", "circle", "dot")


def test_of_refuses_a_name_two_specs_take_with_one_clear_error():
    with pytest.raises(ValueError) as e:
        Registry.of("--shape", Spec("square"), Spec("circle"), Spec("square", (WIDTH,)))
    assert str(e.value) == "--shape 'square' is declared twice (a name is one spec's)"


def test_every_registry_of_parts_is_made_of_its_specs():
    from shgcn.core.algorithms import ALGORITHMS, ONED_COST, ONEHALFD_COST, TWOD_COST
    from shgcn.core.archs import ARCHS, GAT, GCN, GIN, SAGE
    from shgcn.core.exchanges import ALLTOALLV_COST, BCAST_COST, EXCHANGES, NODE_COST, P2P_COST

    for reg, specs in ((ARCHS, (GCN, SAGE, GIN, GAT)), (ALGORITHMS, (ONED_COST, ONEHALFD_COST, TWOD_COST)),
                       (EXCHANGES, (P2P_COST, ALLTOALLV_COST, BCAST_COST, NODE_COST))):
        assert [reg[s.name] for s in specs] == list(specs) and reg.names()[:len(specs)] == tuple(s.name for s in specs)
