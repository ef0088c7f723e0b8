"""The memory budget of a build (``--memory-limit``): sizes are checked
against it before anything is allocated.

Every size a file or an option declares (a header's vertex count, a Matrix
Market entry count, a sparse matrix's shape, a Planetoid pickle's largest key,
``--features random:D``, an R-MAT scale) is turned into bytes with the
figures below and compared with the budget; compressed and streamed input is
counted while it is read, and the read stops once the graph cannot fit. A
graph that does not fit ends the build with one line (exit 2) instead of an
allocation that fails half-way or an out-of-memory kill.

The figures are measured, not guessed: ``benchmarks/RESULTS.md``, "Build
plan: predicted against measured peak memory" (R-MAT gp p = 64, scales 21 to
24): the build's process and its partitioner's child held at most 53-65 bytes
per nonzero of Â at once (upper bound: the sum of their stage peaks; 126-130
before the build went out of core). This is the coarse guard the readers
apply while they read; the build's plan (``pipeline/plan.py``) is the fitted
prediction, checked before any work. Where the plan checked exact counts (a
generator's, a header's, a registered dataset's: ``BuildConfig.planned``),
the generators, the text readers and the ingest stage do not apply this
guard again: at R-MAT scale 25 it asked for 33.5 GiB where the plan
predicted 17.3 and the build took 17.45 (``--kaminpar-eps 0.05``).
"""

from __future__ import annotations

from shgcn.core.memory import gib, machine_memory, parse_size

from ..errors import UserError, located, option

__all__ = ["gib", "machine_memory", "parse_size"]  # shared with the trainer: shgcn.core.memory

BYTES_PER_EDGE = 64  # the whole build (ingest, normalize, partitioner child, layout, write), per input edge
BYTES_PER_VERTEX = 48  # ids, permutation, degrees, partition vectors, labels and masks, per vertex
PARSED_BYTES_PER_EDGE = 16  # one parsed edge before relabelling: two int64 ids


def graph_bytes(vertices: int = 0, edges: int = 0, feature_dim: int = 0) -> int:
    """What a build of a graph of this size needs, in bytes."""
    return int(vertices) * (BYTES_PER_VERTEX + 4 * int(feature_dim)) + int(edges) * BYTES_PER_EDGE


def too_big(what: str, need: int, limit: int) -> str:
    """The sentence of a refusal: what needs how much, and what to do."""
    return (f"{what} needs about {gib(need)}, more than the memory limit of {gib(limit)} ({option('--memory-limit')}; "
            "default: this machine's memory); the graph will not fit")


def edges_over(cap: int, limit: int, what: str = "the file") -> str:
    """The sentence of a refusal by edge count, found while reading."""
    return (f"{what} holds more than {cap:,} edges, more than the memory limit of {gib(limit)} allows (about "
            f"{BYTES_PER_EDGE} bytes per edge in a build; {option('--memory-limit')}, default: this machine's memory); the graph "
            "will not fit")


def check(limit: int | None, need: int, what: str, path: str | None = None, line: int | None = None) -> None:
    """Raise a one-line :class:`UserError` (naming ``path`` and ``line`` when
    given) when ``need`` bytes exceed ``limit``; ``limit`` None: no budget."""
    if limit is None or need <= limit:
        return
    message = too_big(what, need, limit)
    raise located(path, message, line) if path is not None else UserError(message)


def max_edges(limit: int | None) -> int | None:
    """The most input edges a build within ``limit`` bytes can take (None: no limit)."""
    return None if limit is None else max(1, limit // BYTES_PER_EDGE)
