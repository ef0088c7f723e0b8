"""The build's plan (``pipeline build --plan``) against measured builds: its
coefficients fitted, and its predicted peaks checked, on this machine.

    python -m benchmarks.build.plan_check --fit [--records DIR] [--reuse] [--only-saved]
    python -m benchmarks.build.plan_check [--scales 20 21 22] [--records DIR] [--reuse] [--output FILE]
    python -m benchmarks.build.plan_check --one SCALE --tag TAG [--build-args "--kaminpar-eps 0.05"] [--records DIR]
        [--plan-checked]

A run is ``pipeline build SOURCE --model MODEL --parts 64`` in a fresh process (every other option at its
default). The store records the peak memory of every process per stage (each process's high-water mark is
reset when a stage starts); beside it this script samples, every 0.25 s, the resident memory of the build's
whole process tree and the size of its partial store (the store being written and the partitioners'
scratch). ``--fit`` runs R-MAT (edge factor 16, seed 1) scales 18 to 23 with gp, 18 to 20 with hp (its
default preset, and ``--hp-preset fast``: without METIS's start, as hp above 20M nonzeros), and
scale 18 with ``--features random:512`` (what a feature value costs), and writes the least-squares fit,
relative, non-negative, of ``base + a nnz + c n D`` to ``pipeline/plan-this.json``. The check builds R-MAT
gp p=64 at ``--scales`` and compares, per stage, the memory of all processes at once with the plan's (in the
partition stage the larger of the build's process's peak and its peak while the partitioner's child ran plus
the child's: the process peaks writing the graph file, before the child starts); then a graph of another
family, not fitted (an SBM of 1M vertices of degree 16), and the fit's hp builds found in ``--records``.
KaMinPar's child takes fewer bytes a nonzero from scale 23 on (43 against 52-54 at 21 and 22), which a line
through scales 21 and 22 over-predicts by a fifth: the fit has scale 23 (about 7 GiB at once), and scale 24
is the check's (``pipeline build`` refuses it on a machine of less than 33 GiB: the readers' budget,
``pipeline/sources/budget.py``, counts 128 bytes an edge; measured here with ``--memory-limit 40G``).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

from benchmarks.common import REPO, store_info, table, write_section
from benchmarks.common.results import command, header

STAGES = ("ingest", "normalize", "partition", "place", "quality", "layout", "write")
AFTER = STAGES[STAGES.index("partition") + 1:]  # the stages fitted per model (the others: on every build)
RMAT = "rmat:scale={},edge_factor=16,seed=1"
FIT_RUNS = [*((f"rmat{s}-gp-p64", RMAT.format(s), "gp", ()) for s in (18, 19, 20, 21, 22, 23)),
            *((f"rmat{s}-hp-p64", RMAT.format(s), "hp", ()) for s in (18, 19, 20)),
            *((f"rmat{s}-hpfast-p64", RMAT.format(s), "hp", ("--hp-preset", "fast")) for s in (18, 19, 20)),
            ("rmat18-gp-p64-f512", RMAT.format(18), "gp", ("--features", "random:512"))]
# another family, not fitted: what the plan makes of a graph of other shape (its own generator, fewer nonzeros a vertex)
OTHER = ("sbm1m-gp-p64", "sbm:n=1000000,degree=16,features=64", "gp", ())
MIB = 2**20
TITLE = "Build plan: predicted against measured peak memory (issue 32)"


def _du(p: Path) -> int:
    total = 0
    for root, _, files in os.walk(p):
        for f in files:
            try:
                total += os.lstat(os.path.join(root, f)).st_blocks * 512
            except OSError:
                pass
    return total


def _sample(proc: subprocess.Popen, out: Path, name: str, stop: threading.Event, state: dict) -> None:
    from shgcn.pipeline.runtime.child import tree_resident

    while not stop.wait(0.25):
        state["tree"] = max(state["tree"], tree_resident(proc.pid))
        for d in out.glob(f".{name}.partial-*"):
            state["disk"] = max(state["disk"], _du(d))


def measure(tag: str, source: str, model: str, out: Path, extra: tuple[str, ...] = (), parts: int = 64, *,
            plan_checked: bool = False) -> dict:
    """Build once; the record: the store's facts, the sampled peaks, the store's size; saved as out/TAG.json.
    ``plan_checked``: the build's own plan check on (as a user's build runs), else ``--no-plan-check``."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{tag}.zarr"
    cmd = [sys.executable, "-m", "shgcn.pipeline", "build", source, "--model", model, "--parts", str(parts),
           "--out", str(path), "--overwrite", *(() if plan_checked else ("--no-plan-check",)), *extra]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    state, stop = {"tree": 0, "disk": 0}, threading.Event()
    sampler = threading.Thread(target=_sample, args=(proc, out, path.name, stop, state), daemon=True)
    sampler.start()
    try:
        log = proc.communicate(timeout=7200)[0]  # R-MAT scale 25 took 38 minutes on 2 cores
    except subprocess.TimeoutExpired:
        proc.kill()
        log = proc.communicate()[0]
    finally:
        stop.set()
        sampler.join()
    if proc.returncode:
        raise SystemExit(f"{tag}: the build failed (exit {proc.returncode}):\n{log[-3000:]}")
    rec = {"tag": tag, "source": source, "model": model, "parts": parts, "extra": list(extra),
           "wall": time.perf_counter() - t0, "tree_peak_bytes": state["tree"], "partial_peak_bytes": state["disk"],
           "store_bytes": _du(path), "info": store_info(path), "pieces_in_place": True,
           **({"plan_checked": True} if plan_checked else {})}
    (out / f"{tag}.json").write_text(json.dumps(rec, indent=1, default=float))
    return rec


