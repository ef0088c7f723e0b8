"""A billion nonzeros on one machine (issue 59): R-MAT 26 built, then trained in mini-batches out of core, with
every process's memory at once, the disk at its peak and the gap to the issue's targets.

    python -m benchmarks.build.billion [--scale 26] [--plan-scales 25] [--train-scale 24] [--compare-scale 22]
        [--steps 20] [--ranks 2] [--batch-size 8192] [--dir DIR] [--plan-only] [--reuse] [--gp-records FILE ...]

1. ``pipeline build rmat:scale=S,edge_factor=16,seed=1 --model gp --parts 64 --plan`` on this machine: the plan's
   memory at once, disk, time and verdict (and the same plan at each of ``--plan-scales``). When it fits, the
   build itself, its own plan check on as a user's runs, measured as ``benchmarks.build.plan_check`` measures
   (the process tree's resident memory sampled every 0.25 s, the partial store's disk), then removed.
2. The same graph ``--parts 2 --model rp``: plan; the build when it fits, kept.
3. ``mpirun -n 2 shgcn-train STORE --mode minibatch --out-of-core --batch-size 8192``, ``--steps`` steps, on that
   store and on R-MAT ``--compare-scale``'s 2-part store (each rank's RssAnon: within 1.2x of it).
4. One full epoch of mini-batches out of core on R-MAT ``--train-scale``'s 2-part store.

``--gp-records``: records of gp p = 64 builds made by ``benchmarks.build.plan_check --one S --plan-checked`` (the
same measurement; ``benchmarks/records`` keeps them): the row of scale S is that record, not built again (at
``--scale``) or planned only (at ``--plan-scales``). A build its plan refuses is not run (it would not finish on
this machine): its row says so, with the plan's figures, which is the measured gap's best estimate. The 2-part
stores are kept in ``--dir`` and reused. The trainer's numba kernels are compiled once, by a one-step run on the
compare store with an empty cache in ``--dir`` (the compiler's memory stays in a rank that compiles: the first run
after an install holds more), and every measured run loads them.
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

from benchmarks.build.plan_check import RMAT, measure
from benchmarks.common import bench_env, build_store, store_info, table, write_section
from benchmarks.training.outofcore_minibatch import compile_kernels, kernel_cache, losses, rows_from, train
from shgcn.core.memory import gib

TITLE = "A billion nonzeros on one machine: R-MAT 26 built and trained out of core (issue 59)"
GIB = 2**30
TARGETS = {"gp-memory": 20 * GIB, "gp-disk": 48 * GIB, "gp-seconds": 75 * 60, "gp25-memory": 10 * GIB,
           "anon": 2 * GIB, "anon-ratio": 1.2}
_SIZE = re.compile(r"([\d.,]+) (KiB|MiB|GiB|TiB)")
_UNIT = {"KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}


def size(text: str) -> float:
    """Bytes of the first ``1.5 GiB``-style size in ``text``."""
    m = _SIZE.search(text)
    if m is None:
        raise ValueError(f"no size in {text!r}")
    return float(m.group(1).replace(",", "")) * _UNIT[m.group(2)]


def parse_plan(text: str) -> dict:
    """The plan's ``at once``, ``disk`` (the total after the colon), ``time`` and ``verdict`` lines, from
    ``pipeline build ... --plan``'s table."""
    lines = {ln.split()[0]: ln for ln in text.splitlines() if ln.strip()}
    disk = lines["disk"].rsplit(":", 1)[1]
    seconds = re.search(r"about ([\d,]+) s", lines["time"])
    verdict = lines["verdict"].split(None, 1)[1]
    return {"memory": size(lines["at"]), "where": lines["at"].split(" in stage ", 1)[1].split(";")[0],
            "disk": size(disk), "seconds": float(seconds.group(1).replace(",", "")) if seconds else float("nan"),
            "fits": verdict.startswith("fits"), "verdict": verdict}


