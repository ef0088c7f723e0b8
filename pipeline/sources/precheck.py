"""What ``pipeline build --plan`` checks of a SOURCE before it plans: the
same checks, with the same one-line messages, that the build applies before
it reads anything (issue 51) - a generator's parameters, a path's existence,
type (a FIFO or a device is named before anything is read from it) and
permission, its format, and the header or declared sizes of the formats that
have one. A plan is made only of what would build.

Nothing is downloaded (a registered dataset is planned from its published
counts) and nothing is read past a header."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import UserError, option
from . import datasets, registry, synthetic
from .probe import readable
from .resolve import preflight


def check_source(source: Any, fmt: str | None, data_dir: str | None, files: tuple[str, ...] = (),
                 split_scheme: str | None = None, local: bool = True) -> None:
    """Raise the build's :class:`UserError` for a SOURCE (and the other input ``files``) it would refuse before
    reading: a bad generator spec, a path that is missing, not a regular file or directory, unreadable, of no
    known format, empty, or whose header declares what no graph is. ``local``: the workers share this
    machine's files (else a path is the workers' to check, as the build's :func:`.resolve.preflight` leaves it)."""
    if not isinstance(source, str):
        return
    generator = synthetic.parse_spec_kind(source) is not None
    if generator:
        synthetic.check_params(source)
    if not local:
        return
    if generator or source.lower() in datasets.REGISTRY:  # nothing downloaded: a dataset is planned as published
        _check_files(files)
        return
    preflight(source, data_dir, files)  # missing, a FIFO, a device, no permission: before anything is read
    _check_format(source, fmt or registry.detect(source), split_scheme)


def _check_files(files: tuple[str, ...]) -> None:
    for p in files:
        if not Path(p).exists():
            raise UserError(f"{p}: file not found")
        readable(p)


def _check_format(path: str, fmt: str, split_scheme: str | None) -> None:
    """The reader's own first look at ``path`` (its ``ingest-probe``), without its memory guard: the plan checks
    the memory from these counts."""
    registry.get(fmt).precheck(path, split_scheme)


def input_files(cfg) -> tuple[str, ...]:
    """The files besides the source that a build reads (its ``--partition-file`` and ``--features`` .npy)."""
    return (*cfg.partition_files, *([cfg.features] if cfg.features.endswith(".npy") else []))


def check_parts(cfg, counts) -> None:
    """The ingest stage's refusal of more parts than vertices, where the :class:`~.counts.Counts` say so for
    certain (not estimated; an R-MAT graph's vertices are at most its 2^scale slots)."""
    source = cfg.source
    parsed = synthetic.parse_params(source) if isinstance(source, str) else None
    n = 1 << int(parsed[1]["scale"]) if parsed is not None and parsed[0] == "rmat" else counts.n
    if counts.estimated or cfg.parts <= n:
        return
    name = "in-memory graph" if not isinstance(source, str) else source if parsed is not None else \
        datasets.lookup(source).name if source.lower() in datasets.REGISTRY else Path(source).name
    raise UserError(f"{option('--parts', cfg.parts)}: more parts than the {n:,} vertices of {name}")
