"""The scale-out build (issue 13): ingest at library speed, bytes through the
client and the scheduler, large R-MAT builds on an external loopback cluster
(one with a worker killed mid-build), a build beside CPU-bound processes,
and KaMinPar against METIS.

    python -m benchmarks.build.scale_build ingest      # 8M-edge edge list and .mtx, one core
    python -m benchmarks.build.scale_build bytes       # R-MAT scale 16, 18, 20: bytes via client and scheduler
    python -m benchmarks.build.scale_build rmat22      # R-MAT scale 22, gp, p=64, 2 workers
    python -m benchmarks.build.scale_build killed      # R-MAT scale 20, hp, a worker killed mid-build
    python -m benchmarks.build.scale_build busy        # soc-slashdot0902 p=16 --model all beside 2 CPU hogs
    python -m benchmarks.build.scale_build kaminpar    # KaMinPar vs METIS (needs `pip install kaminpar`)

Each writes its own section of RESULTS.md. Scratch files go to build/bench/.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from benchmarks.common import REPO, SHARED, table, write_section

SCRATCH = REPO / "build" / "bench"
GiB = 2**30


# ------------------------------------------------------------------ ingest

# (setup, timed work) of each reader: imports are not timed
_INGEST = {
    "pyarrow.csv": ("import pyarrow as pa, pyarrow.csv as c", """
t = c.read_csv(PATH, read_options=c.ReadOptions(use_threads=False, autogenerate_column_names=True),
               parse_options=c.ParseOptions(delimiter=DELIM), convert_options=c.ConvertOptions(
               column_types={"f0": pa.int64(), "f1": pa.int64()}))
a, b = t.column(0).to_numpy(), t.column(1).to_numpy()
"""),
    "pandas.read_csv": ("import pandas as pd", """
df = pd.read_csv(PATH, sep=DELIM, header=None, dtype="int64", engine="c")
a, b = df[0].to_numpy(), df[1].to_numpy()
"""),
    "scipy.io.mmread": ("import scipy.io", """
m = scipy.io.mmread(PATH).tocoo()
a, b = m.row, m.col
"""),
    "shgcn (parse tasks, in sequence)": ("from shgcn.pipeline.sources import parsing as ingest, probe as readers\n"
                                         "import scipy.io, pyarrow.csv", """
pb = readers.probe(PATH, FMT)
chunks = [ingest.parse_range(r, pb.kind, ingest.MAX_LINE_BYTES, pb.kwargs)
          for r in ingest.byte_ranges(PATH, pb.header_bytes, pb.size, ingest.DEFAULT_CHUNK_BYTES)]
assert all(c.error is None for c in chunks)
a = [c.a for c in chunks]
"""),
}


def _measure(code: tuple[str, str], path: Path, fmt: str, delim: str) -> tuple[float, float]:
    """(seconds, peak RSS MiB while reading) of ``code`` in a fresh process pinned to one core: the
    kernel's high-water mark is reset after the imports (``/proc/self/clear_refs``)."""
    setup, work = code
    prog = (f"import time\nfrom shgcn.pipeline.runtime.monitor import peak_rss_mib as peak_mib, reset_peak\n{setup}\n"
            f"PATH, FMT, DELIM = {str(path)!r}, {fmt!r}, {delim!r}\nreset_peak()\n"
            f"t0 = time.perf_counter()\n{work}\nprint(time.perf_counter() - t0, peak_mib())")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    res = subprocess.run(["taskset", "-c", "0", sys.executable, "-c", prog], capture_output=True, text=True, env=env,
                         check=True)
    t, mib = res.stdout.split()[-2:]
    return float(t), float(mib)


