"""A build's ``SOURCE`` to a :class:`~.base.RawSource`: a dataset name, a
generator spec (``rmat:...``, ``sbm:...``), a file path, or an in-memory
graph (the Python API)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..errors import UserError
from . import datasets, registry, synthetic
from .base import RawSource, ReadOptions
from .memory import submit_memory
from .probe import readable
from .readers import submit_read


@dataclass
class Source:
    """Attributes: raw (the futures); name; directed_default (what the
    dataset is, None: unknown); feature_norm; kind (``dataset``, ``file``,
    ``generator`` or ``memory``); dataset (the registered dataset named by
    SOURCE, whose published counts the build compares with; a directory
    merely named like one may be a user's sample of it)."""

    raw: RawSource
    name: str
    directed_default: bool | None
    feature_norm: str
    kind: str
    dataset: datasets.Dataset | None = None


def is_path(source: str) -> bool:
    """A SOURCE string that is neither a generator spec nor a dataset name."""
    return synthetic.parse_spec_kind(source) is None and source.lower() not in datasets.REGISTRY


def preflight(source: Any, data_dir: str | None, files: tuple[str, ...] = (), local: bool = True) -> None:
    """What can be checked on this machine before any cluster starts or
    anything is created: a dataset's files are found (or downloaded: a
    failure is one line and leaves no empty cache directory), and, when the
    workers share this machine's files (``local``), a file source and the
    other input ``files`` exist and may be read."""
    if not isinstance(source, str) or synthetic.parse_spec_kind(source) is not None:
        paths = list(files)
    elif source.lower() in datasets.REGISTRY:
        datasets.locate(datasets.lookup(source), data_dir)
        paths = list(files)
    else:
        paths = [source, *files]
    if not local:
        return
    for p in paths:
        if not Path(p).exists():
            if p == source and not _names_files(p):
                known = ", ".join(sorted(datasets.REGISTRY))
                raise UserError(f"{p}: no such file, and not a known dataset ({known}) or rmat:/sbm: spec")
            if p != source:
                raise UserError(f"{p}: file not found")
            continue
        if not Path(p).is_dir():
            readable(p)


def _names_files(path: str) -> bool:
    """A path that need not exist: its format's SOURCE names its files (a Planetoid prefix ``DIR/ind.cora``)."""
    try:
        return registry.get(registry.detect(path)).names_files
    except UserError:
        return False


def read_source(tasks, source: Any, fmt: str | None, data_dir: str | None, feature_norm: str | None,
                opts: ReadOptions) -> Source:
    """Start reading ``source`` on the workers. ``feature_norm`` None: the
    dataset's default (``none`` for anything else)."""
    norm = feature_norm or "none"
    if not isinstance(source, str):
        return Source(submit_memory(tasks, source), "in-memory graph", None, norm, "memory")
    gen = synthetic.submit(tasks, source, opts.limit)
    if gen is not None:
        return Source(gen, source, gen.directed, norm, "generator")
    if source.lower() in datasets.REGISTRY:
        ds = datasets.lookup(source)
        path = str(datasets.locate(ds, data_dir))
        if opts.split_scheme is None and ds.split_scheme is not None:
            opts = replace(opts, split_scheme=ds.split_scheme)
        return Source(submit_read(tasks, path, fmt or ds.format, opts), ds.name, ds.directed,
                      feature_norm or ds.feature_norm, "dataset", ds)
    try:
        raw = submit_read(tasks, source, fmt, opts)
    except UserError as e:
        if str(e) == f"{source}: file not found":
            known = ", ".join(sorted(datasets.REGISTRY))
            raise UserError(f"{source}: no such file, and not a known dataset ({known}) or rmat:/sbm: spec") \
                from None
        raise
    if Path(source).is_dir():  # a dataset directory named like a registered dataset reads as that dataset does
        named = datasets.REGISTRY.get(Path(source).resolve().name.replace("_", "-").lower())
        if named is not None:
            return Source(raw, Path(source).name, named.directed, feature_norm or named.feature_norm, "dataset")
    return Source(raw, Path(source).name, None, norm, "file")
