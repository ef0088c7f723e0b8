"""Seeded synthetic graphs: R-MAT (Kronecker) for scale, and a stochastic
block model with class-correlated features and labels for quick runs.

Both are selected as a build source with ``rmat:key=value,...`` or
``sbm:key=value,...`` (see :func:`parse_spec`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

import numpy as np

from .errors import UserError
from .graph import RawGraph


def rmat(scale: int, edge_factor: int = 16, a: float = 0.57, b: float = 0.19, c: float = 0.19,
         seed: int = 0) -> RawGraph:
    """R-MAT graph with ``2**scale`` vertex slots and ``edge_factor * 2**scale`` edges.

    Each edge picks one quadrant per level with probabilities ``a, b, c,
    d = 1-a-b-c``; vertex labels are then shuffled (as Graph500 does) so that
    ids carry no locality. Vertices that no edge touches are dropped by the
    relabelling, as in a real edge list. Directed.
    """
    d = 1.0 - a - b - c
    if scale < 1 or scale > 31 or edge_factor < 1 or min(a, b, c, d) < 0:
        raise UserError(f"rmat: need 1 <= scale <= 31, edge_factor >= 1, a,b,c >= 0 and a+b+c <= 1 "
                        f"(got scale={scale}, edge_factor={edge_factor}, a={a}, b={b}, c={c})")
    rng = np.random.default_rng(seed)
    m = edge_factor << scale
    src = np.zeros(m, np.int64)
    dst = np.zeros(m, np.int64)
    for level in range(scale):  # a loop over levels, not edges
        r = rng.random(m, dtype=np.float32)
        src |= (r >= a + b).astype(np.int64) << level
        dst |= ((r >= a) & (r < a + b) | (r >= a + b + c)).astype(np.int64) << level
        del r
    perm = rng.permutation(1 << scale)
    return RawGraph(src=perm[src], dst=perm[dst], n=None, directed=True,
                    source=f"rmat(scale={scale}, edge_factor={edge_factor}, seed={seed})", lines=m)


def sbm(n: int = 2000, classes: int = 5, degree: float = 10.0, p_in: float = 0.8, features: int = 32,
        noise: float = 1.0, seed: int = 0) -> RawGraph:
    """Undirected stochastic block model with features and labels.

    Vertex i is in class ``i % classes``. Each of ``n * degree / 2`` edges
    joins a uniform vertex to a uniform vertex of the same class with
    probability ``p_in``, else of any class. Features are the class centre
    (standard normal, one per class) plus Gaussian noise of scale ``noise``.
    """
    if n < 2 or classes < 1 or classes > n or degree <= 0 or not 0 <= p_in <= 1 or features < 1:
        raise UserError("sbm: need n >= 2, 1 <= classes <= n, degree > 0, 0 <= p_in <= 1, features >= 1")
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


_GENERATORS: dict[str, Callable[..., RawGraph]] = {"rmat": rmat, "sbm": sbm}


def parse_spec(spec: str) -> RawGraph | None:
    """``rmat:scale=12,edge_factor=8,seed=1`` -> the generated graph; None if
    ``spec`` does not name a generator."""
    kind, colon, args = spec.partition(":")
    if kind not in _GENERATORS or not colon:
        return None
    fn = _GENERATORS[kind]
    params = inspect.signature(fn).parameters
    kwargs = {}
    for item in filter(None, args.split(",")):
        key, eq, value = item.partition("=")
        if not eq:
            raise UserError(f"{spec}: expected key=value, got {item!r}")
        if key not in params:
            raise UserError(f"{spec}: unknown parameter {key!r} for {kind}; known: {', '.join(params)}")
        try:
            kwargs[key] = type(params[key].default)(float(value)) if params[key].default is not inspect.Parameter.empty \
                else int(value)
        except ValueError:
            raise UserError(f"{spec}: {key}={value!r} is not a number") from None
    try:
        return fn(**kwargs)
    except TypeError as e:
        raise UserError(f"{spec}: {e}") from None
