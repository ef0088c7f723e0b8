"""Every graph reader by format name (``--format``): a
:class:`~shgcn.core.registry.Registry`. Each format's module defines its
reader (:class:`~.base.Reader`); this module lists the built-in ones (static
imports: no import-time registration, no cycle), in the order that
``--format`` lists them and :func:`.probe.detect_format` tries their claims
(a plugin's after them). A new format is one module in this package plus one
line here, or, outside the tree, ``shgcn.parts.READERS.register(reader)`` in a
plugin; and a test that subclasses :class:`shgcn.testing.readers.ReaderTests`."""

from __future__ import annotations

from pathlib import Path

from shgcn.core.registry import Registry

from ..errors import UserError
from . import edgelist, metis, mtx, npz, ogb, planetoid, saint
from .base import Reader
from .probe import detect_format

_ALL: tuple[Reader, ...] = (edgelist.READER, mtx.READER, metis.READER, npz.READER, planetoid.READER, ogb.READER,
                            saint.READER)
READERS: Registry[Reader] = Registry.of("--format", *_ALL)


def formats() -> tuple[str, ...]:
    """Every registered format (the CLI's ``--format`` choices)."""
    return READERS.names()


def get(fmt: str) -> Reader:
    """The reader of ``fmt``; :class:`UserError` naming the known formats otherwise."""
    if fmt not in READERS:
        raise UserError(f"unknown format {fmt!r}; known formats: {', '.join(READERS.names())}")
    return READERS[fmt]


def detect(path: str | Path) -> str:
    """The format of ``path`` by the registered readers' claims (:func:`.probe.detect_format`)."""
    return detect_format(path, READERS.values())