def plan(scale: int, model: str, parts: int, where: Path) -> dict:
    """This machine's plan of R-MAT ``scale`` with ``model`` and ``parts`` (the build's own ``--plan``)."""
    cmd = [sys.executable, "-m", "shgcn.pipeline", "build", RMAT.format(scale), "--model", model, "--parts",
           str(parts), "--out", str(where / f"plan-{scale}.zarr"), "--plan"]
    res = subprocess.run(cmd, capture_output=True, text=True, env=bench_env(), timeout=600)
    if "verdict" not in res.stdout:
        raise SystemExit(f"the plan failed ({res.returncode}): {' '.join(cmd)}\n{res.stderr[-2000:]}")
    return parse_plan(res.stdout)


def gp_records(paths: list[Path]) -> dict[int, tuple[dict, Path]]:
    """Each ``--gp-records`` file's record, by its R-MAT scale (one line, exit, on a file that is not one)."""
    out = {}
    for path in paths:
        try:
            rec = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            raise SystemExit(f"--gp-records: {path}: {e}") from None
        m = re.fullmatch(r"rmat:scale=(\d+),edge_factor=16,seed=1", str(rec.get("source", "")))
        if m is None or rec.get("model") != "gp" or rec.get("parts") != 64 or "tree_peak_bytes" not in rec:
            raise SystemExit(f"--gp-records: {path}: not the record of an R-MAT gp p = 64 build "
                             "(python -m benchmarks.build.plan_check --one S --plan-checked makes one)")
        out[int(m[1])] = (rec, path)
    return out


def build_row(scale: int, model: str, parts: int, args, keep: bool) -> tuple[dict, Path | None]:
    """The plan of a build and, when it fits, the build measured (or its ``--gp-records`` record); the row, and
    the store when kept."""
    tag = f"rmat{scale}-{model}-p{parts}"
    p = plan(scale, model, parts, args.dir)
    row = {"build": f"R-MAT {scale}, {model}, p = {parts}", "plan at once": gib(p["memory"]), "stage": p["where"],
           "plan disk": gib(p["disk"]), "plan time": f"{p['seconds']:,.0f} s", "verdict": p["verdict"].split(":")[0]}
    saved, store = args.dir / f"{tag}.json", args.dir / f"{tag}.zarr"  # rp's is two_part_store's name
    reuse = keep and args.reuse and saved.exists() and store.exists()  # its plan's disk counts the store again
    given = args.gp_records.get(scale) if model == "gp" and parts == 64 else None
    if given is None and not reuse and (not p["fits"] or args.plan_only):
        row["measured at once"] = "not run: " + ("its plan refuses it" if not p["fits"] else "--plan-only")
        return {**row, "_plan": p}, None
    if given is not None:  # measured as measure() measures, by plan_check --one
        rec = given[0]
        row["build"] += f" (the record {given[1].name}: {rec['info'].get('command', '?').split(' --out')[0]})"
    elif reuse:  # the kept store's own record, from its build
        rec = json.loads(saved.read_text())
        built = datetime.datetime.fromtimestamp(saved.stat().st_mtime, datetime.UTC)
        row["build"] += f" (reused: built {built:%Y-%m-%d %H:%M} UTC; its plan's free disk is less the kept store)"
    else:
        rec = measure(tag, RMAT.format(scale), model, args.dir, (), parts, plan_checked=True)
    nnz = int(rec["info"]["nnz"])
    row.update({"nnz": f"{nnz:,}", "measured at once": gib(rec["tree_peak_bytes"]),
                "B/nnz": f"{rec['tree_peak_bytes'] / nnz:.1f}",
                "disk peak": gib(rec["partial_peak_bytes"]), "store": gib(rec["store_bytes"]),
                "wall": f"{rec['wall']:,.0f} s", "_plan": p, "_rec": rec})
    if keep:
        return row, store
    shutil.rmtree(store, ignore_errors=True)
    return row, None


