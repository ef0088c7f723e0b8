"""Mini-batch partitioning (shp) against gp and hp: expected held-out
mini-batch volume and partitioning time, for every sampler.

    python -m benchmarks.minibatch_partitioning.shp_bench [--graphs cora citeseer facebook ca-astroph soc-slashdot0902]
                                                          [--parts 2 4 16 64] [--samplers node edge rw] [--cache DIR]

For each graph and p, one real build (`pipeline build GRAPH --model rp,gp,hp`,
kept in --cache) gives gp, hp and hp's partitioning time. Then, per sampler,
shp runs exactly as the build runs it (`shgcn.pipeline.models.run.run`: a
child process, gp and hp as starts, the vertex weights the store's build
balanced, a time budget of ``--time-factor`` (2) times hp's time, the
refiner ``--refiner``: vcycles, shp's default), and
`metrics.batches.minibatch_dataset` (what the build stores) scores gp, hp and
shp on the same 200 held-out batches (HELDOUT stream, never used by shp).
B = 10% of n, theta = 0.1, delta = 0.5. Finished configurations are kept in
--cache/results.jsonl, so an interrupted run resumes.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.common import REPO, SHARED, build_store, table, write_section

TITLE = "Mini-batch partitioning: shp vs gp and hp, every sampler"
GRAPHS = ["cora", "citeseer", "facebook", "ca-astroph", "soc-slashdot0902"]


def base_store(cache: Path, graph: str, parts: int) -> Path:
    out = cache / f"{graph}-p{parts}.zarr"
    if not out.exists():
        build_store(graph, out, parts, "--model", "rp,gp,hp", "--data-dir", str(SHARED), "--features", "random:1",
                    "--labels", "random:2")
    return out


def run_one(path: Path, graph: str, parts: int, sampler: str, eval_batches: int, refiner: str = "vcycles",
            time_factor: float = 2.0) -> dict:
    from shgcn import store
    from shgcn.core.sample import Sampler
    from shgcn.pipeline.metrics import batches as batch_quality
    from shgcn.pipeline.models import Inputs, PartitionConfig, default_options
    from shgcn.pipeline.models.run import run
    from shgcn.pipeline.models.shp import SHPConfig
    from shgcn.pipeline.simulate import store_weights
    from shgcn.pipeline.stages.normalize import normalized_adjacency

    s = store.open_store(path)
    adj = s.graph()
    a = normalized_adjacency(adj, bool(s.attrs["directed"]))
    weights = store_weights(s, a)
    hp_s = float(s.quality()["seconds"].sel(model="hp"))
    starts = {m: s.partition(m) for m in ("gp", "hp")}
    options = {**default_options(), "sampler": sampler, "eval_batches": eval_batches, "shp_max_rounds": 6,
               "shp_time_factor": time_factor, "shp_refiner": refiner}
    pcfg = PartitionConfig(parts=parts, eps=float(s.attrs.get("eps", 0.03)), seed=0, options=options)  # the build's
    scfg = SHPConfig.of(pcfg, {"hp": hp_s})
    with tempfile.TemporaryDirectory() as tmp:
        # the weights the store's build balanced (gp's and hp's): shp keeps the same load bound
        res = run("shp", Inputs(a.shape[0], a, adj, starts, {"hp": hp_s}, weights=weights), pcfg, tmp)
    parts_by = {**starts, "shp": res.part}
    ds = batch_quality.minibatch_dataset(a, Sampler(adj, scfg.sampler_config(a.shape[0], 0)), parts_by, parts,
                                         eval_batches=eval_batches, theta=scfg.theta, delta=scfg.delta)
    per = {m: ds["heldout_volume"].sel(model=m).values.astype(float) for m in parts_by}
    best = min(("gp", "hp"), key=lambda m: per[m].mean())
    diff = per["shp"] - per[best]
    return {"graph": graph, "p": parts, "sampler": sampler, "refiner": refiner, "time_factor": time_factor,
            "n": int(a.shape[0]),
            **{m: [float(per[m].mean()), float(1.96 * per[m].std(ddof=1) / np.sqrt(per[m].size))] for m in per},
            "closed": {m: float(ds["expected_volume"].sel(model=m)) for m in parts_by},
            "imbalance": {m: float(_imbalance(p, weights, parts)) for m, p in parts_by.items()},
            "best": best, "diff": [float(diff.mean()), float(1.96 * diff.std(ddof=1) / np.sqrt(diff.size))],
            "shp_seconds": res.seconds, "hp_seconds": hp_s, "chosen": res.info.get("chosen", ""),
            "validation": res.info.get("validation", ""), "required_nets": res.info["required_nets"],
            "steps": [(" ".join([r["step"], r.get("model", "")]).strip(), r["validation_volume"], r["seconds"], r["kept"])
                      for r in res.info["rounds"]]}


def _imbalance(part: np.ndarray, weights: np.ndarray, parts: int) -> float:
    """max load / mean load - 1 under the store's vertex weights."""
    load = np.bincount(np.asarray(part), weights=weights, minlength=parts)
    return float(load.max() / load.mean() - 1)


