"""One R-MAT build measured as ``plan_check`` measures its builds, with the
build's own plan check on, as a user's build runs (issue 32's
``--memory-limit`` runs).

    python -m benchmarks.build.checked_build SCALE --tag TAG [--model gp] [--parts 64] [--records DIR]
        [--build-args "--memory-limit 4.6G"]

The build: ``pipeline build rmat:scale=SCALE,edge_factor=16,seed=1 --model MODEL --parts P --out DIR/TAG.zarr
--overwrite BUILD_ARGS`` in a fresh process, every other option at its default; the resident memory of its
whole process tree summed and sampled every 0.25 s, and the partial store's size, by
:mod:`benchmarks.build.plan_check`'s sampler. ``plan_check``'s own builds (``--fit``, ``--one``) pass
``--no-plan-check``, which leaves the readers' coarse guard (``pipeline/sources/budget.py``) in force: under a
``--memory-limit`` below that guard's figure such a build stops before ingest. Here the plan decides whether the
build starts, and the stages then run under the limit. The record, DIR/TAG.json, is ``plan_check``'s (the
store's facts, the sampled peaks, the store's size; ``plan_checked`` true) and the store is kept; printed:
the sampled peak, the store's per-stage peaks, the build's process beside the partitioner's child, and the
build's row of ``plan_check``'s check. RESULTS.md is not written (its sections quote these lines).
"""

from __future__ import annotations

import argparse
import json
import shlex
from pathlib import Path

from benchmarks.build import plan_check
from benchmarks.build.plan_check import RMAT, compare, report
from benchmarks.common import REPO


def measure(tag: str, scale: int, model: str, out: Path, extra: tuple[str, ...] = (), parts: int = 64) -> dict:
    """Build once with the plan check on; the record (plan_check's, ``plan_checked`` true), saved as
    out/TAG.json."""
    return plan_check.measure(tag, RMAT.format(scale), model, out, extra, parts, plan_checked=True)


def summary(rec: dict) -> str:
    """The lines printed for a record: the sampled peak, the per-stage peaks, beside the child, the check's row."""
    i = rec["info"]
    return "\n".join([
        f"{rec['tag']}: {i['nnz']:,} nonzeros; sampled tree {rec['tree_peak_bytes'] / 2**30:.2f} GiB "
        f"({rec['tree_peak_bytes'] / i['nnz']:.1f} B/nnz); {rec['wall']:.0f} s",
        "peak MiB by stage: " + json.dumps(i["peak_rss_mib_by_stage"]),
        "beside the child: " + json.dumps(i.get("peak_rss_mib_while_partitioning")),
        report([compare(rec)])])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scale", type=int, help="R-MAT scale (edge factor 16, seed 1)")
    ap.add_argument("--tag", default=None, help="the record's name (default rmatSCALE-MODEL-pP-checked)")
    ap.add_argument("--model", default="gp", help="the partition model (default gp)")
    ap.add_argument("--parts", type=int, default=64)
    ap.add_argument("--records", type=Path, default=REPO / "build" / "plan", help="where the record and store go")
    ap.add_argument("--build-args", default="", help="more `pipeline build` options, as one string")
    args = ap.parse_args()
    tag = args.tag or f"rmat{args.scale}-{args.model}-p{args.parts}-checked"
    rec = measure(tag, args.scale, args.model, args.records, tuple(shlex.split(args.build_args)), args.parts)
    print(summary(rec))


if __name__ == "__main__":
    main()
