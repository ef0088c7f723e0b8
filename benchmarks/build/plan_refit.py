"""The build plan's coefficients refitted on saved build records, some terms
kept from the previous fit (issue 32: the refit with R-MAT scales 24 and 25).

    python -m benchmarks.build.plan_refit --records DIR [DIR ...] [--add rmat24-gp-p64 rmat25-gp-p64]
        [--keep child seconds] [--output FILE]

``benchmarks.build.plan_check --fit --only-saved`` fits every term on the fit's records (its ``FIT_RUNS``); this
fits the same terms (``plan_check.fit``) on the fit's records plus ``--add`` (records of larger builds, e.g. made
by ``plan_check --one 24 --tag rmat24-gp-p64 --build-args="--kaminpar-eps 0.05"``), each TAG.json taken from the
first of the ``--records`` directories that has it, and then copies the ``--keep`` parts of the previous
coefficients (``--previous``, default the plan's own ``pipeline/plan-this.json``) over the new ones: KaMinPar's
child and the seconds, when the added builds ran with ``--kaminpar-eps`` (the child leaner than the fit's) or on
a loaded machine (their seconds). Writes ``--output`` (default the plan's file, ``pipeline/plan-this.json``);
its ``source`` names the command, the builds and what was kept from where.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from benchmarks.build.plan_check import FIT_RUNS, fit

PARTS = ("memory", "child", "beside", "disk", "seconds")


def load(dirs: list[Path], tags: list[str]) -> dict[str, dict]:
    """The record of each tag from the first directory that has it (tags found nowhere are left out)."""
    out = {}
    for tag in tags:
        found = next((d / f"{tag}.json" for d in dirs if (d / f"{tag}.json").exists()), None)
        if found is not None:
            out[tag] = json.loads(found.read_text())
    return out


def refit(recs: dict[str, dict], previous: dict, keep: tuple[str, ...]) -> dict:
    """``plan_check.fit`` on ``recs`` with the ``keep`` parts of ``previous`` in place of the fitted ones."""
    coef = fit(recs)
    for part in keep:
        coef[part] = previous[part]
    if keep:
        coef["source"] += f"; {' and '.join(keep)} kept from the previous fit ({previous.get('source', '?')})"
    return coef


def main() -> None:
    from shgcn.pipeline.plan import coefficients_path

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=Path, nargs="+", required=True, help="directories of build records (TAG.json)")
    ap.add_argument("--add", nargs="*", default=[], help="tags fitted besides plan_check's FIT_RUNS")
    ap.add_argument("--keep", nargs="*", choices=PARTS, default=["child", "seconds"],
                    help="parts of the previous coefficients kept (default: child seconds)")
    ap.add_argument("--previous", type=Path, default=None, help="the previous coefficients (default: the plan's)")
    ap.add_argument("--output", type=Path, default=None, help="where the coefficients go (default: the plan's)")
    args = ap.parse_args()
    tags = [t for t, *_ in FIT_RUNS] + [t for t in args.add if t not in {r[0] for r in FIT_RUNS}]
    recs = load(args.records, tags)
    missing = [t for t in tags if t not in recs]
    if not recs:
        raise SystemExit(f"no records of {', '.join(tags)} in {', '.join(map(str, args.records))}")
    previous = json.loads((args.previous or coefficients_path()).read_text())
    coef = refit(recs, previous, tuple(args.keep))
    out = args.output or coefficients_path()
    out.write_text(json.dumps(coef, indent=2) + "\n")
    print(f"fitted on {len(recs)} builds ({', '.join(sorted(recs))}); kept {', '.join(args.keep) or 'nothing'}; "
          f"wrote {out}" + (f"; not found: {', '.join(missing)}" if missing else ""))


if __name__ == "__main__":
    main()