def _budget(done: list[dict]) -> str:
    factors = sorted({r.get("time_factor", 2.0) for r in done})
    said = " or ".join("no limit" if f == 0 else f"{f:g} times hp's time" for f in factors)
    return f"a time budget of {said} (--shp-time-factor; it stops the Mt-KaHyPar steps where it ends)"


def _volume(v: float | None) -> str:
    return "stopped at the time budget" if v is None else f"{v:,.1f}"


def load(results: Path) -> dict:
    out = {}
    if results.exists():
        for line in results.read_text().splitlines():
            r = json.loads(line)
            out[r["graph"], r["p"], r["sampler"]] = r
    return out


def batch_counts(r: dict) -> tuple[int, str, str]:
    """(Hoeffding count in batches, batches sampled by shp's last round,
    batches it took to beat the better start on the validation objective)
    of one result; round k samples ``first * 2**k`` units (see
    :func:`shgcn.pipeline.models.shp.build.build_shp`)."""
    n, req = r["n"], r["required_nets"]
    batch = max(1, n // 10)
    unit = n if r["sampler"] == "node" else batch  # node: one net per column per unit (the columns construction)
    first = -(-req // unit)
    per_unit = unit / batch  # batches' worth of nets in one unit

    def batches(k: int) -> str:
        return f"{first * 2**k * per_unit:,.0f}"

    rounds = [int(name.split()[1]) for name, *_ in r["steps"] if name.startswith("round ")]
    sampled = batches(max(rounds)) if rounds else "0"
    low = min(v for name, v, *_ in r["steps"] if name.startswith("start"))
    below = [int(name.split()[1]) for name, v, *_ in r["steps"] if name.startswith("round ") and v is not None and v < low]
    needed = batches(below[0]) if below else (f"> {sampled}" if rounds else "no round run")
    return -(-req // batch), sampled, needed


def section(done: list[dict]) -> str:
    rows, steps = [], []
    for r in done:
        low = min(r["gp"][0], r["hp"][0])
        d, ci = r["diff"]
        rows.append({"graph": r["graph"], "p": r["p"], "sampler": r["sampler"],
                     **{m: f"{r[m][0]:,.1f} ± {r[m][1]:,.1f}" for m in ("gp", "hp", "shp")},
                     "shp / min": f"{r['shp'][0] / low:.3f}" if low else "",
                     "shp - min (paired)": f"{d:+,.1f} ± {ci:,.1f}",
                     "not worse": "yes" if d - ci <= 0 else "NO",
                     "chosen": r["chosen"], "shp s": f"{r['shp_seconds']:.1f}",
                     "shp / hp time": f"{r['shp_seconds'] / r['hp_seconds']:.2f}" if r["hp_seconds"] else "",
                     "imbalance gp / hp / shp": " / ".join(f"{r['imbalance'][m]:.3f}" for m in ("gp", "hp", "shp"))
                     if "imbalance" in r else ""})
        hoeff, sampled, needed = batch_counts(r)
        steps.append({"graph": r["graph"], "p": r["p"], "sampler": r["sampler"],
                      "Hoeffding nets": f"{r['required_nets']:,}", "Hoeffding batches": f"{hoeff:,}",
                      "batches sampled": sampled, "batches to beat min(gp, hp)": needed,
                      "validation": r["validation"],
                      "steps (validation volume, s, kept*)": "; ".join(
                          f"{name}: {_volume(v)} ({t:.1f} s){'*' if k else ''}" for name, v, t, k in r["steps"])})
    body = table(rows, [(k, k) for k in ("graph", "p", "sampler", "gp", "hp", "shp", "shp / min", "shp - min (paired)",
                                          "not worse", "chosen", "shp s", "shp / hp time",
                                          "imbalance gp / hp / shp")])
    body += ("\ngp, hp, shp: mean rows sent per mini-batch SpMM over 200 held-out batches (HELDOUT stream), 95% CI. "
             "shp - min: the paired difference to the better of gp and hp on the same batches, 95% CI; 'not worse': "
             "the interval reaches 0 or below. chosen: the step whose partition shp returned. shp s: its wall time "
             f"(child process, including scoring its starts), with {_budget(done)}. The machine is shared (2 cores): "
             "hp's time comes from the base build, shp's from its own run, "
             "each at the load of its moment.\n\nSteps of each shp run (validation objective: the closed form for the "
             "node sampler, else the mean over 200 batches of the VALIDATION stream; * = kept):\n\n")
    body += table(steps, [(k, k) for k in ("graph", "p", "sampler", "Hoeffding nets", "Hoeffding batches",
                                            "batches sampled", "batches to beat min(gp, hp)", "validation",
                                            "steps (validation volume, s, kept*)")])
    body += ("\nHoeffding batches: batches of B = 10% of n that hold the Hoeffding count of nets (a batch gives at "
             "most B nets). batches sampled: by shp's last sampling round (node sampler: the per-column nets, in "
             "batches' worth of nets). batches to beat min(gp, hp): the batches of the first sampling round whose "
             "partition (the sampled hypergraph refining shp's incumbent) has a validation objective below the better "
             "start's; the surrogate steps sample no batch (rw: its inclusion estimate uses BUILD walks).\n")
    return body


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--graphs", nargs="+", default=GRAPHS)
    ap.add_argument("--parts", type=int, nargs="+", default=[2, 4, 16, 64])
    ap.add_argument("--samplers", nargs="+", default=["node", "edge", "rw"])
    ap.add_argument("--eval-batches", type=int, default=200)
    ap.add_argument("--cache", default=str(REPO / "build" / "shp-bench"))
    ap.add_argument("--refiner", choices=["lp", "fast-vcycles", "vcycles"], default="vcycles",
                    help="shp's --shp-refiner (use a cache of its own for each)")
    ap.add_argument("--time-factor", type=float, default=2.0,
                    help="shp's --shp-time-factor: its time budget in hp's times (0: none)")
    ap.add_argument("--fresh", action="store_true", help="ignore finished configurations in the cache")
    ap.add_argument("--report-only", action="store_true",
                    help="run nothing: write the section from the finished configurations of the grid, naming the "
                         "missing ones")
    args = ap.parse_args()
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    results = cache / "results.jsonl"
    if args.fresh and results.exists():
        results.unlink()
    done = load(results)
    order = [(g, p, smp) for g in args.graphs for p in args.parts for smp in args.samplers]
    if args.report_only:
        missing = [k for k in order if k not in done]
        body = section([done[k] for k in order if k in done])
        body += ("\nThe configurations ran one by one (`python -m benchmarks.minibatch_partitioning.shp_bench --cache DIR "
                 "--graphs G --parts P --samplers S`, each kept in DIR/results.jsonl) and this section was written from them "
                 "with --report-only.\n")
        if missing:
            body += ("\nNot run (the grid was cut for time): " +
                     ", ".join(f"{g} p={p} {smp}" for g, p, smp in missing) + ".\n")
        write_section(TITLE, body)
        return
    for g in args.graphs:
        for p in args.parts:
            path = base_store(cache, g, p)
            for smp in args.samplers:
                if (g, p, smp) in done:
                    continue
                t0 = time.perf_counter()
                r = run_one(path, g, p, smp, args.eval_batches, args.refiner, args.time_factor)
                print(f"{g} p={p} {smp}: gp {r['gp'][0]:,.1f} hp {r['hp'][0]:,.1f} shp {r['shp'][0]:,.1f} "
                      f"({r['chosen']}, {time.perf_counter() - t0:.0f} s)", flush=True)
                with results.open("a") as f:
                    f.write(json.dumps(r) + "\n")
                done[g, p, smp] = r
    write_section(TITLE, section([done[k] for k in order]))


if __name__ == "__main__":
    main()
