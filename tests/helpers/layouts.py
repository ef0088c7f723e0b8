"""Row blocks of a random graph cut by rank (:func:`shgcn.pipeline.stages.layout.rank_pieces`),
for the layout's, the pieces' and the write-rank task's tests."""

import numpy as np

from shgcn.pipeline.blocks import RowBlock
from shgcn.pipeline.nodes import NodeBlock
from shgcn.pipeline.stages import layout

from .graphs import a_hat


def cut(n, p, directed, bounds, seed, multi=False):
    """(layout, [each block's list of rank pieces]) of a random n-vertex graph on p ranks cut at ``bounds``."""
    rng = np.random.default_rng(seed)
    a = a_hat(n, [tuple(e) for e in rng.integers(0, n, (5 * n, 2))], directed=directed).tocsr()
    t = a.T.tocsr()
    a.sort_indices()
    t.sort_indices()
    lay = layout.make_layout(rng.integers(0, p, n).astype(np.int32), p)
    feats = rng.standard_normal((n, 3)).astype(np.float32)
    labels = rng.integers(0, 2, (n, 4)).astype(bool) if multi else rng.integers(0, 5, n).astype(np.int32)
    masks = [rng.random(n) < 0.5 for _ in range(3)]
    cuts = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        ab, tb = (RowBlock(lo, hi, n, m[lo:hi].indptr.astype(np.int64), m[lo:hi].indices, m[lo:hi].data) for m in (a, t))
        nb = NodeBlock(lo, hi, feats[lo:hi], labels[lo:hi], *(m[lo:hi] for m in masks))
        cuts.append(layout.rank_pieces(ab, tb if directed else None, nb, lay))
    return lay, cuts
