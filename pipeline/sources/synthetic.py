"""Seeded synthetic graphs: R-MAT (Kronecker) for scale, and a stochastic
block model with class-correlated features and labels for quick runs.

Both are selected as a build source with ``rmat:key=value,...`` or
``sbm:key=value,...`` (see :func:`parse_spec`).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..arrays import index_dtype
from ..errors import UserError
from . import budget
from . import chunks as chunk_tasks
from .base import RawSource
from .records import NodeSource, ParsedChunk, RawGraph
from .whole import Whole, submit_whole


def rmat(scale: int, edge_factor: int = 16, a: float = 0.57, b: float = 0.19, c: float = 0.19,
         seed: int = 0) -> RawGraph:
    """R-MAT graph with ``2**scale`` vertex slots and ``edge_factor * 2**scale``
    edges, in memory (the chunks of :func:`rmat_chunk`, concatenated).

    Each edge picks one quadrant per level with probabilities ``a, b, c,
    d = 1-a-b-c``; vertex labels are then shuffled (as Graph500 does) so that
    ids carry no locality. Vertices that no edge touches are dropped by the
    relabelling, as in a real edge list. Directed.
    """
    _check_rmat(scale, edge_factor, a, b, c)
    perm = rmat_labels(scale, seed)
    m = edge_factor << scale
    stream = Rmat(scale, a, b, c, seed)
    parts = [rmat_chunk(stream, k, lo, hi, perm) for k, (lo, hi) in enumerate(_edge_ranges(m, RMAT_CHUNK))]
    return RawGraph(src=np.concatenate([p.a for p in parts]), dst=np.concatenate([p.b for p in parts]), n=None,
                    directed=True, source=f"rmat(scale={scale}, edge_factor={edge_factor}, seed={seed})", lines=m)


RMAT_CHUNK = 1 << 20  # edges per generator task
RMAT_MAX_DRAWS = 1 << 40  # edges an R-MAT spec may draw (a larger one would draw for days)


@dataclass(frozen=True)
class Rmat:
    """An R-MAT edge stream: ``2**scale`` vertex slots, the quadrant
    probabilities ``a, b, c`` (``d = 1-a-b-c``) and the seed of its chunks."""

    scale: int
    a: float
    b: float
    c: float
    seed: int


def _check_rmat(scale: int, edge_factor: int, a: float, b: float, c: float) -> None:
    d = 1.0 - a - b - c
    if scale < 1 or scale > 31 or edge_factor < 1 or min(a, b, c, d) < 0:
        raise UserError(f"rmat: need 1 <= scale <= 31, edge_factor >= 1, a,b,c >= 0 and a+b+c <= 1 "
                        f"(got scale={scale}, edge_factor={edge_factor}, a={a}, b={b}, c={c})")
    drawn, most = edge_factor << scale, min(RMAT_MAX_DRAWS, 16 << (2 * scale))  # draws, duplicates included
    if drawn > most:
        raise UserError(f"rmat: edge_factor={edge_factor:,} at scale={scale} draws {drawn:,} edges, more than "
                        f"{most:,} (the most a spec draws: 16 per pair of its 2^scale vertices, and 2^40); choose an "
                        f"edge_factor of at most {most >> scale:,}")


def _edge_ranges(m: int, chunk: int) -> list[tuple[int, int]]:
    return [(lo, min(lo + chunk, m)) for lo in range(0, m, chunk)]


def rmat_labels(scale: int, seed: int) -> np.ndarray:
    """(2**scale,) the Graph500 shuffle of vertex labels."""
    return np.random.default_rng([seed, 0x9E37]).permutation(1 << scale)


def compact_labels(scale: int, seed: int) -> np.ndarray:
    """:func:`rmat_labels` in the narrowest id type that holds them (int32
    below scale 31): the build's chunks are then 8 bytes an edge, not 16."""
    return rmat_labels(scale, seed).astype(index_dtype(1 << scale))


