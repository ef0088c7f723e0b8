"""The benchmarks' only door to the pipeline's graph and partitioner APIs:
Â of a named dataset, and rp / gp / hp partitions of it, cached on disk under
build/ (gitignored) so that reruns are cheap.

Every call into ``shgcn.pipeline`` that the vb benchmarks make is in this
file, so that a change of those APIs is adapted here only.

    python -m benchmarks.common.graphs [--graphs ...] [--parts 16 64 256 512] [--models rp gp hp]
        # fills the cache (run it niced in the background: hp at p = 512 takes minutes per graph)
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import logging
import time

import numpy as np
import scipy.sparse as sp

from benchmarks.common import REPO, SHARED

CACHE = REPO / "build" / "vb-cache"
GRAPHS = ["cora", "citeseer", "pubmed", "soc-slashdot0902", "facebook", "ca-astroph", "luxembourg-osm", "delaunay-n16",
          "4elt"]
EPS = 0.03
SEED = 0
log = logging.getLogger("graphs")


def adjacency(name: str) -> tuple[sp.csr_matrix, bool]:
    """Â of dataset ``name`` (float32 CSR, nonzero diagonal) and whether the graph is directed."""
    path = CACHE / f"{name}-ahat.npz"
    meta = CACHE / f"{name}-ahat.json"
    if path.exists() and meta.exists():
        return sp.load_npz(path).tocsr(), bool(json.loads(meta.read_text())["directed"])
    from distributed import Client

    from shgcn.pipeline.sources import datasets, readers
    from shgcn.pipeline.stages import ingest, normalize

    ds = datasets.lookup(name)
    src = datasets.locate(ds, SHARED, download=False)
    with Client(processes=False, n_workers=1, threads_per_worker=1, dashboard_address="127.0.0.1:0") as client:
        raw = readers.read(src, ds.format, client)
    g = ingest.to_graph(raw, ds.directed)
    a = normalize.normalized_adjacency(g.adj, g.directed).tocsr()
    CACHE.mkdir(parents=True, exist_ok=True)
    sp.save_npz(path, a)
    meta.write_text(json.dumps({"directed": bool(g.directed), "n": int(a.shape[0]), "nnz": int(a.nnz)}))
    return a, bool(g.directed)


def partition(name: str, model: str, parts: int, eps: float = EPS, seed: int = SEED, compute: bool = True
              ) -> tuple[np.ndarray, float] | None:
    """(part (n,) int32, partitioner seconds) of any registered ``model`` (as the build runs it, in a
    child process where it holds the GIL), from the cache or computed (None when absent and ``compute`` is
    False)."""
    path = CACHE / f"{name}-{model}-p{parts}-e{eps}-s{seed}.npz"
    if path.exists():
        z = np.load(path)
        return z["part"].astype(np.int32), float(z["seconds"])
    if not compute:
        return None
    from shgcn.pipeline.models import Inputs, PartitionConfig, default_options
    from shgcn.pipeline.models.run import run

    a, _ = adjacency(name)
    res = run(model, Inputs(a.shape[0], a), PartitionConfig(parts=parts, eps=eps, seed=seed, options=default_options()))
    part, seconds = res.part, res.seconds
    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npz")
    np.savez(tmp, part=part, seconds=seconds)
    tmp.rename(path)
    log.info("%s %s p=%d: %.1f s", name, model, parts, seconds)
    return part, seconds


def refined_partition(name: str, base: str, parts: int, mti: float = 0.02, compute: bool = True
                      ) -> tuple[np.ndarray, float, dict] | None:
    """(part, seconds, info) of ``volume_balance`` on the ``base`` partition, cached under a key of the
    volume balancing's source and the options (None when the base is absent and ``compute`` is False)."""
    from shgcn.pipeline.models import pins, vb
    from shgcn.pipeline.models.vb import search as vb_search

    src = hashlib.sha1("".join(inspect.getsource(m) for m in (vb, vb_search, pins)).encode()).hexdigest()[:10]
    path = CACHE / f"{name}-{base}-vb-p{parts}-m{mti}-{src}.npz"
    if path.exists():
        z = np.load(path)
        return z["part"], float(z["seconds"]), {"moves": int(z["moves"]), "passes": int(z["passes"])}
    got = partition(name, base, parts, compute=compute)
    if got is None:
        return None
    a, _ = adjacency(name)
    t0 = time.perf_counter()
    part, info = vb.volume_balance(a, got[0], parts, eps=EPS, max_total_increase=mti, seed=SEED)
    seconds = time.perf_counter() - t0
    tmp = path.with_suffix(".tmp.npz")
    np.savez(tmp, part=part, seconds=seconds, moves=info["moves"], passes=info["passes"])
    tmp.rename(path)
    return part, seconds, info


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--graphs", nargs="+", default=GRAPHS)
    ap.add_argument("--parts", type=int, nargs="+", default=[16, 64, 256, 512])
    ap.add_argument("--models", nargs="+", default=["rp", "gp", "hp"])
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(message)s")
    log.setLevel(logging.INFO)
    # cheap ones first, then hp by increasing p, so that small p is ready early
    for model in args.models:
        for p in args.parts:
            for g in args.graphs:
                if p < adjacency(g)[0].shape[0]:
                    partition(g, model, p)


if __name__ == "__main__":
    main()