def record(tag: str, source: str, model: str, out: Path, extra: tuple[str, ...], reuse: bool) -> dict:
    saved = out / f"{tag}.json"
    if reuse and saved.exists():
        return json.loads(saved.read_text())
    rec = measure(tag, source, model, out, extra)
    if not reuse:
        import shutil

        shutil.rmtree(out / f"{tag}.zarr", ignore_errors=True)
    return rec


# ------------------------------------------------------------------ the fit

def _x(rec: dict) -> tuple[float, float, float]:
    i = rec["info"]
    return float(i["nnz"]), float(i["n"]), float(i["n"]) * float(i["feature_dim"])


def _nnls(rows: list[tuple[float, ...]], y: list[float], cols: tuple[str, ...]) -> dict[str, float]:
    """Non-negative least squares of the relative error (each row divided by its measured value)."""
    from scipy.optimize import nnls

    a = np.array(rows, float)
    b = np.array(y, float)
    w = 1.0 / np.maximum(b, 1e-9)
    scale = np.maximum(np.abs(a).max(axis=0), 1e-30)  # columns of very different sizes: solve in unit columns
    coef, _ = nnls(a * w[:, None] / scale, b * w)
    return {c: float(v) for c, v in zip(cols, coef / scale)}


def fit_term(points: list[tuple[dict, float]], feature: float = 0.0) -> dict[str, float]:
    """``base + nnz`` fitted to (record, measured) points after ``feature`` bytes per feature value (R-MAT's
    vertices grow with its nonzeros, 26 to 28 a vertex: a term per vertex cannot be told apart from them);
    from fewer than 3 points, ``nnz`` alone (a line through the origin: two points would fix any line)."""
    cols = ("base", "nnz") if len(points) >= 3 else ("nnz",)
    rows = [(1.0, _x(r)[0])[-len(cols):] for r, _ in points]
    y = [v - feature * _x(r)[2] for r, v in points]
    return {**_nnls(rows, y, cols), "feature": feature}


def fit_joint(points: list[tuple[dict, float]]) -> dict[str, float]:
    """``base + nnz + feature`` fitted together (the write stage: it holds the node data whole and Â's blocks a
    rank at a time, so what a feature value costs there is not the two scale-18 builds' difference alone)."""
    return _nnls([(1.0, *_x(r)[::2]) for r, _ in points], [v for _, v in points], ("base", "nnz", "feature"))


def _peaks(rec: dict, stage: str) -> dict[str, float]:
    return {k: v * MIB for k, v in rec["info"]["peak_rss_mib_by_stage"].get(stage, {}).items()}


def _build_peak(rec: dict, stage: str) -> float:
    return max((v for k, v in _peaks(rec, stage).items() if not k.startswith("child")), default=0.0)


def _beside(rec: dict) -> float | None:
    """The build's process's peak while the partitioners ran (None: a record made before the store had it)."""
    during = rec["info"].get("peak_rss_mib_while_partitioning", {}).get("partition")
    return None if not during else max(v for k, v in during.items() if not k.startswith("child")) * MIB


def measured_held(rec: dict, stage: str) -> float:
    """The stage's memory of all processes at once: the sum of its peaks, or, in the partition stage with a
    record of the build beside the child, the larger of the build's peak and the build beside the child plus it."""
    peaks = _peaks(rec, stage)
    kids = [v for k, v in peaks.items() if k.startswith("child")]
    beside = _beside(rec) if stage == "partition" else None
    if not kids or beside is None:
        return sum(peaks.values())
    return max(_build_peak(rec, stage), beside + max(kids))


