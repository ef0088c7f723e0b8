"""Registries of named parts (core/registry.py)."""

import dataclasses
from collections.abc import Mapping

import pytest

from shgcn.core.errors import UserError
from shgcn.core.registry import Registry, load

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


def test_load_imports_the_attribute_of_a_path():
    from shgcn.core import csr

    assert load("shgcn.core.csr:segments") is csr.segments
    assert load("os.path:join")("a", "b") == "a/b"
    with pytest.raises(AttributeError):
        load("shgcn.core.csr:nothing")
    with pytest.raises(ModuleNotFoundError):
        load("shgcn.core.nothing:segments")


def test_the_registered_parts_name_themselves():
    from shgcn.core.algorithms import ALGORITHMS
    from shgcn.core.archs import ARCHS
    from shgcn.core.exchanges import EXCHANGES

    for reg, option in ((ARCHS, "--arch"), (ALGORITHMS, "--algorithm"), (EXCHANGES, "--exchange")):
        assert reg.option == option
        assert all(spec.name == name and spec.impl.startswith("shgcn.trainer.") for name, spec in reg.items())