def rmat_chunk(stream: Rmat, k: int, lo: int, hi: int, perm: np.ndarray) -> ParsedChunk:
    """Edges lo..hi-1 of the R-MAT stream (the ``ingest-rmat`` task, chunk
    ``k``): drawn from their own seed, so the graph does not depend on how it
    is split; ``perm`` relabels the vertex slots."""
    scale, a, b, c = stream.scale, stream.a, stream.b, stream.c
    rng = np.random.default_rng([stream.seed, k])
    m = hi - lo
    src = np.zeros(m, np.int64)
    dst = np.zeros(m, np.int64)
    for level in range(scale):  # a loop over levels, not edges
        r = rng.random(m, dtype=np.float32)
        src |= (r >= a + b).astype(np.int64) << level
        dst |= ((r >= a) & (r < a + b) | (r >= a + b + c)).astype(np.int64) << level
    return ParsedChunk(perm[src], perm[dst], m)


def sbm(*, n: int = 2000, classes: int = 5, degree: float = 10.0, p_in: float = 0.8, features: int = 32,
        noise: float = 1.0, seed: int = 0) -> RawGraph:
    """Undirected stochastic block model with features and labels.

    Vertex i is in class ``i % classes``. Each of ``n * degree / 2`` edges
    joins a uniform vertex to a uniform vertex of the same class with
    probability ``p_in``, else of any class. Features are the class centre
    (standard normal, one per class) plus Gaussian noise of scale ``noise``.
    """
    _check_sbm(n, classes, degree, p_in, features)
    rng = np.random.default_rng(seed)
    m = int(n * degree / 2)
    src = rng.integers(0, n, m)
    same = rng.random(m) < p_in
    other = rng.integers(0, n, m)
    # a uniform vertex of src's class: same residue modulo `classes`
    k = src % classes
    slots = (n - k + classes - 1) // classes
    same_class = k + classes * (rng.random(m) * slots).astype(np.int64)
    dst = np.where(same, same_class, other)
    labels = (np.arange(n) % classes).astype(np.int32)
    centres = rng.standard_normal((classes, features)).astype(np.float32)
    x = centres[labels] + noise * rng.standard_normal((n, features)).astype(np.float32)
    return RawGraph(src=src, dst=dst, n=n, directed=False, source=f"sbm(n={n}, classes={classes}, seed={seed})",
                    lines=m, node_ids=np.arange(n, dtype=np.int64), features=x, labels=labels)


def _check_sbm(n: int, classes: int, degree: float, p_in: float, features: int) -> None:
    if n < 2 or classes < 1 or classes > n or degree <= 0 or not 0 <= p_in <= 1 or features < 1:
        raise UserError("sbm: need n >= 2, 1 <= classes <= n, degree > 0, 0 <= p_in <= 1, features >= 1")
    if not math.isfinite(n * degree):
        raise UserError(f"sbm: n * degree ({n:.3g} x {degree:.3g}), twice the edges, must be a finite number")


_GENERATORS: dict[str, Callable[..., RawGraph]] = {"rmat": rmat, "sbm": sbm}


def parse_spec_kind(spec: str) -> str | None:
    """``rmat`` or ``sbm`` when ``spec`` names a generator, else None."""
    kind, colon, _ = spec.partition(":")
    return kind if kind in _GENERATORS and colon else None


def parse_params(spec: str) -> tuple[str, dict] | None:
    """``rmat:scale=12,seed=1`` -> ("rmat", {"scale": 12, "seed": 1}); None if not a generator."""
    kind = parse_spec_kind(spec)
    if kind is None:
        return None
    if not spec.isprintable():  # a line break in it would break its one-line errors
        raise UserError(f"{spec!r}: a generator spec is printable characters only")
    fn = _GENERATORS[kind]
    params = inspect.signature(fn).parameters
    kwargs: dict = {}
    for item in filter(None, spec.partition(":")[2].split(",")):
        key, eq, value = item.partition("=")
        if not eq:
            raise UserError(f"{spec}: expected key=value, got {item!r}")
        if key not in params:
            raise UserError(f"{spec}: unknown parameter {key!r} for {kind}; known: {', '.join(params)}")
        try:
            default = params[key].default
            number = float(value)
            if not math.isfinite(number):  # before int(): int(1e30) is a Python int numpy cannot test (issue 51)
                raise ValueError(value)
            kwargs[key] = type(default)(number) if default is not inspect.Parameter.empty else int(value)
        except (ValueError, OverflowError):
            raise UserError(f"{spec}: {key}={value!r} is not a finite number") from None
    if not 0 <= kwargs.get("seed", 0) < 2**63:  # numpy's generators take no negative seed (a traceback, issue 63)
        raise UserError(f"{spec}: seed={kwargs['seed']} must be in 0..2^63-1")
    return kind, kwargs