def _feature_cost(recs: dict[str, dict], stage: str, what=None) -> float:
    """Bytes per feature value in ``stage`` (or of ``what(record)``): the build at 512 features against the same
    graph at 64."""
    lo, hi = recs.get("rmat18-gp-p64"), recs.get("rmat18-gp-p64-f512")
    of = what or (lambda r: _build_peak(r, stage))
    if lo is None or hi is None or of(lo) is None or of(hi) is None:
        return 0.0
    return max(0.0, (of(hi) - of(lo)) / (_x(hi)[2] - _x(lo)[2]))


def _group(rec: dict) -> str:
    """The figures a build's partition stage gives: its model's, or ``hp-fast``'s (hp without METIS's start)."""
    extra = rec["extra"]
    if "--hp-preset" in extra:
        return f"{rec['model']}-{extra[extra.index('--hp-preset') + 1]}"
    return rec["model"]


def _regimes(model: str, recs: list[dict]) -> dict[str, list[dict]]:
    """gp's child in its two regimes: KaMinPar compresses the graph it loads from COMPRESS_EDGES entries on."""
    from shgcn.pipeline.models.gp import COMPRESS_EDGES
    from shgcn.pipeline.sources.counts import input_counts

    if model != "gp":
        return {model: recs}
    big = [r for r in recs if input_counts(r["source"]).graph_entries >= COMPRESS_EDGES]
    out = {"gp": [r for r in recs if r not in big]}
    return {**out, "gp-compressed": big} if big else out


def _child_at_build_eps(rec: dict) -> float:
    """The child's peak as if KaMinPar had partitioned for the build's eps: the plan's child term is that, times
    ``KAMINPAR_EPS_SHARE`` where KaMinPar runs leaner (``--kaminpar-eps``, or by default from COMPRESS_EDGES
    entries on), so a record of a lean run (its store says ``kaminpar_eps``) counts its child over the share."""
    from shgcn.pipeline.models.gp import KAMINPAR_EPS_SHARE

    peak = _peaks(rec, "partition")[f"child {rec['model']}"]
    lean = rec["info"].get("partitions", {}).get(rec["model"], {}).get("kaminpar_eps")
    return peak / KAMINPAR_EPS_SHARE if lean else peak


def fit(recs: dict[str, dict]) -> dict:
    """The coefficients (the JSON of ``pipeline/plan-this.json``)."""
    gp = [r for r in recs.values() if r["model"] == "gp"]
    groups: dict[str, list[dict]] = {}
    for r in recs.values():
        groups.setdefault(_group(r), []).append(r)
    memory, seconds = {}, {}
    for s in STAGES:
        if s == "partition":
            continue
        f = _feature_cost(recs, s)
        own = [r for r in recs.values() if s not in AFTER or _group(r) == "gp"]  # after the partition: hp's apart
        points = [(r, _build_peak(r, s)) for r in own]
        memory[s] = fit_joint(points) if s == "write" and f > 0 else fit_term(points, f)
        seconds[s] = fit_term([(r, r["info"]["timings"][s]) for r in recs.values() if "--features" not in r["extra"]])
    child, beside = {}, {}
    for g, rs in groups.items():
        memory[f"partition:{g}"] = fit_term([(r, _build_peak(r, "partition")) for r in rs], _feature_cost(recs, "partition"))
        for s in AFTER if g != "gp" else ():  # hp keeps Â's blocks in memory to the layout
            memory[f"{s}:{g}"] = fit_term([(r, _build_peak(r, s)) for r in rs], _feature_cost(recs, s))
        split = [(r, b) for r in rs if (b := _beside(r)) is not None]
        if split:  # the build's process while the child runs (the stores that record it)
            beside[g] = fit_term(split, _feature_cost(recs, "", _beside))
        for key, group in _regimes(g, rs).items():
            child[key] = fit_term([(r, _child_at_build_eps(r)) for r in group])
        seconds[f"partition:{g}"] = fit_term([(r, r["info"]["timings"]["partition"]) for r in rs
                                              if "--features" not in r["extra"]])
    stored = _feature_cost(recs, "", lambda r: r["store_bytes"])  # float32 features, each block's and the node array's
    disk = {"store": fit_term([(r, r["store_bytes"]) for r in recs.values()], stored),
            # the layout's pieces, where a build spilled them, counted (_pieces), not fitted
            "scratch": fit_term([(r, max(0.0, r["partial_peak_bytes"] - r["store_bytes"] - _pieces(r))) for r in gp])}
    return {"memory": memory, "child": child, "beside": beside, "disk": disk, "seconds": seconds,
            "source": f"{command()} on {len(recs)} builds ({', '.join(sorted(recs))}), "
                      f"{time.strftime('%Y-%m-%d', time.gmtime())}: bytes (memory, disk) and seconds per nonzero of Â, "
                      "per vertex and per feature value"}


