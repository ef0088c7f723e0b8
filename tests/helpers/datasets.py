"""Dataset directories written by hand, in the layouts of OGB (CSV and npz)
and GraphSAINT, all holding the same small graph (:data:`EDGES`), features,
labels and split, so that every reader can be checked against the others
and against the plain edge list."""

from __future__ import annotations

import gzip
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


def _gz(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(text.encode()))


def _floats(x: np.ndarray) -> str:
    return "".join(",".join(repr(float(v)) for v in row) + "\n" for row in x)


def _split(root: Path, scheme: str = "random") -> None:
    for name, ids in (("train", TRAIN), ("valid", VALID), ("test", TEST)):
        _gz(root / "split" / scheme / f"{name}.csv.gz", "".join(f"{i}\n" for i in ids))


def ogb_csv(root: Path, multi: bool = False, scheme: str = "random") -> Path:
    """The OGB CSV layout: raw/*.csv.gz and split/<scheme>/ (an unlabelled vertex's label is NaN), with
    node_year.csv.gz as ogbn-arxiv has it (OGB's own loader reads it; ours ignores it)."""
    raw = root / "raw"
    _gz(raw / "edge.csv.gz", "".join(f"{a},{b}\n" for a, b in EDGES))
    _gz(raw / "num-node-list.csv.gz", f"{N}\n")
    _gz(raw / "num-edge-list.csv.gz", f"{len(EDGES)}\n")
    _gz(raw / "node-feat.csv.gz", _floats(FEATURES))
    _gz(raw / "node_year.csv.gz", "".join(f"{2000 + i}\n" for i in range(N)))
    if multi:
        _gz(raw / "node-label.csv.gz", "".join(",".join(str(int(v)) for v in row) + "\n" for row in MULTI))
    else:
        _gz(raw / "node-label.csv.gz", "".join(("nan" if y < 0 else str(y)) + "\n" for y in LABELS))
    _split(root, scheme)
    (root / "RELEASE_v1.txt").write_text("# fixture\n")
    (root / "processed").mkdir()  # as in OGB's zips: its loader saves its cache there
    return root


def ogb_npz(root: Path, compressed: bool = True) -> Path:
    """The OGB npz layout (papers100M-bin): raw/data.npz, raw/node-label.npz (NaN: unlabelled)."""
    raw = root / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    save = np.savez_compressed if compressed else np.savez
    save(raw / "data.npz", edge_index=np.array(EDGES, np.int64).T.copy(), num_nodes_list=np.array([N]),
         num_edges_list=np.array([len(EDGES)]), node_feat=FEATURES)
    save(raw / "node-label.npz", node_label=np.where(LABELS < 0, np.nan, LABELS).astype(np.float32)[:, None])
    _split(root)
    return root


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


def edge_list(path: Path) -> Path:
    """The same graph as a plain edge list (without its isolated vertex 6)."""
    path.write_text("".join(f"{a} {b}\n" for a, b in EDGES))
    return path


def masks() -> dict[str, np.ndarray]:
    out = {}
    for name, ids in (("train", TRAIN), ("val", VALID), ("test", TEST)):
        out[name] = np.zeros(N, bool)
        out[name][ids] = True
    return out
