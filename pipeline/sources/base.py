"""The protocol every graph reader implements, and what flows through it.

A reader is a small object that says what it is (``name``: its
``--format``), which paths it claims (``recognizes``: a :class:`Recognizes`,
matched by :func:`.probe.detect_format`, the one place that decides a
path's format), whether a path names its files rather than being one
(``names_files``), how it checks a path before a build (``precheck``: what
``--plan`` checks) and how to start reading a path on the Dask workers
(``submit(tasks, path, opts) -> RawSource``: futures, never the edges). The
registry (:mod:`.registry`) lists the readers by name; :mod:`.readers`
reads a path with them.

This module imports nothing heavy: ``pipeline build --help`` lists the
formats from the registry.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from . import budget
from .parsing import DEFAULT_CHUNK_BYTES, MAX_LINE_BYTES

HEADERS = ("auto", "yes", "no")  # --header: is an edge list's first line its size?


@dataclass(frozen=True)
class Recognizes:
    """The paths a reader claims, for :func:`.probe.detect_format`.

    Names are compared lower-cased, without a trailing ``.gz``. The probe
    checks, in this order and each over every reader in the registry's order:
    ``suffixes`` (files and directories), then for a directory ``files``,
    ``folders`` and ``directory``, else ``prefixes``, then ``loose`` and
    ``bare``. The first match decides.

    Attributes
    ----------
    suffixes : name endings that are this format's (``.mtx``)
    unless : name starts that keep ``suffixes`` from matching (METIS's
        ``.graph`` is also the end of Planetoid's ``ind.NAME.graph``)
    files : paths inside a directory, any of which makes it this format's
    folders : sub-directories, any of which makes a directory this format's
        (checked after every reader's ``files``)
    directory : any directory no reader's ``files`` or ``folders`` claim
    prefixes : name starts (Planetoid's ``ind.``)
    loose : name endings that suggest the format when nothing else matched
    bare : a name without any ``.`` (checked with ``loose``)
    """

    suffixes: tuple[str, ...] = ()
    unless: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    folders: tuple[str, ...] = ()
    directory: bool = False
    prefixes: tuple[str, ...] = ()
    loose: tuple[str, ...] = ()
    bare: bool = False


@dataclass(frozen=True)
class ReadOptions:
    """chunk_bytes: text per parse task; max_line: longest line accepted;
    header: ``auto`` (skip a first line that is the file's size), yes, no;
    split_scheme: an OGB directory's ``split/<scheme>`` (None: the only one,
    or the dataset's); work_dir: scratch space for node data converted to
    row-addressable files (None: a temporary directory); feature_dtype:
    what those files hold (float32 or float16)."""

    chunk_bytes: int = DEFAULT_CHUNK_BYTES
    max_line: int = MAX_LINE_BYTES
    header: str = "auto"
    split_scheme: str | None = None
    work_dir: str | None = None
    feature_dtype: str = "float32"
    memory_limit: int | None = None  # bytes the build may use (None: this machine's memory)
    guard: bool = True  # False: the build's plan checked the limit already (BuildConfig.planned)

    @property
    def limit(self) -> int | None:
        """The budget the readers check sizes against (None: none, the plan checked it)."""
        return (self.memory_limit or budget.machine_memory()) if self.guard else None


@dataclass
class RawSource:
    """A graph read on the workers: chunk futures and what the client knows.

    Attributes
    ----------
    chunks : futures of :class:`~.records.ParsedChunk`, in file order. Ids
        are 0-based vertex numbers when ``n`` is set, else the file's labels.
    metas : one :class:`~.chunks.ChunkMeta` per chunk
    n : declared vertex count, or None (ids are relabelled)
    base : file label of vertex 0 when ``n`` is set
    directed : what the file says about direction, or None
    direction : why the input is directed or not, for the log (in-memory graphs), or None
    nodes : future of a :class:`~.records.NodeSource` (features, labels, split), or None
    """

    name: str
    chunks: list
    metas: list
    n: int | None
    base: int = 0
    directed: bool | None = None
    nodes: Any = None
    notes: list[str] = field(default_factory=list)
    direction: str | None = None

    @property
    def lines(self) -> int:
        return sum(m.edges for m in self.metas)


class Reader(Protocol):
    """A graph format's reader.

    Attributes
    ----------
    name : the format's name (``--format``)
    recognizes : the paths it claims when no ``--format`` is given
    names_files : a SOURCE of this format names the files it reads (Planetoid's
        prefix ``DIR/ind.cora``) rather than being one: the path need not
        exist, and it is not a file the workers must read
    """

    @property
    def name(self) -> str: ...

    @property
    def recognizes(self) -> Recognizes: ...

    @property
    def names_files(self) -> bool: ...

    def precheck(self, path: str, split_scheme: str | None) -> None:
        """Its own first look at ``path`` (its ``ingest-probe``, on this machine), without its memory guard (the
        build's plan checks the memory from the counts): the one-line
        :class:`~shgcn.pipeline.errors.UserError` the build would raise before reading anything."""

    def submit(self, tasks, path: str, opts: ReadOptions) -> RawSource:
        """Start reading ``path`` on the workers (``tasks``: a
        :class:`~..runtime.client.Tasks`); bad input is a one-line
        :class:`~shgcn.pipeline.errors.UserError` naming the file."""
