"""OGB and GraphSAINT directories at scale: build time and peak memory against the size of the features.

    python -m benchmarks.build.dataset_dirs [--n 1000000] [--dim 128] [--degree 10] [--classes 40] [--root DIR]

Writes a synthetic OGB node-property directory (CSV layout: gzip text, as ogbn-products ships) and a
GraphSAINT directory (adj_full.npz compressed, feats.npy, a multi-label class_map.json, role.json) of the
same random graph, builds each with ``pipeline build DIR --parts 4 --model rp`` (a fresh process) beside
the same graph as a plain edge list with generated features (the baseline: no node files at all), and
reads the store's own record of wall time and peak memory per stage. The readers stream the node data
(one worker, row block by row block; no feature matrix is whole in one process), so reading it from
files should cost time, not a copy of the features (n x D x 4 bytes, printed beside it) on top of the
baseline's peak.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from benchmarks.common import build_store, store_info, table, write_section

BLOCK = 100_000  # rows generated and written at a time


def _csv_rows(f, x: np.ndarray) -> None:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    t = pa.table({f"c{i}": x[:, i] for i in range(x.shape[1])})
    pacsv.write_csv(t, f, write_options=pacsv.WriteOptions(include_header=False))


def ogb_dir(root: Path, n: int, dim: int, edges: np.ndarray, y: np.ndarray, seed: int) -> Path:
    raw = root / "raw"
    raw.mkdir(parents=True)
    rng = np.random.default_rng(seed)
    with gzip.open(raw / "edge.csv.gz", "wb", compresslevel=1) as f:
        _csv_rows(f, edges)
    (raw / "num-node-list.csv.gz").write_bytes(gzip.compress(f"{n}\n".encode()))
    with gzip.open(raw / "node-feat.csv.gz", "wb", compresslevel=1) as f:
        for a in range(0, n, BLOCK):
            _csv_rows(f, rng.standard_normal((min(BLOCK, n - a), dim)).astype(np.float32))
    with gzip.open(raw / "node-label.csv.gz", "wb", compresslevel=1) as f:
        _csv_rows(f, y[:, None])
    order = rng.permutation(n)
    for name, ids in zip(("train", "valid", "test"), np.split(order, [int(0.6 * n), int(0.8 * n)])):
        (root / "split" / "random").mkdir(parents=True, exist_ok=True)
        with gzip.open(root / "split" / "random" / f"{name}.csv.gz", "wb", compresslevel=1) as f:
            _csv_rows(f, np.sort(ids)[:, None])
    return root


def saint_dir(root: Path, n: int, dim: int, edges: np.ndarray, classes: int, seed: int) -> Path:
    root.mkdir(parents=True)
    rng = np.random.default_rng(seed)
    a = sp.csr_matrix((np.ones(2 * len(edges), np.float32), (np.r_[edges[:, 0], edges[:, 1]],
                                                               np.r_[edges[:, 1], edges[:, 0]])), shape=(n, n))
    a.sum_duplicates()
    a.data[:] = 1
    sp.save_npz(root / "adj_full.npz", a)
    x = np.lib.format.open_memmap(root / "feats.npy", mode="w+", dtype=np.float32, shape=(n, dim))
    for s in range(0, n, BLOCK):
        x[s:s + BLOCK] = rng.standard_normal((min(BLOCK, n - s), dim)).astype(np.float32)
    x.flush()
    del x
    with open(root / "class_map.json", "w") as f:
        f.write("{")
        for s in range(0, n, BLOCK):
            y = rng.integers(0, 2, (min(BLOCK, n - s), classes))
            f.write(("," if s else "") + ",".join(f'"{s + i}": [{",".join(map(str, row))}]'
                                                 for i, row in enumerate(y.tolist())))
        f.write("}")
    order = rng.permutation(n)
    tr, va, te = np.split(order, [int(0.6 * n), int(0.8 * n)])
    (root / "role.json").write_text(json.dumps({"tr": tr.tolist(), "va": va.tolist(), "te": te.tolist()}))
    return root


def edge_list(path: Path, edges: np.ndarray) -> Path:
    """The same graph as a plain edge list: the baseline, built with generated features (no node files)."""
    with open(path, "wb") as f:
        _csv_rows(f, edges)
    path.write_bytes(path.read_bytes().replace(b",", b" "))
    return path


def measure(src: Path, out: Path, label: str, n: int, dim: int, files_mb: float, *extra: str) -> dict:
    t0 = time.perf_counter()
    build_store(str(src), out, 4, "--model", "rp", *extra)
    wall = time.perf_counter() - t0
    info = store_info(out)
    attrs = info.get("attrs", info)
    peaks = attrs.get("peak_rss_mib_by_stage", {})
    ingest = max(peaks.get("ingest", {"-": 0}).values())
    overall = attrs.get("peak_rss_mib") or max((max(v.values()) for v in peaks.values()), default=0)
    return {"dir": label, "n": f"{n:,}", "dim": dim, "files": f"{files_mb:,.0f} MB",
            "features": f"{n * dim * 4 / 2**20:,.0f} MiB", "ingest": f"{attrs['timings']['ingest']:.1f}",
            "wall": f"{wall:.1f}", "ingest_peak": f"{ingest:,.0f}", "peak": f"{overall:,.0f}",
            "labels": attrs.get("label_kind", "single")}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--degree", type=int, default=10)
    ap.add_argument("--classes", type=int, default=40)
    ap.add_argument("--root", type=Path, default=None)
    args = ap.parse_args()
    root = args.root or Path(tempfile.mkdtemp(prefix="shgcn-dirs-"))
    rng = np.random.default_rng(0)
    edges = rng.integers(0, args.n, (args.n * args.degree // 2, 2)).astype(np.int64)
    y = rng.integers(0, args.classes, args.n).astype(np.int64)
    rows = []
    base = edge_list(root / "edges.txt", edges)
    rows.append(measure(base, root / "base.zarr", "edge list, generated features (baseline)", args.n, args.dim,
                        base.stat().st_size / 1e6, "--undirected", "--features", f"random:{args.dim}", "--labels",
                        f"random:{args.classes}"))
    for label, make in (("OGB CSV (gzip)", lambda p: ogb_dir(p, args.n, args.dim, edges, y, 1)),
                        ("GraphSAINT (multi-label)", lambda p: saint_dir(p, args.n, args.dim, edges, args.classes, 2))):
        d = make(root / label.split()[0].lower())
        mb = sum(f.stat().st_size for f in d.rglob("*") if f.is_file()) / 1e6
        rows.append(measure(d, root / f"{label.split()[0].lower()}.zarr", label, args.n, args.dim, mb))
        print(rows[-1], flush=True)
    body = table(rows, [("dir", "directory"), ("n", "vertices"), ("dim", "D"), ("labels", "labels"),
                        ("files", "files on disk"), ("features", "features as float32"),
                        ("ingest", "ingest s"), ("wall", "build wall s"), ("ingest_peak", "ingest peak RSS MiB"),
                        ("peak", "build peak RSS MiB")])
    body += (f"\nRandom graph of {len(edges):,} undirected edges (degree {args.degree}), P = 4, model rp. Peak RSS "
             "is the store's own record (the largest process: client, scheduler and worker are one process "
             "here). The baseline is the same graph as an edge list with features generated block by block (no "
             "node files). The node data of the directories is streamed: the OGB features are parsed from gzip "
             "text block by block into a scratch file, GraphSAINT's feats.npy is read in place, the class map is "
             "parsed as a stream, and each row block memory-maps its rows only.\n")
    write_section("Dataset directories at scale: OGB and GraphSAINT, streamed", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