def _write_graph_files() -> tuple[Path, Path, int]:
    """An 8M-edge R-MAT edge list (tab separated) and the same as .mtx."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    from shgcn.pipeline.sources.synthetic import rmat

    SCRATCH.mkdir(parents=True, exist_ok=True)
    el, mtx = SCRATCH / "rmat19.txt", SCRATCH / "rmat19.mtx"
    g = rmat(19, 16, seed=1)
    if not el.exists():
        pacsv.write_csv(pa.table({"u": g.src, "v": g.dst}), el, pacsv.WriteOptions(include_header=False,
                                                                                   delimiter="\t"))
    if not mtx.exists():
        n = int(max(g.src.max(), g.dst.max())) + 1
        tmp = SCRATCH / "body.mtx"
        pacsv.write_csv(pa.table({"u": g.src + 1, "v": g.dst + 1}), tmp,
                        pacsv.WriteOptions(include_header=False, delimiter=" "))
        with open(mtx, "wb") as f:
            f.write(f"%%MatrixMarket matrix coordinate pattern general\n{n} {n} {g.src.size}\n".encode())
            f.write(tmp.read_bytes())
        tmp.unlink()
    return el, mtx, int(g.src.size)


def bench_ingest(repeat: int) -> None:
    el, mtx, m = _write_graph_files()
    rows = []
    cases = [("edge list", el, "edgelist", "\t", ["pyarrow.csv", "pandas.read_csv", "shgcn (parse tasks, in sequence)"]),
             ("Matrix Market", mtx, "mtx", " ", ["scipy.io.mmread", "shgcn (parse tasks, in sequence)"])]
    for what, path, fmt, delim, tools in cases:
        base = None
        for tool in tools:
            runs = [_measure(_INGEST[tool], path, fmt, delim) for _ in range(repeat)]
            t = float(np.median([r[0] for r in runs]))
            mib = float(np.median([r[1] for r in runs]))
            if base is None:
                base = (t, mib)
            rows.append({"file": f"{what} ({path.stat().st_size / 2**20:,.0f} MiB, {m:,} edges)", "tool": tool,
                         "s": f"{t:.2f}", "MiB": f"{mib:,.0f}", "time ratio": f"{t / base[0]:.2f}",
                         "memory ratio": f"{mib / base[1]:.2f}"})
    body = table(rows, [("file", "input"), ("tool", "reader"), ("s", "seconds (median)"),
                        ("MiB", "peak RSS MiB while reading"),
                        ("time ratio", "time / first"), ("memory ratio", "memory / first")])
    body += (f"\nOne core (`taskset -c 0`, one BLAS/Arrow thread), each run a fresh process, median of {repeat}; "
             "imports are not timed (shgcn's readers import scipy.io and pyarrow.csv on first use; the setup imports them, "
             "as it imports each library for its own reader), and memory is the peak resident set while reading "
             "(reset after the imports). "
             "shgcn's figure is every parse task of the build run one after another in one process (byte ranges "
             "of 16 MiB, pyarrow inside each task, the tokenizer only where pyarrow refuses a chunk). "
             "Targets: within 1.5x of pyarrow.csv's and scipy.io.mmread's time, within 2x of their memory.\n")
    write_section("Build: ingest speed on one core", body)


# ------------------------------------------------------- external cluster

class Cluster:
    """``dask scheduler`` and worker processes on loopback."""

    def __init__(self, workers: int = 2, memory: str = "12GiB"):
        self.dir = Path(tempfile.mkdtemp(prefix="shgcn-cluster-"))
        sfile = self.dir / "scheduler.json"
        dask = str(Path(sys.executable).parent / "dask")
        self.scheduler = subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", "0",
                                           "--dashboard-address", "127.0.0.1:0", "--scheduler-file", str(sfile)],
                                          cwd=self.dir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while not sfile.exists():
            time.sleep(0.2)
        time.sleep(0.5)
        self.address = json.loads(sfile.read_text())["address"]
        self.workers = [subprocess.Popen([dask, "worker", self.address, "--nthreads", "1", "--no-nanny",
                                          "--memory-limit", memory, "--host", "127.0.0.1",
                                          "--dashboard-address", "127.0.0.1:0"], cwd=self.dir,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                        for _ in range(workers)]

    def close(self) -> None:
        for p in [*self.workers, self.scheduler]:
            p.kill()
            p.wait()


def tcp_bytes(pid: int) -> tuple[int, int]:
    """(sent, received) bytes on the TCP sockets of process ``pid`` (``ss -tinp``)."""
    out = subprocess.run(["ss", "-tinpH"], capture_output=True, text=True).stdout
    sent = recv = 0
    lines = out.splitlines()
    for i, line in enumerate(lines):
        if f"pid={pid}," not in line:
            continue
        info = lines[i + 1] if i + 1 < len(lines) else ""
        if m := re.search(r"bytes_acked:(\d+)", info):
            sent += int(m.group(1))
        if m := re.search(r"bytes_received:(\d+)", info):
            recv += int(m.group(1))
    return sent, recv


def cluster_build(cluster: Cluster, source: str, parts: int, models: tuple[str, ...], out: Path,
                  kill_after: str | None = None, **kw) -> dict:
    """A build from this process (the client) on ``cluster``; returns its
    attributes, wall time and the bytes through client and scheduler."""
    from distributed import Client

    from shgcn.pipeline.builder import build
    from shgcn.pipeline.config import BuildConfig

    killed = {}
    with Client(cluster.address) as client:
        client.wait_for_workers(len(cluster.workers))
        c0, s0 = tcp_bytes(os.getpid()), tcp_bytes(cluster.scheduler.pid)
        stop = threading.Event()
        if kill_after:
            def killer():  # the first worker dies once the build reaches stage `kill_after`
                import logging

                class H(logging.Handler):
                    def emit(self, rec):
                        if not stop.is_set() and f"stage {kill_after}:" in rec.getMessage():
                            stop.set()
                            cluster.workers[0].send_signal(signal.SIGKILL)
                            killed["at"] = kill_after
                logging.getLogger("shgcn.pipeline.runtime.monitor").addHandler(H())
            killer()
        t0 = time.perf_counter()
        res = build(BuildConfig(source=source, out=str(out), parts=parts, models=models, overwrite=True, **kw), client,
                    echo=lambda *a: None)
        wall = time.perf_counter() - t0
        c1, s1 = tcp_bytes(os.getpid()), tcp_bytes(cluster.scheduler.pid)
    return {"attrs": res.attrs, "wall": wall, "client": (c1[0] - c0[0], c1[1] - c0[1]),
            "scheduler": (s1[0] - s0[0], s1[1] - s0[1]), "killed": killed.get("at")}


def _row(name: str, r: dict) -> dict:
    a = r["attrs"]
    t = a["timings"]
    peaks = a["peak_rss_mib_by_stage"]
    client_peak = max(p.get("client", 0) for p in peaks.values())
    worker_peak = max((v for p in peaks.values() for k, v in p.items() if k.startswith("worker")), default=0)
    child_peak = max((v for p in peaks.values() for k, v in p.items() if k.startswith("child")), default=0)
    rest = max(v for k, v in t.items() if k != "partition")
    return {"run": name, "n": f"{a['n']:,}", "edges": f"{a['edges']:,}", "p": a["parts"], "models": ",".join(a["models"]),
            **{k: f"{v:.1f}" for k, v in t.items()}, "wall": f"{r['wall']:.0f}",
            "client MiB": f"{client_peak:,.0f}", "worker MiB": f"{worker_peak:,.0f}", "child MiB": f"{child_peak:,.0f}",
            "client sent/recv MiB": f"{r['client'][0] / 2**20:,.1f} / {r['client'][1] / 2**20:,.1f}",
            "scheduler sent/recv MiB": f"{r['scheduler'][0] / 2**20:,.1f} / {r['scheduler'][1] / 2**20:,.1f}",
            "longest other stage < partition": "yes" if rest < t["partition"] else "no",
            "killed": r.get("killed") or ""}


_COLS = [("run", "run"), ("n", "n"), ("edges", "edges"), ("p", "p"), ("models", "models"), ("ingest", "ingest s"),
         ("normalize", "normalize s"), ("partition", "partition s"), ("quality", "quality s"), ("layout", "layout s"),
         ("write", "write s"), ("wall", "wall s"), ("client MiB", "client peak MiB"), ("worker MiB", "worker peak MiB"),
         ("child MiB", "partitioner child MiB"), ("client sent/recv MiB", "client sent/recv MiB"),
         ("scheduler sent/recv MiB", "scheduler sent/recv MiB"),
         ("longest other stage < partition", "every other stage < partition"), ("killed", "worker killed at")]


def bench_bytes() -> None:
    cluster = Cluster()
    rows = []
    try:
        for scale in (16, 18, 20):
            r = cluster_build(cluster, f"rmat:scale={scale},edge_factor=16,seed=1", 16, ("gp",),
                              SCRATCH / f"rmat{scale}.zarr", features="random:16")
            row = _row(f"R-MAT scale {scale}", r)
            n, m = r["attrs"]["n"], r["attrs"]["edges"]
            row["bytes/n"] = f"{sum(r['client']) / n:,.1f} / {sum(r['scheduler']) / n:,.1f}"
            row["bytes/edge"] = f"{sum(r['client']) / m:,.2f} / {sum(r['scheduler']) / m:,.2f}"
            rows.append(row)
    finally:
        cluster.close()
    body = table(rows, _COLS + [("bytes/n", "client / scheduler bytes per vertex"),
                                ("bytes/edge", "client / scheduler bytes per edge")])
    body += ("\nExternal loopback cluster: a scheduler and 2 worker processes (1 thread each); the client is the "
             "benchmark process. Bytes are the TCP bytes of the client's and the scheduler's sockets during the "
             "build (`ss -tinp`). For comparison, the edges alone are 16 bytes each as int64 pairs.\n")
    write_section("Build: bytes through the client and the scheduler (R-MAT)", body)


def bench_rmat22() -> None:
    cluster = Cluster(memory="12GiB")
    try:
        r = cluster_build(cluster, "rmat:scale=22,edge_factor=16,seed=1", 64, ("gp",), SCRATCH / "rmat22.zarr",
                          features="random:16")
    finally:
        cluster.close()
    write_section("Build: R-MAT scale 22, gp, p=64, external cluster of 2 workers",
                  table([_row("R-MAT scale 22", r)], _COLS) +
                  "\nTargets: completes; client peak under 1 GiB; no worker above 12 GiB; every stage but the "
                  "partitioner takes less wall time than the partitioner.\n")


def bench_killed() -> None:
    cluster = Cluster()
    try:
        r = cluster_build(cluster, "rmat:scale=20,edge_factor=16,seed=1", 16, ("hp",), SCRATCH / "rmat20-hp.zarr",
                          kill_after="normalize", features="random:16")
    finally:
        cluster.close()
    write_section("Build: R-MAT scale 20, hp, a worker killed mid-build",
                  table([_row("R-MAT scale 20 hp, worker 0 killed", r)], _COLS) +
                  "\nThe first worker is killed (SIGKILL, no nanny to restart it) as soon as the normalize stage "
                  "ends; the build goes on with the other worker and recomputes what the dead one held.\n")


def bench_busy() -> None:
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            res = subprocess.run([sys.executable, "-m", "shgcn.pipeline", "build", "soc-slashdot0902", "--parts",
                                  "16", "--model", "all", "--data-dir", str(SHARED), "--features", "random:128",
                                  "--out", f"{tmp}/s.zarr"], capture_output=True, text=True)
            wall = time.perf_counter() - t0
            status = "completed" if res.returncode == 0 else f"failed: {res.stderr[-500:]}"
            timings = json.loads((Path(tmp) / "s.zarr" / "zarr.json").read_text())["attributes"]["timings"] \
                if res.returncode == 0 else {}
            beats = len(re.findall(r"running for", res.stderr))
    finally:
        for h in hogs:
            h.kill()
    write_section("Build: soc-slashdot0902 p=16 --model all beside two CPU-bound processes",
                  f"Status: **{status}** in {wall:.0f} s (2 cores, two `while True: pass` processes beside it).\n\n"
                  f"Stage times: {', '.join(f'{k} {v:.1f} s' for k, v in timings.items())}; "
                  f"heartbeat log lines: {beats}.\n")


def _metis_file(a, path: Path) -> None:
    """The symmetrized graph of Â without self loops, vertex weight = row
    nonzeros of Â (as gp uses it), in METIS format (KaMinPar reads files)."""
    import scipy.sparse as sp

    sym = (a + a.T).tocsr()
    sym.setdiag(0)
    sym.eliminate_zeros()
    sym.sort_indices()
    w = np.diff(a.indptr)
    with open(path, "w") as f:
        f.write(f"{sym.shape[0]} {sym.nnz // 2} 010\n")
        for i in range(sym.shape[0]):  # noqa: B007 - a benchmark's file writer, not a hot path of the product
            nb = sym.indices[sym.indptr[i]:sym.indptr[i + 1]] + 1
            f.write(f"{w[i]} " + " ".join(map(str, nb.tolist())) + "\n")
    del sp


def _graph_a(name: str):
    from distributed import Client

    from shgcn.pipeline.sources import datasets, readers
    from shgcn.pipeline.sources.synthetic import parse_spec
    from shgcn.pipeline.stages.ingest import to_graph
    from shgcn.pipeline.stages.normalize import normalized_adjacency

    if name.startswith("rmat:"):
        g = to_graph(parse_spec(name), directed=True)
    else:
        ds = datasets.lookup(name)
        with Client(processes=False, dashboard_address="127.0.0.1:0") as c:
            g = to_graph(readers.read(datasets.locate(ds, SHARED, download=False), ds.format, c), ds.directed)
    return normalized_adjacency(g.adj, g.directed)


def bench_kaminpar() -> None:
    try:
        import kaminpar
    except ImportError:
        raise SystemExit("kaminpar is not installed: pip install kaminpar") from None
    from shgcn.pipeline.metrics.volume import partition_quality
    from shgcn.pipeline.models.gp import metis_partition

    rows = []
    for name in ("soc-slashdot0902", "rmat:scale=20,edge_factor=16,seed=1"):
        a = _graph_a(name)
        path = SCRATCH / "kaminpar.graph"
        _metis_file(a, path)
        g = kaminpar.load_graph(str(path), kaminpar.GraphFileFormat.METIS)
        for p in (16, 64):
            t0 = time.perf_counter()
            part_m = metis_partition(a, p, 0.03, 0)
            t_m = time.perf_counter() - t0
            kaminpar.reseed(0)
            t0 = time.perf_counter()
            part_k = np.asarray(kaminpar.KaMinPar(os.cpu_count() or 1, kaminpar.default_context())
                                .compute_partition(g, p, 0.03), dtype=np.int32)
            t_k = time.perf_counter() - t0
            for tool, part, t in (("METIS (pymetis)", part_m, t_m), (f"KaMinPar {kaminpar.__version__}", part_k, t_k)):
                q = partition_quality(a, part, p)
                rows.append({"graph": name, "p": p, "tool": tool, "s": f"{t:.2f}", "volume": f"{q.total_volume:,}",
                             "max send": f"{int(q.send.max()):,}", "imbalance": f"{q.imbalance:.3f}",
                             "cut": f"{q.edge_cut:,}"})
    body = table(rows, [("graph", "graph"), ("p", "p"), ("tool", "partitioner"), ("s", "seconds"),
                        ("volume", "total volume"), ("max send", "max send"), ("imbalance", "load imbalance"),
                        ("cut", "edge cut")])
    body += ("\nBoth on the symmetrized graph of Â with vertex weight = nonzeros of the row, eps 0.03, seed 0, "
             "all cores (2). KaMinPar reads the graph from a METIS file (its Python binding has no in-memory "
             "constructor); the file's writing and loading are not timed.\n")
    write_section("Partitioning: KaMinPar against METIS", body)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=("ingest", "bytes", "rmat22", "killed", "busy", "kaminpar"))
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    SCRATCH.mkdir(parents=True, exist_ok=True)
    {"ingest": lambda: bench_ingest(args.repeat), "bytes": bench_bytes, "rmat22": bench_rmat22,
     "killed": bench_killed, "busy": bench_busy, "kaminpar": bench_kaminpar}[args.what]()


if __name__ == "__main__":
    main()