def two_part_store(scale: int, args) -> Path:
    """R-MAT ``scale``'s 2-part rp store in ``--dir`` (built when absent, as outofcore_minibatch builds it)."""
    store = args.dir / f"rmat{scale}-rp-p{args.ranks}.zarr"
    if not store.exists():
        t0 = time.perf_counter()
        build_store(RMAT.format(scale), store, args.ranks, "--model", "rp")
        print(f"built {store} in {time.perf_counter() - t0:.0f} s", flush=True)
    return store


def train_rows(label: str, store: Path, args, steps: int) -> list[dict]:
    """Per-rank rows of ``steps`` mini-batch steps out of core (0: one full epoch) on ``store``."""
    run = SimpleNamespace(ranks=args.ranks, batch_size=args.batch_size, steps=steps, epochs=1, sampler="node",
                          timeout=args.timeout)
    log = args.dir / f"{store.stem}-billion-{steps}.jsonl"
    wall = train(store, run, log, True, args.env)
    rows = rows_from(log, label, int(store_info(store)["nnz"]), wall)
    step = losses(log)  # one epoch: its mean loss is first and last alike, so the steps' own are shown
    first, last = sum(step[:10]) / len(step[:10]), sum(step[-10:]) / len(step[-10:])
    for r in rows:
        r.update({"steps": steps or f"one epoch ({len(step):,})", "loss": f"{first:.4f} -> {last:.4f}",
                  "_losses": (first, last)})
    print(rows, flush=True)
    return rows


def gap(name: str, value: float | None, target: float, unit: str = "GiB") -> dict:
    """A row of the targets' table: the issue's target, the value (measured, or the plan's), and the gap."""
    if value is None:
        return {"target": name, "goal": _fmt(target, unit), "value": "not measured", "gap": ""}
    ratio = value / target
    return {"target": name, "goal": _fmt(target, unit), "value": _fmt(value, unit),
            "gap": "met" if ratio <= 1 else f"{ratio:.2f}x the target"}


def _fmt(v: float, unit: str) -> str:
    return {"GiB": lambda: gib(v), "s": lambda: f"{v / 60:,.0f} min", "x": lambda: f"{v:.2f}x"}[unit]()


def targets(gp: dict, gp25: dict | None, big: list[dict], small: list[dict]) -> list[dict]:
    """The issue's numbers against what was measured or, where the build was refused, planned."""
    rec, p = gp.get("_rec"), gp["_plan"]
    how = "measured" if rec else "planned"
    rows = [gap(f"R-MAT 26 gp p64 memory at once ({how})", rec["tree_peak_bytes"] if rec else p["memory"],
                TARGETS["gp-memory"]),
            gap(f"R-MAT 26 gp p64 disk at its peak ({how})", rec["partial_peak_bytes"] if rec else p["disk"],
                TARGETS["gp-disk"]),
            gap(f"R-MAT 26 gp p64 time ({how})", rec["wall"] if rec else p["seconds"], TARGETS["gp-seconds"], "s")]
    if gp25 is not None:
        measured = gp25.get("_rec")
        rows.append(gap(f"R-MAT 25 gp p64 memory at once ({'measured' if measured else 'planned'})",
                        measured["tree_peak_bytes"] if measured else gp25["_plan"]["memory"], TARGETS["gp25-memory"]))
    anon = max((r["_anon"] for r in big), default=None)
    rows.append(gap("RssAnon a rank, R-MAT 26 2-part store", anon, TARGETS["anon"]))
    base = max((r["_anon"] for r in small), default=None)
    rows.append(gap("RssAnon against R-MAT 22's", anon / base if anon and base else None, TARGETS["anon-ratio"], "x"))
    return rows