def check_params(spec: str) -> None:
    """The checks a generator applies before it draws anything (the build's, for ``--plan``): one line otherwise."""
    parsed = parse_params(spec)
    if parsed is None:
        return
    kind, kw = parsed
    try:
        args = inspect.signature(_GENERATORS[kind]).bind(**kw)
    except TypeError as e:
        raise UserError(f"{spec}: {e}") from None
    args.apply_defaults()
    a = dict(args.arguments)
    if kind == "sbm":
        _check_sbm(a["n"], a["classes"], a["degree"], a["p_in"], a["features"])
    else:
        _check_rmat(a["scale"], a["edge_factor"], a["a"], a["b"], a["c"])


def parse_spec(spec: str) -> RawGraph | None:
    """``rmat:scale=12,edge_factor=8,seed=1`` -> the generated graph, in
    memory; None if ``spec`` does not name a generator."""
    parsed = parse_params(spec)
    if parsed is None:
        return None
    kind, kwargs = parsed
    try:
        return _GENERATORS[kind](**kwargs)
    except TypeError as e:
        raise UserError(f"{spec}: {e}") from None


def _sbm_whole(kwargs: dict) -> Whole:
    g = sbm(**kwargs)
    return Whole(ParsedChunk(g.src, g.dst, g.lines), int(g.n or 0), False, 0, NodeSource(g.features, g.labels), [])


def submit(tasks, spec: str, limit: int | None = None):
    """Generate on the workers: R-MAT in chunks of edges (``ingest-rmat``
    tasks), the SBM in one task. Returns a RawSource, or None if ``spec``
    is not a generator. The graph's size is checked against the memory
    budget ``limit`` (bytes) first."""
    parsed = parse_params(spec)
    if parsed is None:
        return None
    kind, kw = parsed
    if kind == "sbm":
        sig = inspect.signature(sbm).bind(**kw)  # bad arguments fail here, not in a task
        sig.apply_defaults()
        a = sig.arguments
        budget.check(limit, budget.graph_bytes(int(a["n"]), int(a["n"] * a["degree"]), int(a["features"])),
                     f"{spec}: {int(a['n']):,} vertices of degree {a['degree']} with {a['features']} features")
        return submit_whole(tasks, "ingest-sbm", spec, _sbm_whole, dict(sig.arguments))
    args = inspect.signature(rmat).bind(**kw)
    args.apply_defaults()
    p = dict(args.arguments)
    _check_rmat(p["scale"], p["edge_factor"], p["a"], p["b"], p["c"])
    m = p["edge_factor"] << p["scale"]
    budget.check(limit, budget.graph_bytes(1 << p["scale"], m), f"{spec}: {1 << p['scale']:,} vertices, {m:,} edges")
    perm = tasks.submit("ingest-rmat-labels", compact_labels, p["scale"], p["seed"])
    stream = Rmat(p["scale"], p["a"], p["b"], p["c"], p["seed"])
    chunks = [tasks.submit("ingest-rmat", rmat_chunk, stream, k, lo, hi, perm)
              for k, (lo, hi) in enumerate(_edge_ranges(m, RMAT_CHUNK))]
    metas = tasks.gather([tasks.submit("ingest-meta", chunk_tasks.meta, c) for c in chunks])
    return RawSource(spec, chunks, metas, None, 0, True)
