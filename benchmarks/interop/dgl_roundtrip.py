"""DistDGL round trip, proven with DGL's own loader, in an environment where DGL's CPU build loads.

    python -m benchmarks.interop.dgl_roundtrip [--venv build/dgl-venv] [--reuse]

DGL's last wheel on PyPI is 2.1.0 (2.2.x is served only from DGL's own site); it carries libraries for
torch 2.0.0-2.2.1 and needs numpy < 2. So this script makes a separate virtual environment with
``torch==2.2.1`` (PyPI's Linux wheel: the CUDA build, with its nvidia-* packages, about 5 GB on disk; it
runs on the CPU), ``dgl==2.1.0``, ``numpy<2`` and this checkout, and runs itself there (``--check``):

1. stores of an undirected SBM graph (P = 4, rp/gp/hp), a directed R-MAT graph (P = 3) and a multi-label
   GraphSAINT fixture (P = 2) are exported with ``pipeline export --format distdgl``; every part is loaded
   with ``dgl.distributed.load_partition`` and its inner nodes (original ids), features, labels, masks,
   inner edges and the assignment of every node are compared with the store's own rank blocks;
2. ``shgcn.store.to_dgl`` of the whole graph and of every rank is compared with the store;
3. ``build(g)`` of a DGL graph (``to_dgl``'s) gives the store it came from, byte for byte;
4. the project's DGL tests (which skip where DGL does not load) run there and must pass.

The result is written to benchmarks/RESULTS.md ("DistDGL round trip with DGL's own loader").
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import REPO, table, write_section

# numpy < 2 for DGL 2.1's compiled code, and everything beside it built for numpy 1 (pyarrow >= 22 and pandas 3
# need numpy 2); torchdata < 0.8 still has the datapipes GraphBolt imports; pydantic and pyyaml: GraphBolt too
PINS = ["torch==2.2.1", "dgl==2.1.0", "numpy<2", "scipy<1.14", "pandas<2.3", "pyarrow<22", "torchdata==0.7.1",
        "pydantic", "pyyaml"]
TITLE = "DistDGL round trip with DGL's own loader"


def make_venv(venv: Path, reuse: bool) -> Path:
    py = venv / "bin" / "python"
    if reuse and py.exists():
        return py
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    pins = venv / "pins.txt"
    pins.write_text("\n".join(PINS) + "\n")
    pip = [str(py), "-m", "pip", "install", "-q"]
    t0 = time.perf_counter()
    subprocess.run([*pip, *PINS], check=True)
    subprocess.run([*pip, "-c", str(pins), "-e", f"{REPO}[test,mpich]"], check=True)
    print(f"environment ready in {time.perf_counter() - t0:.0f} s: {venv}", flush=True)
    return py


# ------------------------------------------------------------------ inside the DGL environment

def check_export(s, out: Path) -> dict:
    """Every part of the DistDGL export, loaded by DGL, against the store's rank blocks."""
    import dgl
    import numpy as np
    from dgl.distributed import load_partition

    from shgcn.store import graph_arrays

    res = subprocess.run([sys.executable, "-m", "shgcn.pipeline", "export", str(s.path), "--format", "distdgl",
                          str(out), "--graph-name", "g"], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    whole = graph_arrays(s)
    part_of = s.partition(s.attrs["model"])
    orig = np.concatenate([dgl.data.utils.load_tensors(str(out / f"part{i}/orig_nids.dgl"))["_N"].numpy()
                           for i in range(s.parts)])
    edges = 0
    for i in range(s.parts):
        g, nf, ef, book, name, ntypes, etypes = load_partition(str(out / "g.json"), i)
        b = s.rank(i)
        inner = g.ndata["inner_node"].bool().numpy()
        nid = g.ndata[dgl.NID].numpy()
        np.testing.assert_array_equal(orig[nid[inner]], b.node_index)  # inner nodes: rank i's rows, in order
        np.testing.assert_array_equal(nf["_N/feat"].numpy(), np.asarray(b.features, np.float32))
        np.testing.assert_array_equal(nf["_N/label"].numpy(), np.asarray(b.labels).astype(nf["_N/label"].numpy().dtype))
        for k in ("train_mask", "val_mask", "test_mask"):
            np.testing.assert_array_equal(nf[f"_N/{k}"].numpy().astype(bool), np.asarray(getattr(b, k)))
        # the assignment of every node the part sees, inner and halo, is the store's
        np.testing.assert_array_equal(book.nid2partid(g.ndata[dgl.NID]).numpy(), part_of[orig[nid]])
        u, v = g.edges()
        m = g.edata["inner_edge"].bool().numpy()
        got = set(zip(orig[nid[u.numpy()]][m].tolist(), orig[nid[v.numpy()]][m].tolist()))
        mine = part_of[whole.dst] == i
        assert got == set(zip(whole.src[mine].tolist(), whole.dst[mine].tolist()))
        edges += int(m.sum())
    assert edges == whole.num_edges
    return {"parts": s.parts, "nodes": int(s.attrs["n"]), "edges": edges}


def check_to_dgl(s) -> None:
    import dgl
    import numpy as np

    from shgcn.store import graph_arrays, to_dgl

    g, a = to_dgl(s), graph_arrays(s)
    u, v = g.edges()
    np.testing.assert_array_equal(u.numpy(), a.src)
    np.testing.assert_array_equal(v.numpy(), a.dst)
    np.testing.assert_array_equal(g.ndata["feat"].numpy(), a.features)
    for r in range(s.parts):
        gr, b = to_dgl(s, rank=r), s.rank(r)
        inner = gr.ndata["inner_node"].numpy()
        np.testing.assert_array_equal(gr.ndata[dgl.NID].numpy()[inner], b.node_index)
        np.testing.assert_array_equal(gr.ndata["feat"].numpy()[inner], np.asarray(b.features, np.float32))


def check_build_from_dgl(s, client, root: Path) -> None:
    """build(g) of to_dgl's graph: the store it came from, rank block for rank block."""
    import shgcn.pipeline as pl
    from shgcn import store
    from shgcn.store import to_dgl

    g = to_dgl(s)
    model = s.attrs["model"]
    res = pl.build(g, parts=s.parts, out=root / "from-dgl.zarr", models=(model,), client=client,
                   seed=s.attrs["seed"], directed=s.attrs["directed"], feature_norm="none")
    again = store.open_store(res.path)
    assert again.attrs["checksums"] == s.attrs["checksums"], "build(DGL graph) differs from its store"


def stores(root: Path, client) -> dict:
    from benchmarks.common.fixtures import saint
    from shgcn import store
    from shgcn.pipeline.builder import build
    from shgcn.pipeline.config import BuildConfig

    specs = {"sbm (undirected)": ("sbm:n=2000,classes=4,degree=8,features=16,seed=3", 4, ("rp", "gp", "hp"), {}),
             "rmat (directed)": ("rmat:scale=10,edge_factor=6,seed=4", 3, ("rp", "hp"), {"features": "random:8"}),
             "GraphSAINT fixture (multi-label)": (str(saint(root / "saint", multi=True)), 2, ("rp",), {})}
    out = {}
    for name, (src, p, models, kw) in specs.items():
        path = root / f"{len(out)}.zarr"
        build(BuildConfig(source=src, out=str(path), parts=p, models=models, **kw), client, echo=lambda *a: None)
        out[name] = store.open_store(path)
    return out


def check(result: Path) -> int:
    import importlib.metadata as md

    from distributed import Client, LocalCluster

    rows = []
    with tempfile.TemporaryDirectory() as tmp, \
            LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address="127.0.0.1:0") as c, \
            Client(c) as client:
        root = Path(tmp)
        for k, (name, s) in enumerate(stores(root, client).items()):
            t0 = time.perf_counter()
            info = check_export(s, root / f"dd{k}")
            check_to_dgl(s)
            check_build_from_dgl(s, client, root / f"b{k}")
            rows.append({"graph": name, **info, "model": s.attrs["model"], "labels": s.attrs.get("label_kind"),
                         "ok": "yes", "seconds": f"{time.perf_counter() - t0:.1f}"})
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs",
                            "tests/pipeline/exports/test_distdgl.py", "tests/store/test_interop.py"],
                           capture_output=True, text=True, cwd=REPO)
    versions = {p: md.version(p) for p in ("torch", "dgl", "numpy", "scipy", "pandas", "pyarrow", "torchdata", "shgcn")}
    summary = (tests.stdout.strip().splitlines() or ["(no output)"])[-1]
    skipped = [x for x in tests.stdout.splitlines() if x.startswith("SKIPPED")]
    result.write_text(json.dumps({"rows": rows, "versions": versions, "tests": summary, "skipped": skipped,
                                  "tests_rc": tests.returncode}))
    return 0 if tests.returncode == 0 else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--venv", type=Path, default=REPO / "build" / "dgl-venv")
    ap.add_argument("--reuse", action="store_true", help="use the environment if it exists")
    ap.add_argument("--check", type=Path, help=argparse.SUPPRESS)  # inside the DGL environment
    args = ap.parse_args()
    if args.check:
        return check(args.check)
    py = make_venv(args.venv, args.reuse)
    out = Path(tempfile.mkstemp(suffix=".json")[1])
    run = subprocess.run([str(py), "-m", "benchmarks.interop.dgl_roundtrip", "--check", str(out)], cwd=REPO,
                         env={**os.environ, "PYTHONWARNINGS": "ignore"})
    res = json.loads(out.read_text())
    v = res["versions"]
    size = subprocess.run(["du", "-sh", str(args.venv)], capture_output=True, text=True).stdout.split("\t")[0]
    body = (table(res["rows"], [("graph", "graph"), ("nodes", "nodes"), ("edges", "edges"), ("parts", "parts"),
                                ("model", "layout model"), ("labels", "labels"), ("ok", "every check"),
                                ("seconds", "s")])
            + f"\nEnvironment made by the script (`{args.venv.name}`, {size} on disk): "
            + ", ".join(f"{k} {x}" for k, x in v.items())
            + " (torch from PyPI: its Linux wheel is the CUDA build, with nvidia-* packages; it runs on the CPU)."
            + "\n\nChecks per part i, after `dgl.distributed.load_partition`: inner nodes in order = rank i's rows "
              "(original ids), `_N/feat`, `_N/label`, masks = rank i's arrays, `book.nid2partid` of every node "
              "(inner and halo) = the store's partition, inner edges = the input edges whose destination part i "
              "owns, all edges counted once; `to_dgl` of the whole graph and of every rank = the store; "
              "`build(dgl_graph)` of `to_dgl`'s graph = the same rank blocks (checksums)."
            + f"\n\nThe project's DGL tests in that environment (tests/pipeline/exports/test_distdgl.py, "
              f"tests/store/test_interop.py): {res['tests']}"
            + (f"; skipped: {'; '.join(res['skipped'])}" if res["skipped"] else "; none skipped") + ".\n")
    write_section(TITLE, body)
    return run.returncode


if __name__ == "__main__":
    sys.exit(main())
