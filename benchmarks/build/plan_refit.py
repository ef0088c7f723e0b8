"""The build plan's coefficients refitted on saved build records, some terms
kept from the previous fit (issue 32: the refit with R-MAT scales 24 and 25).

    python -m benchmarks.build.plan_refit --records DIR [DIR ...] [--add rmat24-gp-p64 rmat25-gp-p64]
        [--keep child seconds] [--output FILE]
    python -m benchmarks.build.plan_refit --records DIR --slopes TAG [TAG ...] --terms ingest normalize beside:gp

``benchmarks.build.plan_check --fit --only-saved`` fits every term on the fit's records (its ``FIT_RUNS``); this
fits the same terms (``plan_check.fit``) on the fit's records plus ``--add`` (records of larger builds, e.g. made
by ``plan_check --one 24 --tag rmat24-gp-p64 --build-args="--kaminpar-eps 0.05"``), each TAG.json taken from the
first of the ``--records`` directories that has it, and then copies the ``--keep`` parts of the previous
coefficients (``--previous``, default the plan's own ``pipeline/plan-this.json``) over the new ones: KaMinPar's
child and the seconds, when the added builds ran with ``--kaminpar-eps`` (the child leaner than the fit's) or on
a loaded machine (their seconds). Writes ``--output`` (default the plan's file, ``pipeline/plan-this.json``);
its ``source`` names the command, the builds and what was kept from where.

``--slopes TAG ...`` refits less: only the rate a nonzero (bytes or seconds) of the ``--terms`` named (``STAGE`` or
``partition:MODEL``: the build's process's peak in that stage; ``beside:MODEL``: while its child runs;
``child:KEY``: the child, counted at the build's eps as ``--fit`` does; ``seconds:STAGE`` or
``seconds:partition:MODEL``: the stage's seconds, from the store's timings), each the mean over the records of
(measured - base - feature x n x D) / nnz, base and feature kept; with ``--line`` the base too (a least-squares
line through the records): for a change of the build measured on a few large builds when the fit's small ones are
not at hand (issue 59).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from benchmarks.build.plan_check import FIT_RUNS, _beside, _build_peak, _child_at_build_eps, _x, fit

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


def measured_term(rec: dict, part: str, key: str) -> float | None:
    """What a record measured of a term: the build's process's peak in stage ``key`` (``partition:MODEL``: in
    the partition stage), the build beside the child (``beside``), or the child (``child``: as if KaMinPar had
    partitioned for the build's eps, :func:`plan_check._child_at_build_eps`)."""
    if part == "seconds":  # the stage's own clock, from the store (partition:MODEL: the partition stage's)
        return rec["info"].get("timings", {}).get(key.split(":", 1)[0])
    if part == "beside":
        return _beside(rec)
    if part == "child":
        return _child_at_build_eps(rec) if f"child {rec['model']}" in rec["info"]["peak_rss_mib_by_stage"].get(
            "partition", {}) else None
    return _build_peak(rec, key.split(":", 1)[0])


def slopes(recs: dict[str, dict], previous: dict, terms: list[str], line: bool = False) -> dict:
    """``previous`` with the nnz coefficient of each of ``terms`` refitted on ``recs`` (:data:`__doc__`);
    ``line``: base and nnz both, a least-squares line through the records (feature kept)."""
    coef = json.loads(json.dumps(previous))
    for term in terms:
        part, key = term.split(":", 1) if term.split(":", 1)[0] in ("beside", "child", "seconds") else ("memory", term)
        t = coef[part][key]
        points = [(_x(r)[0], m - t.get("feature", 0.0) * _x(r)[2]) for r in recs.values()
                  if (m := measured_term(r, part, key))]
        if line and len(points) >= 2:
            slope, base = np.polyfit([x for x, _ in points], [y for _, y in points], 1)
            t["base"], t["nnz"] = float(base), float(max(0.0, slope))
        elif points:
            t["nnz"] = max(0.0, sum((y - t["base"]) / x for x, y in points) / len(points))
    how = "base and rate a nonzero (a line)" if line else "rate a nonzero (bytes or seconds)"
    coef["source"] = (f"{previous.get('source', '?')}; then the {how} of {', '.join(terms)} refitted on "
                      f"{', '.join(sorted(recs))} (python -m benchmarks.build.plan_refit --slopes"
                      f"{' --line' if line else ''}, the rest kept)")
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
    ap.add_argument("--slopes", nargs="+", default=None, metavar="TAG",
                    help="refit only the rate a nonzero of --terms on these records")
    ap.add_argument("--terms", nargs="+", default=[],
                    help="--slopes: the terms (ingest, partition:gp, beside:gp, child:gp-compressed)")
    ap.add_argument("--line", action="store_true", help="--slopes: fit each term's base too (a line)")
    args = ap.parse_args()
    if args.slopes is not None:
        recs = load(args.records, args.slopes)
        if not recs:
            raise SystemExit(f"no records of {', '.join(args.slopes)} in {', '.join(map(str, args.records))}")
        previous = json.loads((args.previous or coefficients_path()).read_text())
        out = args.output or coefficients_path()
        out.write_text(json.dumps(slopes(recs, previous, args.terms, args.line), indent=2) + "\n")
        print(f"refitted the rate a nonzero of {', '.join(args.terms)} on {', '.join(sorted(recs))}; wrote {out}")
        return
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
