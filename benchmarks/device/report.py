"""``python -m benchmarks.device report FILES``: the JSONs a device run returned (OUT/run.json, gpu.json, cpu.json,
calibration.json) into sections of benchmarks/RESULTS.md, each with the command, date, machine and versions the
run recorded, and the figures the documentation quotes (the blocks between ``<!-- device-run:NAME -->`` and
``<!-- /device-run:NAME -->`` in docs/gpus.md and docs/threads.md) rewritten from them.

Each figure is set beside the issue's target (torch on CUDA over PyG at most 1.0 per architecture, CUDA's losses
within 1e-5 of numpy's, T = 16 at most 1/6 of T = 1's epoch for GCN and GIN, the threads model within 25%, the
whole run within 8 minutes, the prepared folder within 60 MiB): measured, never assumed. A dry run's JSONs are
written only where ``--results`` and ``--docs`` say (the repository's own files hold real runs), or printed
(``--print``). A file that is missing or not a part's JSON stops the report with one line (exit 2).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.common import REPO, RESULTS, table
from benchmarks.common.results import Document, question_of, slug

log = logging.getLogger("benchmarks.device.report")

GPU_TITLE = "The device run: the trainer on one GPU against PyG (issue 60)"
CPU_TITLE = "The device run: threads on the GPU machine's cores (issue 60)"
CAL_TITLE = "The device run: the network calibration (issue 60)"
ARCHS = ("gcn", "sage", "gin", "gat")
LOSS_TARGET = 1e-5
RATIO_TARGET = 1.0
SPEEDUP_TARGET = 6.0  # T = 16 at most 1/6 of T = 1
MODEL_TARGET = 0.25
RUN_TARGET_S = 480.0
FOLDER_TARGET_MIB = 60.0
PREPARE = "python -m benchmarks.device prepare .device"
LAUNCH = "bash .device/run.sh"
REPORT = "python -m benchmarks.device report OUT/*.json"


class ReportError(Exception):
    """What stops a report: one line, exit 2."""


def load(files: list[Path]) -> dict[str, dict]:
    """The parts' JSONs by part name; a JSON object without ``part`` (compute-node.json, gpu-profile.json) is left
    out."""
    parts: dict[str, dict] = {}
    for f in files:
        try:
            doc = json.loads(f.read_text())
        except OSError as e:
            raise ReportError(f"{f}: cannot read it ({e.strerror or e})") from None
        except ValueError as e:
            raise ReportError(f"{f}: not JSON ({e})") from None
        if not isinstance(doc, dict):
            raise ReportError(f"{f}: not a device run's JSON (an object with 'part')")
        if "part" not in doc and f.name == "calibration.json":  # the benchmark's own file, not wrapped by the driver
            doc = {**doc, "part": "calibration"}
        if "part" not in doc:
            log.info("%s: no 'part', left out", f)
            continue
        if doc["part"] not in ("run", "gpu", "cpu", "calibration"):
            raise ReportError(f"{f}: part {doc['part']!r} is none of run, gpu, cpu, calibration")
        if doc["part"] in parts:
            raise ReportError(f"{f}: a second {doc['part']} part (give one run's files)")
        parts[doc["part"]] = doc
    if not set(parts) - {"run"}:
        raise ReportError("no gpu.json, cpu.json or calibration.json among the files")
    dry = {bool(d["dry_run"]) for d in parts.values() if "dry_run" in d}
    if len(dry) > 1:
        raise ReportError("the files mix a dry run's and a real run's JSONs")
    return parts


# ------------------------------------------------------------------ formatting

def f_ms(x: float | None) -> str:
    return f"{x:.2f}" if isinstance(x, int | float) else "-"


def verdict(ok: bool | None) -> str:
    return "-" if ok is None else ("met" if ok else "**not met**")


def cores_text(cpus: list[int]) -> str:
    """0-3,8 for [0, 1, 2, 3, 8]."""
    out: list[str] = []
    run: list[int] = []
    for c in sorted(cpus):
        if run and c == run[-1] + 1:
            run.append(c)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [c]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ",".join(out)


def launcher_text(words: list[str]) -> str:
    """The launcher as a command names it: its program's name, not the machine's path to it."""
    return " ".join([Path(words[0]).name, *words[1:]]) if words else "-"


def head(title: str, doc: dict, run: dict | None, extra: str = "") -> str:
    m = doc.get("machine", {})
    gpu = doc.get("gpu") or (run or {}).get("gpu") or {}
    card = f"; GPU {gpu.get('gpu')} ({gpu.get('gpu_memory_gib')} GiB, CUDA {gpu.get('cuda_version')})" \
        if gpu.get("cuda") else ""
    dry = "; a dry run: tiny stores, torch's CPU device standing in for CUDA" if doc.get("dry_run") else ""
    flag = " --dry-run" if doc.get("dry_run") else ""
    lines = [f"## {title}", "",
             f"- command: `{LAUNCH}{flag}`",
             f"  (on the GPU machine, one call of the run tool with carry [\".device\"]; prepared by `{PREPARE}{flag}`, "
             f"reported by `{REPORT}`){dry}",
             f"- date: {doc.get('date', '-')}",
             f"- machine: {m.get('cpu', '?')}, {m.get('cores', '?')} cores in the affinity ({m.get('cpu_count', '?')} "
             f"in all), {m.get('memory_gib', '?')} GiB, {m.get('os', '?')}{card}",
             f"- versions: {doc.get('versions') or (run or {}).get('versions', '-')}; shgcn rev "
             f"{m.get('shgcn_rev') or 'unknown'}"]
    if run:
        lines.append(f"- {run_line(run)}")
    if extra:
        lines.append(extra)
    return "\n".join(lines) + "\n"


def run_line(run: dict) -> str:
    sec, mib = run.get("seconds"), (run.get("prepared", {}).get("bytes", {}).get("total") or 0) / 2**20
    parts = ", ".join(f"{p['part']} {p.get('seconds', 0):.0f} s of {p.get('budget_s', 0)}"
                      + (f" (exit {p['rc']})" if p.get("rc") else "") if "skipped" not in p else f"{p['part']} skipped"
                      for p in run.get("parts", []))
    return (f"run: one call, {sec if sec is not None else '?'} s of a {run.get('budget_s', '?'):.0f} s budget "
            f"(target: within {RUN_TARGET_S:.0f} s: {verdict(sec <= RUN_TARGET_S if sec is not None else None)}); "
            f"parts: {parts or '-'}; the prepared folder {mib:.1f} MiB (target: at most {FOLDER_TARGET_MIB:.0f} MiB: "
            f"{verdict(mib <= FOLDER_TARGET_MIB if mib else None)})")


# ------------------------------------------------------------------ the GPU part

def gpu_body(doc: dict) -> str:
    if doc.get("skipped"):
        return f"Not measured: {doc['skipped']}.\n"
    dev, runs = doc.get("device", "cuda"), doc.get("runs", {})
    ratios, losses = doc.get("ratios", {}), doc.get("losses", {})

    def ms(key: str) -> float | None:
        return (runs.get(key) or {}).get("ms")

    rows = []
    for a in ARCHS:
        r, lo = ratios.get(a), losses.get(a) or {}
        first = ((runs.get(f"{a} torch {dev}") or {}).get("extra") or {}).get("first_epoch")
        rows.append({"arch": a, "ours": f_ms(ms(f"{a} torch {dev}")), "pyg": f_ms(ms(f"{a} pyg {dev}")),
                     "ratio": f"{r:.2f} ({verdict(r <= RATIO_TARGET)})" if r is not None else "-",
                     "first": f"{first:.1f}" if first is not None else "-", "numpy": f_ms(ms(f"{a} numpy cpu")),
                     "loss": (f"{lo['max_abs']:.1e} over {lo['epochs']} epochs ({verdict(lo['max_abs'] <= LOSS_TARGET)})"
                              if lo else "-"),
                     "bytes": ("equal" if lo.get("bytes_equal") else "differ") if lo else "-"})
    out = [f"### Epoch ms on {dev} (median after the warm-up epochs; the first epoch apart)\n",
           table(rows, [("arch", "arch"), ("ours", f"torch {dev} ms"), ("pyg", f"PyG ({dev}) ms"),
                        ("ratio", f"torch / PyG (target at most {RATIO_TARGET:g})"),
                        ("first", "first epoch s (compile, start)"), ("numpy", "numpy, all cores ms"),
                        ("loss", f"losses: largest difference to numpy's (target {LOSS_TARGET:g})"),
                        ("bytes", "bytes vs numpy")])]
    csr, gcn, pyg_gcn = ms(f"gcn csr {dev}"), ms(f"gcn torch {dev}"), ms(f"gcn pyg {dev}")
    if csr:
        ours_x = f"{gcn / csr:.2f}" if gcn else "-"
        pyg_x = f"{pyg_gcn / csr:.2f}" if pyg_gcn else "-"
        out.append(f"\nThe floor, a torch.sparse CSR GCN: {csr:.2f} ms (GCN's torch {dev} / CSR: {ours_x}; "
                   f"PyG's GCN / CSR: {pyg_x}).\n")
    two = doc.get("two_ranks") or {}
    if two:
        rows = []
        for name, v in two.items():
            if v:
                same_bytes = ("equal" if v["bytes_equal"] else "differ") if "numpy" in name else "-"
                rows.append({"pair": name, "loss": f"{v['max_abs']:.1e} over {v['epochs']} epochs", "bytes": same_bytes})
            else:
                rows.append({"pair": name, "loss": "-", "bytes": "-"})
        p2_torch, p2_numpy = f_ms(ms(f"P=2 torch {dev}")), f_ms(ms("P=2 numpy cpu"))
        out += ["\n### Two ranks on the one device (GCN, the 2-part store)\n",
                f"P = 2 torch {dev}: {p2_torch} ms, P = 2 numpy: {p2_numpy} ms.\n",
                table(rows, [("pair", "runs"), ("loss", "largest loss difference"), ("bytes", "bytes per epoch")])]
    td = doc.get("torchdist")
    if td:
        ratio = f"{td['ratio']:.2f}" if td.get("ratio") else "-"
        err = "; " + td["error"] if td.get("error") else ""
        out.append(f"\n### torchdist ({td.get('backend') or '?'}) with PyG's GCNConv against PyG alone\n\n"
                   f"{f_ms(td.get('ms'))} ms against {f_ms(td.get('pyg_ms'))} ms: {ratio}{err}.\n")
    prof = doc.get("profile")
    if prof:
        out.append(f"\n### A step of the slowest architecture against PyG: {prof.get('arch')} "
                   f"({prof.get('ratio', 0):.2f}x PyG)\n")
        if prof.get("skipped") or prof.get("error"):
            out.append(f"\nNot profiled: {prof.get('skipped') or prof.get('error')}.\n")
        else:
            per = prof.get("per_step", {})
            out.append(f"\nPer step (epochs {prof.get('warmup')} to {prof.get('warmup', 0) + prof.get('active', 0) - 1}): "
                       f"{per.get('kernel_launches', 0):.0f} kernel launches, {per.get('host_syncs', 0):.0f} host "
                       f"synchronizations, {per.get('async_copies', 0):.0f} asynchronous copies, "
                       f"{per.get('aten_ops', 0):.0f} aten operators.\n")
            calls = prof.get("calls_per_step") or {}
            if calls:
                out.append("\n" + table([{"call": k, "n": f"{v:g}"} for k, v in calls.items()],
                                         [("call", "runtime call"), ("n", "per step")]))
            top = prof.get("top") or []
            if top:
                out.append("\n" + table([{"op": t["name"], "n": f"{t['calls_per_step']:g}",
                                          "us": f"{t['us_per_step']:.0f}"} for t in top[:8]],
                                        [("op", "operator"), ("n", "calls per step"),
                                         ("us", f"{'device' if prof.get('device') == 'cuda' else 'host'} us per step")]))
    g = doc.get("graph") or {}
    sz = doc.get("sizes") or {}
    out.append(f"\nStore: R-MAT scale {sz.get('scale')}, n = {g.get('n', 0):,}, Â's nonzeros {g.get('nnz', 0):,}, "
               f"{g.get('features')} float16 features, {g.get('classes')} classes; hidden {sz.get('hidden')}, "
               f"{sz.get('gpu_epochs')} epochs on the device (GAT {sz.get('gat_epochs')}, 4 heads of hidden / 4), "
               f"{sz.get('cpu_epochs')} for numpy; medians of epochs {sz.get('skip')} to the end. Every run once, "
               f"in the order of benchmarks/device/gpu.py; {doc.get('seconds', 0):.0f} s of the part's "
               f"{doc.get('budget_s', 0):.0f}{'' if doc.get('complete') else ' (cut short)'}.\n")
    failed = [f"- {k}: {v['error']}" for k, v in runs.items() if v.get("error")]
    if failed:
        out.append("\nRuns without a figure:\n\n" + "\n".join(failed) + "\n")
    return "\n".join(out)


# ------------------------------------------------------------------ the CPU part

def cpu_body(doc: dict) -> str:
    from benchmarks.training.threads_sweep import KERNELS, render

    med = {(r["arch"], r["mode"], r["ranks"], r["threads"]): {k: r[k] for k in ("epoch", *KERNELS, "cpu_wall")}
           for r in doc.get("runs", []) if "epoch" in r}
    out = [render(med) if med else "No run gave a figure.\n"]
    speed = doc.get("speedup_t_max") or {}
    tmax = max(doc.get("threads") or [1])
    if speed:
        rows = [{"run": k, "x": f"{v:.2f}",
                 "t": verdict(v >= SPEEDUP_TARGET) if k.split()[0] in ("gcn", "gin") and k.endswith("full") else ""}
                for k, v in speed.items()]
        out += [f"\n### T = {tmax} against T = 1 (one rank)\n",
                table(rows, [("run", "arch, mode"), ("x", f"epoch at T = 1 / at T = {tmax}"),
                             ("t", f"target: at least {SPEEDUP_TARGET:g} for GCN and GIN, full batch")])]
    ranks = doc.get("ranks") or {}
    if ranks:
        rows = []
        for split, got in ranks.items():
            if isinstance(got, str):
                rows.append({"split": split, "rank": "-", "aff": got, "numba": "-"})
                continue
            groups: dict[tuple[str, object], list[int]] = {}  # ranks with the same affinity and threads: one row
            for r in got:
                groups.setdefault((cores_text(r.get("affinity", [])), r.get("numba_threads")), []).append(r.get("rank", -1))
            for (aff, numba), ids in groups.items():
                rows.append({"split": split, "rank": cores_text(ids), "aff": aff, "numba": numba})
        out += ["\n### Each rank's CPU affinity and numba's threads, started as the runs are\n",
                table(rows, [("split", "P x T"), ("rank", "ranks"), ("aff", "os.sched_getaffinity"),
                             ("numba", "numba.get_num_threads()")])]
    fit = doc.get("fit")
    if fit and fit.get("speedup"):
        out += ["\n### The threads model's fit (written to compute-node.json)\n", "```json",
                json.dumps(fit["speedup"]), "```"]
    model = doc.get("model")
    if model and model.get("rows"):
        rows = [{"arch": r["arch"], "mode": r["mode"], "t": r["threads"], "m": f"{1e3 * r['measured']:.1f}",
                 "p": f"{1e3 * r['predicted']:.1f}", "e": f"{100 * r['error']:+.0f}%"} for r in model["rows"]]
        worst = model.get("max_abs_error")
        out += [f"\n### The fitted threads model against the runs (target: within {100 * MODEL_TARGET:.0f}%: "
                f"{verdict(worst <= MODEL_TARGET if worst is not None else None)}, largest "
                f"{100 * (worst or 0):.0f}%)\n",
                table(rows, [("arch", "arch"), ("mode", "mode"), ("t", "T"), ("m", "measured ms"),
                             ("p", "predicted ms"), ("e", "error")])]
    sz = doc.get("sizes") or {}
    skipped = [r for r in doc.get("runs", []) if "error" in r]
    listed = "; ".join(f"{r['arch']} {r['mode']} {r['ranks']}x{r['threads']}: {r['error']}" for r in skipped[:6])
    splits = ", ".join(f"{p} x {t}" for p, t in doc.get("splits", []))
    out.append(f"\nThe numpy backend (benchmarks/training/threads_sweep.py's runs), R-MAT scale {sz.get('scale')}, "
               f"hidden {sz.get('hidden')}, {sz.get('sweep_epochs')} epochs a run (medians after the first two); "
               f"T = {', '.join(map(str, doc.get('threads', [])))} in one rank and P x T = {splits or '-'}; launcher "
               f"`{launcher_text(doc.get('launcher', []))}`. The model: each one-rank run at T predicted from its T = 1 "
               "run's kernel times divided by the fitted speedups (gemm: dense, spmm, elementwise and attention: "
               f"elem), the rest of the epoch as at T = 1. {doc.get('seconds', 0):.0f} s of the part's "
               f"{doc.get('budget_s', 0):.0f}{'' if doc.get('complete') else ' (cut short)'}; {len(skipped)} runs "
               f"without a figure{': ' + listed if listed else ''}{' ...' if len(skipped) > 6 else ''}."
               f"{' ' + doc['note'] + '.' if doc.get('note') else ''}\n")
    return "\n".join(out)


# ------------------------------------------------------------------ the calibration

def calibration_body(doc: dict) -> str:
    if doc.get("skipped"):
        return f"Not run: {doc['skipped']}.\n"
    out = []
    if doc.get("error"):
        out.append(f"Failed: {doc['error']}.\n")
    rows = doc.get("rows")
    if isinstance(rows, list) and rows and all(isinstance(r, dict) for r in rows):
        cols = list(dict.fromkeys(k for r in rows for k in r))
        out.append(table([{k: fmt(r.get(k, "")) for k in cols} for r in rows], [(k, k) for k in cols]))
    shown = ("rows", "part", "machine", "dry_run", "date", "command", "complete")
    scalars = {k: v for k, v in doc.items() if k not in shown and not isinstance(v, dict | list)}
    if scalars:
        out.append("\n" + "; ".join(f"{k}: {fmt(v)}" for k, v in scalars.items()) + "\n")
    for k, v in doc.items():  # an object of figures (e.g. the measured constants): one line
        if k not in shown and isinstance(v, dict):
            out.append(f"\n{k}: " + ", ".join(f"{kk} {fmt(vv)}" for kk, vv in v.items()) + "\n")
    return "\n".join(out) or "No figures.\n"


def fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v).replace("|", "\\|")


# ------------------------------------------------------------------ the docs

def doc_blocks(parts: dict[str, dict]) -> dict[str, str]:
    """The figures the docs quote, by block name: ``gpu`` (docs/gpus.md) and ``threads`` (docs/threads.md)."""
    out = {}
    gpu, cpu = parts.get("gpu"), parts.get("cpu")
    if gpu and not gpu.get("skipped"):
        card = (gpu.get("gpu") or {}).get("gpu") or gpu.get("device")
        r = gpu.get("ratios") or {}
        lo = gpu.get("losses") or {}
        ratios = ", ".join(f"{a} {r[a]:.2f}" for a in ARCHS if a in r) or "none measured"
        worst = max((v["max_abs"] for v in lo.values() if v), default=None)
        out["gpu"] = (f"The device run of {gpu.get('date')} on {card} ([RESULTS.md](results.md#{slug(GPU_TITLE)})): "
                      f"the torch backend's epoch over PyG's on the same card {ratios} (target at most 1.0 each); "
                      f"its losses within {f'{worst:.1e}' if worst is not None else '-'} of the numpy backend's "
                      f"(target 1e-5).")
    if cpu and cpu.get("runs"):
        sp = cpu.get("speedup_t_max") or {}
        tmax = max(cpu.get("threads") or [1])
        model = (cpu.get("model") or {}).get("max_abs_error")
        shown = ", ".join(f"{k} {v:.1f}x" for k, v in sp.items()) or "none measured"
        out["threads"] = (f"The device run of {cpu.get('date')} on {cpu.get('machine', {}).get('cores')} cores "
                          f"([RESULTS.md](results.md#{slug(CPU_TITLE)})): T = {tmax} against T = 1 in one rank: "
                          f"{shown} (target: at least 6x for GCN and GIN, full batch); the fitted threads model "
                          f"within {f'{100 * model:.0f}%' if model is not None else '-'} of the runs (target 25%).")
    return out


def _keep_marks(body: str) -> Callable[[re.Match[str]], str]:
    def put(m: re.Match[str]) -> str:
        return m[1] + body + m[2]
    return put


def update_docs(docs: Path, blocks: dict[str, str]) -> list[Path]:
    """Rewrite each ``<!-- device-run:NAME -->`` ... ``<!-- /device-run:NAME -->`` block of the Markdown files under
    ``docs`` whose NAME is in ``blocks``; the files changed."""
    changed = []
    for path in sorted(docs.glob("*.md")):
        text = path.read_text()
        new = text
        for name, body in blocks.items():
            pat = re.compile(rf"(<!-- device-run:{name} -->\n).*?(\n<!-- /device-run:{name} -->)", re.S)
            new = pat.sub(_keep_marks(body), new)
        if new != text:
            path.write_text(new)
            changed.append(path)
    return changed


def sections(parts: dict[str, dict]) -> list[tuple[str, str]]:
    run = parts.get("run")
    out = []
    if "gpu" in parts:
        out.append((GPU_TITLE, head(GPU_TITLE, parts["gpu"], run) + "\n" + gpu_body(parts["gpu"])))
    if "cpu" in parts:
        out.append((CPU_TITLE, head(CPU_TITLE, parts["cpu"], run) + "\n" + cpu_body(parts["cpu"])))
    if "calibration" in parts:
        cal = parts["calibration"]
        if "machine" not in cal and run:
            cal = {**cal, "machine": run.get("machine", {})}
        extra = "" if cal.get("skipped") else \
            "- the part: benchmarks/training/net_calibration.py, which run.sh starts under `mpirun -n 16` (the dry run: " \
            "`mpirun -n 2`, `--quick`)"
        out.append((CAL_TITLE, head(CAL_TITLE, cal, run, extra) + "\n" + calibration_body(cal)))
    return out


def report(files: list[Path], *, results: Path | None = None, docs: Path | None = None, print_only: bool = False) -> str:
    parts = load(files)
    dry = any(d.get("dry_run") for d in parts.values())
    secs = sections(parts)
    text = "\n".join(body for _, body in secs)
    print(text)
    if print_only:
        return text
    if dry and (results is None or docs is None):
        raise ReportError("these are a dry run's JSONs: they go into benchmarks/RESULTS.md and docs/ only as real "
                          "figures; pass --results FILE and --docs DIR to write them elsewhere, or --print")
    target = results or RESULTS
    doc = Document.parse(target.read_text()) if target.exists() else Document.new()
    for title, body in secs:
        doc.put(title, body, question_of(title))
    target.write_text(doc.render())
    changed = update_docs(docs or REPO / "docs", doc_blocks(parts))
    print(f"report: {len(secs)} sections into {target}; figures updated in "
          f"{', '.join(str(p) for p in changed) or 'no doc'}")
    return text