def notes(gp: dict, rp: dict, big: list[dict], cold: list[int], scale: int) -> str:
    """What the rows say, in words: why a build was not run, whether the losses fell, and what the run that
    compiled the trainer's kernels held (``cold``: its ranks' RssAnon)."""
    out = [f"The trainer's numba kernels were compiled by a first run, one step on R-MAT {scale}'s store with the "
           f"cache (in DIR) empty; its ranks held {' / '.join(gib(a) for a in cold)}, the compiler's memory "
           "included. Every training run above loaded them from that cache."]
    for row in (gp, rp):
        if "_rec" not in row:
            out.append(f"{row['build']}: not built; its plan on this machine: {row['_plan']['verdict']}.")
    if big:
        first, last = big[0]["_losses"]
        out.append(f"The 2-part R-MAT 26 store's loss: {first:.4f} over the first 10 steps, {last:.4f} over the last 10 "
                   f"({'falls' if last < first else 'does not fall'}).")
    return "\n\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=int, default=26)
    ap.add_argument("--plan-scales", type=int, nargs="*", default=[25], help="gp p64 planned only, at these scales")
    ap.add_argument("--train-scale", type=int, default=24, help="one full epoch out of core on this scale's store")
    ap.add_argument("--compare-scale", type=int, default=22, help="RssAnon against this scale's 2-part store")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=8192)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/shgcn-billion"))
    ap.add_argument("--plan-only", action="store_true", help="the plans and the training, no R-MAT --scale build")
    ap.add_argument("--reuse", action="store_true", help="the kept 2-part store of R-MAT --scale and its build's "
                    "record in --dir, when both are there, instead of building it again (the row says when it was)")
    ap.add_argument("--timeout", type=float, default=4 * 3600.0, help="seconds a training run may take")
    ap.add_argument("--gp-records", type=Path, nargs="*", default=[], help="plan_check --one records of gp p = 64 "
                    "builds: their rows instead of building (--scale) or planning only (--plan-scales)")
    args = ap.parse_args()
    args.gp_records = gp_records(args.gp_records)
    args.dir.mkdir(parents=True, exist_ok=True)
    gp, _ = build_row(args.scale, "gp", 64, args, keep=False)
    extra = [build_row(s, "gp", 64, SimpleNamespace(**{**vars(args), "plan_only": True}), keep=False)[0]
             for s in args.plan_scales]
    rp, store = build_row(args.scale, "rp", args.ranks, args, keep=True)
    args.env = kernel_cache(args.dir / "numba-cache")
    small_store = two_part_store(args.compare_scale, args)
    cold = compile_kernels(small_store, SimpleNamespace(**vars(args), sampler="node"), args.dir / "compile.jsonl",
                           args.env)
    big = train_rows(f"R-MAT {args.scale}", store, args, args.steps) if store else []
    small = train_rows(f"R-MAT {args.compare_scale}", small_store, args, args.steps)
    epoch = train_rows(f"R-MAT {args.train_scale}", two_part_store(args.train_scale, args), args, 0)
    bcols = [(k, k) for k in ("build", "plan at once", "stage", "plan disk", "plan time", "verdict", "nnz",
                              "measured at once", "B/nnz", "disk peak", "store", "wall")]
    tcols = [(k, k) for k in ("store", "nnz", "steps", "rank", "RssAnon", "modelled", "VmHWM", "step ms", "setup s")]
    tcols.append(("loss", "loss (mean of the first 10 steps -> of the last 10)"))
    gp25 = next((r for r in extra if r["build"].startswith("R-MAT 25")), None)
    goals = table(targets(gp, gp25, big, small), [(k, k) for k in ("target", "goal", "value", "gap")])
    body = (__doc__.split("\n\n", 2)[2] + "\n\n**Builds** (plans on this machine: its memory and the free disk of "
            f"`--dir`):\n\n{table([gp, *extra, rp], bcols)}\n**Training**, `mpirun -n {args.ranks}`, `--sampler node`, "
            f"`--batch-size {args.batch_size}`, out of core:\n\n{table(big + small + epoch, tcols)}\n"
            f"**The issue's numbers**:\n\n{goals}\n{notes(gp, rp, big, cold, args.compare_scale)}\n")
    write_section(TITLE, body, {str(args.dir): "DIR"})  # RESULTS names no machine path


if __name__ == "__main__":
    main()
