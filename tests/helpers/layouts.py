"""Row blocks of a random graph cut by rank (:func:`shgcn.pipeline.stages.layout.rank_pieces`),
for the layout's and the rank writes' tests."""

from dataclasses import dataclass

import numpy as np

from shgcn.pipeline.blocks import RowBlock
from shgcn.pipeline.nodes import NodeBlock
from shgcn.pipeline.stages import layout

from .graphs import a_hat


@dataclass
class Cut:
    """A random graph's layout, its row blocks of Â and Â^T, each block's rank pieces, the degrees of A + I
    (out, in: the entries of each row of Â and of Â^T) and the node data of its first row."""

    lay: layout.Layout
    cuts: list
    a: list
    t: list
    degrees: tuple
    first: NodeBlock


def blocks(n, p, directed, bounds, seed, multi=False) -> Cut:
    """A random n-vertex graph on p ranks cut at ``bounds`` (Â^T's pieces only when ``directed``)."""
    rng = np.random.default_rng(seed)
    a = a_hat(n, [tuple(e) for e in rng.integers(0, n, (5 * n, 2))], directed=directed).tocsr()
    t = a.T.tocsr()
    a.sort_indices()
    t.sort_indices()
    lay = layout.make_layout(rng.integers(0, p, n).astype(np.int32), p)
    feats = rng.standard_normal((n, 3)).astype(np.float32)
    labels = rng.integers(0, 2, (n, 4)).astype(bool) if multi else rng.integers(0, 5, n).astype(np.int32)
    masks = [rng.random(n) < 0.5 for _ in range(3)]
    cuts, ab_list, tb_list = [], [], []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        ab, tb = (RowBlock(lo, hi, n, m[lo:hi].indptr.astype(np.int64), m[lo:hi].indices, m[lo:hi].data) for m in (a, t))
        nb = NodeBlock(lo, hi, feats[lo:hi], labels[lo:hi], *(m[lo:hi] for m in masks))
        cuts.append(layout.rank_pieces(ab, tb if directed else None, nb, lay))
        ab_list.append(ab)
        tb_list.append(tb)
    degrees = (np.diff(a.indptr).astype(np.int64), np.diff(t.indptr).astype(np.int64))
    first = NodeBlock(0, 1, feats[:1], labels[:1], *(m[:1] for m in masks))
    return Cut(lay, cuts, ab_list, tb_list, degrees, first)


def cut(n, p, directed, bounds, seed, multi=False):
    """(layout, [each block's list of rank pieces]) of :func:`blocks`' graph."""
    c = blocks(n, p, directed, bounds, seed, multi)
    return c.lay, c.cuts