# ------------------------------------------------------------------ the check

def _counts(rec: dict):
    """The build ``rec``'s measured counts (the fit's inputs, not the expected ones)."""
    from shgcn.pipeline.sources.counts import Counts

    i = rec["info"]
    return Counts(int(i["n"]), int(i["nnz"]), int(i["edges"]), int(i["feature_dim"]), int(i["classes"]),
                  bool(i["directed"]), "measured")


def _pieces(rec: dict) -> float:
    """The layout's pieces in the temporary area of the build ``rec``: a record of a build that spilled them
    there (``pieces_spilled``, from 2026-11 until the layout wrote them in place, ``pieces_in_place``), else 0.
    Counted, not fitted: Â's column ids (int32) and values (float32) and each row's count (int64), Â^T's too for
    a directed graph, and the node data (float32 features, an int32 label, three masks, the int64 original index)."""
    if not rec.get("pieces_spilled"):
        return 0.0
    c = _counts(rec)
    matrices = 2 if c.directed else 1
    return float(matrices * (8 * c.nnz + 8 * c.n) + c.n * (4 * c.features + 4 + 3 + 8))


def predicted(rec: dict, coef=None):
    """The plan of the build ``rec`` made from its measured counts (the fit's inputs, not the expected ones)."""
    from shgcn.pipeline.plan import make_plan

    c = _counts(rec)
    extra = rec["extra"]
    options = {dest: kind(extra[extra.index(flag) + 1]) for flag, dest, kind in
               (("--hp-preset", "hp_preset", str), ("--kaminpar-eps", "kaminpar_eps", float)) if flag in extra}
    return make_plan(c, (rec["model"],), options, coef=coef)


def compare(rec: dict, held_out=None) -> dict:
    """A row of the check: per stage, predicted against measured memory at once, and the peaks over stages;
    ``held_out``: the coefficients of a fit without this build (its at once too)."""
    plan = predicted(rec)
    row = {"run": rec["tag"], "nnz": f"{rec['info']['nnz']:,}"}
    worst = 0.0
    for s in STAGES:
        measured = measured_held(rec, s)
        pred = sum(r.memory for r in plan.held(s))
        row[s] = f"{pred / 2**30:.2f} / {measured / 2**30:.2f} ({pred / measured:.2f})"
        worst = max(worst, abs(pred / measured - 1))
    at_once, stage, _ = plan.at_once()
    measured = max(measured_held(rec, s) for s in STAGES)
    row["at once"] = f"{at_once / 2**30:.2f} / {measured / 2**30:.2f} ({at_once / measured:.2f})"
    if held_out is not None:
        loo = predicted(rec, held_out).at_once()[0]
        row["held out"] = f"{loo / 2**30:.2f} ({loo / measured:.2f})"
    tree = rec["tree_peak_bytes"]
    row["sampled tree"] = f"{tree / 2**30:.2f} GiB ({at_once / tree:.2f}); {tree / rec['info']['nnz']:.0f} B/nnz"
    row["disk"] = f"{plan.disk / 2**30:.2f} / {max(rec['partial_peak_bytes'], rec['store_bytes']) / 2**30:.2f}"
    row["time"] = f"{plan.seconds:.0f} / {sum(rec['info']['timings'].values()):.0f} s"
    row["worst stage"] = f"{worst:.0%}"
    return row


def _held_out(records: Path, tag: str):
    """The coefficients of a fit to the saved records of the fit's runs but ``tag`` (None: ``tag`` is not one)."""
    from shgcn.pipeline.plan import Coefficients

    files = {t: records / f"{t}.json" for t, *_ in FIT_RUNS if (records / f"{t}.json").exists()}
    if tag not in files:
        return None
    return Coefficients.of(fit({t: json.loads(f.read_text()) for t, f in files.items() if t != tag}))


