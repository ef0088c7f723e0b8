"""A GraphSAINT directory written by hand (a copy of the tests' fixture,
``tests/helpers/datasets.py``: the benchmarks import nothing from tests/):
a 7-vertex graph with features, single or multi labels and a split."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import scipy.sparse as sp

N = 7
# an undirected graph (each pair once, as OGB stores undirected graphs), vertex 6 isolated
EDGES = [(0, 1), (0, 2), (1, 2), (2, 3), (3, 4), (4, 5), (1, 5)]
FEATURES = (np.arange(N * 3, dtype=np.float32).reshape(N, 3) / 4 - 1).astype(np.float32)  # exact in binary
LABELS = np.array([0, 1, 2, 0, 1, 2, -1], np.int32)  # vertex 6 unlabelled
MULTI = np.array([[1, 0, 1, 0], [0, 1, 0, 0], [1, 1, 1, 1], [0, 0, 0, 0], [0, 0, 1, 0], [1, 0, 0, 1],
                  [0, 1, 0, 0]], bool)
TRAIN, VALID, TEST = [0, 1, 2], [3, 6], [4, 5]


def saint(root: Path, multi: bool = False) -> Path:
    """The GraphSAINT layout: adj_full.npz (both directions), feats.npy, class_map.json, role.json.
    Vertex 6 has no class-map entry when single-label (unlabelled)."""
    root.mkdir(parents=True, exist_ok=True)
    a, b = np.array(EDGES).T
    m = sp.csr_matrix((np.ones(2 * a.size), (np.r_[a, b], np.r_[b, a])), shape=(N, N))
    sp.save_npz(root / "adj_full.npz", m)
    np.save(root / "feats.npy", FEATURES.astype(np.float64))  # GraphSAINT's files hold float64
    if multi:
        cmap = {str(i): [int(v) for v in row] for i, row in enumerate(MULTI)}
    else:
        cmap = {str(i): int(y) for i, y in enumerate(LABELS) if y >= 0}
    (root / "class_map.json").write_text(json.dumps(dict(reversed(list(cmap.items())))))  # any key order
    (root / "role.json").write_text(json.dumps({"tr": TRAIN, "va": VALID, "te": TEST}))
    return root
