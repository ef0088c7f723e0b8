"""Every partition model by name (``--model``): a
:class:`~shgcn.core.registry.Registry`. Each model module defines its model
object; this module lists the built-in ones (static imports: no import-time
registration, no cycle). A new model is one module in this package plus one
line here, or, outside the tree, ``shgcn.parts.MODELS.register(model)`` in a
plugin; and a test that subclasses :class:`shgcn.testing.partitioners.PartitionerTests`."""

from __future__ import annotations

from shgcn.core.registry import Registry

from ..errors import UserError
from . import gp, hp, rp, shp
from .base import GRAPH_FILE, Option, PartitionConfig, Partitioner
from .vb import refined

_BASE: tuple[Partitioner, ...] = (rp.MODEL, gp.MODEL, hp.MODEL, shp.MODEL)
REGISTRY: Registry[Partitioner] = Registry.of("--model", *_BASE, *(refined(b) for b in (hp.MODEL, gp.MODEL, shp.MODEL)))
DEFAULT_ALL = ("rp", "gp", "hp", "shp")  # what ``--model all`` means


def model_names() -> tuple[str, ...]:
    """Every registered model (the CLI's ``--model`` choices)."""
    return REGISTRY.names()


def get(name: str) -> Partitioner:
    """The model called ``name``; :class:`UserError` naming the known ones otherwise."""
    if name not in REGISTRY:
        raise UserError(f"unknown model {name!r}; known models: {', '.join(REGISTRY.names())}")
    return REGISTRY[name]


def options() -> tuple[Option, ...]:
    """Every model's options, each once (several models may share one)."""
    seen: dict[str, Option] = {}
    for p in REGISTRY.values():
        for opt in p.options:
            seen.setdefault(opt.dest, opt)
    return tuple(seen.values())


def default_options() -> dict[str, object]:
    """Every option's default, by ``dest``."""
    return {opt.dest: opt.default for opt in options()}


def build_order(models: tuple[str, ...]) -> list[str]:
    """``models`` in an order where each comes after the models of the list
    it starts from."""
    order: list[str] = []

    def visit(m: str) -> None:
        if m in order:
            return
        for s in get(m).starts_from:
            if s in models:
                visit(s)
        order.append(m)

    for m in models:
        visit(m)
    return order


def reads_graph_file(models: tuple[str, ...], cfg: PartitionConfig) -> bool:
    """Whether a model of the build (with the options of ``cfg``) reads the graph file: only then does the
    partition stage write it (and spill the patterns beside it while a child reads it)."""
    return any(GRAPH_FILE in get(m).needs_for(cfg) for m in build_order(models))
