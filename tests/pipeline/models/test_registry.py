import pytest

from shgcn.pipeline.errors import UserError
from shgcn.pipeline.models import DEFAULT_ALL, REGISTRY, build_order, default_options, get, model_names, options
from shgcn.pipeline.models.base import GRAPH


def test_every_model_is_registered_with_its_needs():
    assert set(DEFAULT_ALL) <= set(model_names())
    assert {"hp-vb", "gp-vb", "shp-vb"} <= set(REGISTRY)
    assert GRAPH in get("shp").needs and get("shp").starts_from == ("gp", "hp")
    assert get("hp-vb").starts_from == ("hp",) and GRAPH in get("shp-vb").needs
    assert get("rp").needs == frozenset()


def test_unknown_model_names_the_known_ones():
    with pytest.raises(UserError, match="known models: rp, gp, hp"):
        get("nope")


def test_build_order_puts_starts_first():
    assert build_order(("shp", "hp-vb", "gp", "hp")) == ["gp", "hp", "shp", "hp-vb"]
    assert build_order(("hp-vb",)) == ["hp-vb"]  # a start not asked for is computed by the model itself
    assert build_order(("hp", "gp")) == ["gp", "hp"]  # hp takes the build's gp partition as one more start


def test_shared_options_appear_once_with_their_defaults():
    flags = [o.flag for o in options()]
    assert len(flags) == len(set(flags)) and "--hp-preset" in flags and "--max-total-increase" in flags
    assert default_options()["hp_preset"] == "default"


def test_what_the_plan_and_the_build_ask_of_the_models():
    """Every model's plan figures lead to a registered model (its own or the one it resembles, in turn); rp alone
    partitions in the build's process; hp alone is laid out first; the report's baseline is a registered model."""
    from shgcn.core.tables import BASELINE, REFERENCE

    for name, m in REGISTRY.items():
        assert m.resembles in REGISTRY, name
    assert [n for n, m in REGISTRY.items() if not m.runs_in_child] == ["rp"]
    assert [n for n, m in REGISTRY.items() if m.layout_first] == ["hp"]
    assert (get("shp").resembles, get("hp-vb").resembles, get("shp-vb").resembles) == ("hp", "hp", "shp")
    assert BASELINE in REGISTRY and get(BASELINE).balance == "rows" and REFERENCE in REGISTRY
