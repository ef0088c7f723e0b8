"""Graphs read (or generated) whole, in one task: a scipy ``.npz``, the
Planetoid pickles, the SBM. The task returns a :class:`Whole`; the client
learns a few numbers of it, and its edges and node data stay on the worker as
a one-chunk :class:`~.base.RawSource`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from .base import RawSource
from .chunks import ChunkMeta
from .records import NodeSource, ParsedChunk


@dataclass
class Whole:
    """A graph read in one task: its edges (0-based), size and node data."""

    chunk: ParsedChunk
    n: int
    directed: bool | None
    base: int = 0
    nodes: NodeSource | None = None
    notes: list[str] = field(default_factory=list)


def whole_chunk(w: Whole) -> ParsedChunk:
    return w.chunk


def whole_nodes(w: Whole) -> NodeSource | None:
    return w.nodes


def whole_info(w: Whole) -> tuple[int, bool | None, int, list[str], bool]:
    """What the client learns: (n, directed, edges, notes, whether node data came with it)."""
    return w.n, w.directed, w.chunk.n_lines, w.notes, w.nodes is not None


def submit_whole(tasks, stage: str, name: str, read: Callable[..., Whole], *args) -> RawSource:
    """``read(*args)`` as one ``stage`` task; its edges become the one chunk
    of a :class:`RawSource` called ``name``, its node data (if any) the
    source's nodes."""
    whole = tasks.submit(stage, read, *args)
    n, directed, lines, notes, has_nodes = tasks.submit("ingest-info", whole_info, whole).result()
    chunk = tasks.submit("ingest-chunk", whole_chunk, whole)
    nodes = tasks.submit("ingest-nodes", whole_nodes, whole) if has_nodes else None
    return RawSource(name, [chunk], [ChunkMeta(lines, 0, lines, None)], n, 0, directed, nodes, notes)