def report(rows: list[dict]) -> str:
    cols = [(k, k) for k in ("run", "nnz", *STAGES, "at once", "held out", "sampled tree", "disk", "time",
                             "worst stage")]
    intro = ("Each stage cell: predicted / measured GiB of all processes at once and their ratio (the build's "
             "process; in the partition stage the larger of its peak and its peak while the partitioner's child ran "
             "plus the child's, where the store records it, else their sum). `at once`: the largest stage. "
             "`held out`: the at once of a fit without this build (predicted GiB, ratio). "
             "`sampled tree`: the largest sum of the resident memory of the build's process tree, sampled every "
             "0.25 s (a lower bound; the issue's measure), the plan's at once over it, and it per nonzero of Â. "
             "`disk`: predicted / measured GiB of the partial store at its peak. "
             "`time`: predicted / measured seconds of the stages (the machine's other jobs move it).")
    return intro + "\n\n" + table(rows, cols)


def one(scale: int, tag: str, records: Path, extra: tuple[str, ...], plan_checked: bool = False) -> None:
    """Build R-MAT ``scale`` gp p=64 with ``extra`` once and print its record's peaks and its row of the check
    (``plan_checked``: the build's own plan check on, as a user's build runs)."""
    rec = measure(tag, RMAT.format(scale), "gp", records, extra, plan_checked=plan_checked)
    i = rec["info"]
    print(f"{tag}: {i['nnz']:,} nonzeros; sampled tree {rec['tree_peak_bytes'] / 2**30:.2f} GiB "
          f"({rec['tree_peak_bytes'] / i['nnz']:.1f} B/nnz); {rec['wall']:.0f} s")
    print("peak MiB by stage:", json.dumps(i["peak_rss_mib_by_stage"]))
    print("beside the child:", json.dumps(i.get("peak_rss_mib_while_partitioning")))
    print(report([compare(rec)]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fit", action="store_true", help="run the fit's builds and write pipeline/plan-this.json")
    ap.add_argument("--scales", type=int, nargs="+", default=[20, 21, 22])
    ap.add_argument("--records", type=Path, default=REPO / "build" / "plan", help="where the builds' records go")
    ap.add_argument("--reuse", action="store_true", help="use the records already in --records (and keep the stores)")
    ap.add_argument("--only-saved", action="store_true",
                    help="--fit: on the records in --records only (build none; implies --reuse)")
    ap.add_argument("--output", type=Path, default=None, help="write the section to FILE instead of RESULTS.md")
    ap.add_argument("--one", type=int, metavar="SCALE", default=None,
                    help="build R-MAT SCALE gp p=64 once (its record: --records/TAG.json, the store kept) and print "
                         "its row of the check; RESULTS.md is not written")
    ap.add_argument("--tag", default=None, help="--one: the record's name (default rmatSCALE-gp-p64-one)")
    ap.add_argument("--build-args", default="", help="--one: more `pipeline build` options, as one string")
    ap.add_argument("--plan-checked", action="store_true", help="--one: the build's own plan check on, as a user's "
                    "build runs (its exact counts then stand in for the readers' coarse guard, which refuses R-MAT "
                    "25 on this machine)")
    args = ap.parse_args()
    if args.one is not None:
        one(args.one, args.tag or f"rmat{args.one}-gp-p64-one", args.records, tuple(shlex.split(args.build_args)),
            args.plan_checked)
        return
    if args.fit:
        from shgcn.pipeline.plan import coefficients_path

        runs = [r for r in FIT_RUNS if not args.only_saved or (args.records / f"{r[0]}.json").exists()]
        reuse = args.reuse or args.only_saved  # --only-saved builds nothing: without --reuse it re-measured every record
        recs = {t: record(t, src, m, args.records, extra, reuse) for t, src, m, extra in runs}
        coefficients_path().write_text(json.dumps(fit(recs), indent=2) + "\n")
        print(f"wrote {coefficients_path()}")
        return
    rows = [compare(record(f"rmat{s}-gp-p64", RMAT.format(s), "gp", args.records, (), args.reuse),
                    _held_out(args.records, f"rmat{s}-gp-p64")) for s in args.scales]
    rows.append(compare(record(*OTHER[:3], args.records, OTHER[3], args.reuse)))
    for tag in (t for t, _, m, _ in FIT_RUNS if m == "hp" and (args.records / f"{t}.json").exists()):  # hp: as fitted
        rows.append(compare(json.loads((args.records / f"{tag}.json").read_text()), _held_out(args.records, tag)))
    body = __doc__.split("\n\n", 2)[2] + "\n\n" + report(rows)
    if args.output is None:
        write_section(TITLE, body)
    else:
        args.output.write_text(header(TITLE) + "\n" + body)
        print(args.output.read_text())


if __name__ == "__main__":
    main()
