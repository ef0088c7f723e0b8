"""Are two stores the same, byte for byte?

    python -m benchmarks.build.compare_stores A.zarr B.zarr

Compares every file of the two store directories (every array's metadata
and chunks) except the root ``zarr.json`` and the partitioners' wall times
(``quality/seconds``), then the root attributes except those that record
when, where and how fast the build ran (timings, peak memory anywhere, versions,
the command line, the configuration object, seconds anywhere). Exit 0
when identical; otherwise lists what differs (exit 1).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

RUN_ATTRS = {"timings", "peak_rss_mib", "peak_rss_mib_by_stage", "peak_rss_mib_while_partitioning", "versions",
             "command", "config", "partitions"}


def files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.relative_to(root).as_posix() != "zarr.json"
            and not p.relative_to(root).as_posix().startswith("quality/seconds")}


def _steady(x):
    """``x`` without the values that record how fast and in how much memory it ran."""
    if isinstance(x, dict):
        return {k: _steady(v) for k, v in x.items() if "seconds" not in k and "peak" not in k and k != "time_budget"}
    if isinstance(x, list):
        return [_steady(v) for v in x]
    return x


def attrs(root: Path) -> dict:
    meta = json.loads((root / "zarr.json").read_text())["attributes"]
    return _steady({k: v for k, v in meta.items() if k not in RUN_ATTRS or k == "partitions"})


def compare(a: Path, b: Path) -> list[str]:
    fa, fb = files(a), files(b)
    diff = [f"only in {a}: {k}" for k in sorted(fa.keys() - fb.keys())]
    diff += [f"only in {b}: {k}" for k in sorted(fb.keys() - fa.keys())]
    diff += [f"differs: {k}" for k in sorted(fa.keys() & fb.keys()) if fa[k] != fb[k]]
    aa, ab = attrs(a), attrs(b)
    diff += [f"attribute differs: {k}" for k in sorted(aa.keys() | ab.keys()) if aa.get(k) != ab.get(k)]
    return diff


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a", type=Path, metavar="A.zarr")
    ap.add_argument("b", type=Path, metavar="B.zarr")
    args = ap.parse_args()
    a, b = args.a, args.b
    diff = compare(a, b)
    n = len(files(a))
    print("\n".join(diff) if diff else f"identical: {n} files, every array byte for byte, and the attributes")
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main())
