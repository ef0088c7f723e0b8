"""Partitioning at the scale users have: whole builds of R-MAT graphs on the
embedded default cluster of this machine, each stage's time and peak memory.

    python -m benchmarks.partitioning.partition_scale [--runs gp:22:64 gp:23:64 hp:20:64] [--out DIR] [--keep]

A run ``MODEL:SCALE:PARTS`` is ``pipeline build rmat:scale=SCALE,edge_factor=16,seed=1 --model MODEL
--parts PARTS`` with every other option at its default (KaMinPar for gp, ``--hp-preset fast`` for hp,
``--balance work``), in a fresh process. The store records each stage's wall time and the peak memory
of every process that worked in it (the build's process: client, scheduler and worker in one; each
partitioner child); the table adds the peak of the build's process and of the partitioner's child over all stages, and
their sum (a loose upper bound: the two peaks may come from different stages).
Targets (issue 22): scale 22 gp within 10 minutes; scale 23 gp with at most 16 GiB summed over all
processes; scale 20 hp within 10 minutes. ``at once`` is the largest sum over the processes of one stage
(each process's peak is reset when a stage starts): the most memory the build can have held at any moment.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.common import REPO, store_info, table, write_section


def one(model: str, scale: int, parts: int, out: Path) -> tuple[dict, Path]:
    path = out / f"rmat{scale}-{model}-p{parts}.zarr"
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "shgcn.pipeline", "--quiet", "build",
                    f"rmat:scale={scale},edge_factor=16,seed=1", "--model", model, "--parts", str(parts),
                    "--out", str(path), "--overwrite"], check=True)
    wall = time.perf_counter() - t0
    info = store_info(path)
    peaks = info["peak_rss_mib_by_stage"]
    main = max(v for p in peaks.values() for k, v in p.items() if not k.startswith("child"))
    child = max((v for p in peaks.values() for k, v in p.items() if k.startswith("child")), default=0.0)
    # every process's peak is reset at each stage: the most memory in use at once is at most the largest
    # per-stage sum (the child exists only in the partition stage)
    at_once = max(sum(p.values()) for p in peaks.values())
    worst = max(peaks, key=lambda s: sum(peaks[s].values()))
    q = info["quality"][model]
    row = {"run": f"{model} scale {scale} p={parts}", "vertices": f"{info['n']:,}", "nnz(Â)": f"{info['nnz']:,}",
           "wall": f"{wall:.0f} s", **{s: f"{t:.0f} s" for s, t in info["timings"].items()},
           "build process peak": f"{main / 1024:.1f} GiB", "partitioner child peak": f"{child / 1024:.1f} GiB",
           "sum": f"{(main + child) / 1024:.1f} GiB", "at once": f"{at_once / 1024:.1f} GiB ({worst})",
           "work imb": f"{q['work_imbalance']:.3f}", "total volume": f"{q['total_volume']:,}"}
    return row, path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", nargs="+", default=["gp:22:64", "gp:23:64", "hp:20:64"])
    ap.add_argument("--out", type=Path, default=REPO / "build" / "scale")
    ap.add_argument("--keep", action="store_true", help="keep the stores (several GB each)")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for r in args.runs:
        model, scale, parts = r.split(":")
        row, path = one(model, int(scale), int(parts), args.out)
        rows.append(row)
        print(row, flush=True)
        if not args.keep:
            shutil.rmtree(path, ignore_errors=True)
    cols = [(k, k) for k in ("run", "vertices", "nnz(Â)", "wall", "ingest", "normalize", "partition", "quality",
                             "layout", "write", "build process peak", "partitioner child peak", "sum", "at once", "work imb",
                             "total volume")]
    write_section("Partitioning at scale (issue 22)", __doc__.split("\n\n", 2)[2] + "\n\n" + table(rows, cols))


if __name__ == "__main__":
    main()
