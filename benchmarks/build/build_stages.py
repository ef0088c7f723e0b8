"""Wall time by stage and peak memory of `pipeline build`.

Each build runs in a fresh process (so that its peak resident memory is its
own) with the embedded cluster; the store's attributes hold the stage times
and the peak RSS measured inside the build.

    python -m benchmarks.build.build_stages              # soc-slashdot0902 p=16 hp, R-MAT 2^20 gp
    python -m benchmarks.build.build_stages --rmat-hp    # also hp on the R-MAT graph (slow)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import SHARED, table, write_section


def run_build(source: str, parts: int, model: str, extra: list[str], timeout: float) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "s.zarr"
        cmd = [sys.executable, "-m", "shgcn.pipeline", "--quiet", "build", source, "--parts", str(parts), "--model", model,
               "--out", str(out), *extra]
        t0 = time.perf_counter()
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"source": source, "model": model, "parts": parts, "status": f"timeout after {timeout:.0f} s"}
        wall = time.perf_counter() - t0
        if res.returncode != 0:
            return {"source": source, "model": model, "parts": parts, "status": f"failed: {res.stderr[-300:]}"}
        attrs = json.loads((out / "zarr.json").read_text())["attributes"]
    t = attrs["timings"]
    non_partition = sum(v for k, v in t.items() if k != "partition")
    return {"source": source, "model": model, "parts": parts, "status": "ok", "n": f"{attrs['n']:,}",
            "edges": f"{attrs['edges']:,}", **{k: f"{v:.2f}" for k, v in t.items()},
            "other": f"{non_partition:.2f}", "wall": f"{wall:.1f}", "peak": f"{attrs['peak_rss_mib']:,.0f}",
            "ok": "yes" if non_partition < t["partition"] else "no"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rmat-scale", type=int, default=20)
    ap.add_argument("--rmat-hp", action="store_true", help="also partition the R-MAT graph with hp")
    ap.add_argument("--timeout", type=float, default=1800)
    args = ap.parse_args()
    rmat = f"rmat:scale={args.rmat_scale},edge_factor=16,seed=1"
    runs = [("soc-slashdot0902", 16, "hp", ["--data-dir", str(SHARED), "--features", "random:128"]),
            (rmat, 16, "gp", ["--features", "random:16"])]
    if args.rmat_hp:
        runs.append((rmat, 16, "hp", ["--features", "random:16"]))
    rows = [run_build(*r, timeout=args.timeout) for r in runs]
    cols = [("source", "graph"), ("n", "n"), ("edges", "edges"), ("parts", "p"), ("model", "model"),
            ("ingest", "ingest s"), ("normalize", "normalize s"), ("partition", "partition s"), ("quality", "quality s"),
            ("layout", "layout s"), ("write", "write s"), ("other", "all but partition s"), ("wall", "process wall s"),
            ("peak", "peak RSS MiB"), ("ok", "rest < partitioner"), ("status", "status")]
    body = table(rows, cols) + (
        "\nTargets (issue 2): for soc-slashdot0902 everything but the partitioner takes less time than the "
        "partitioner, and peak memory stays under 2 GiB; for R-MAT 2^20 peak memory stays under 8 GiB. "
        "Process wall includes Python start-up and the Dask cluster's start and stop.\n")
    write_section("Build: wall time by stage and peak memory", body)


if __name__ == "__main__":
    main()
