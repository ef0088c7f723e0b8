"""The device run's GPU part (issue 60): on one GPU, with the stores ``prepare`` made,

1. PyG's layers (GCN, GraphSAGE, GIN, GAT) and the torch.sparse CSR GCN (the floor) on the card, all in one child
   (benchmarks/training/_pyg_epoch.py), then the torch backend on CUDA for each architecture: the median epoch
   after ``skip`` warm-up epochs, and the first epoch (torch.compile's, CUDA's start) reported on its own;
2. the numpy backend on all cores for each architecture: its losses against the torch backend's on CUDA;
3. two ranks of the 2-part store on the one GPU, torch and numpy: losses against one rank's, bytes against numpy's;
4. torchdist (examples/torch_pyg.py, PyG's GCNConv through the store's halo exchange; NCCL when the rank has a
   GPU of its own) against PyG's own GCN epoch;
5. a profile of the slowest architecture against PyG (:mod:`.profile_step`: kernel launches and host
   synchronizations per step), when it is slower than PyG.

They run in the order 1, 2, 5, 3, 4 (what the issue's figures need first).

Every run is a child with a timeout inside the part's budget (``--budget``): runs that would start after it are
recorded as skipped. OUT/gpu.json is rewritten after every run; OUT/gpu-logs.tar.gz holds the run logs.
``--dry-run``: the tiny stores, and torch's CPU device standing in for CUDA when there is none.

    python -m benchmarks.device.gpu --stores DIR --out OUT [--budget 216] [--dry-run]
"""

from __future__ import annotations

import importlib.util
import json
import logging
import sys
import tarfile
import tempfile
from dataclasses import asdict
from pathlib import Path

import numpy as np

from benchmarks.common import REPO
from benchmarks.device.common import Part, part_args, sizes, stop_on_signals, store_name
from benchmarks.training import gpu_bench as gb

log = logging.getLogger("benchmarks.device.gpu")
ARCHS = ("gcn", "sage", "gin", "gat")
EXAMPLE = REPO / "examples" / "torch_pyg.py"


def losses_against(a: gb.Run | None, b: gb.Run | None) -> dict | None:
    """The largest absolute and relative difference of two runs' losses over the epochs both logged, and whether
    their bytes per epoch were equal there; None when either has no losses."""
    la, lb = (a.extra.get("losses") if a else None), (b.extra.get("losses") if b else None)
    if not la or not lb or a is None or b is None:
        return None
    k = min(len(la), len(lb))
    x, y = np.asarray(la[:k], np.float64), np.asarray(lb[:k], np.float64)
    diff = np.abs(x - y)
    return {"runs": [a.key, b.key], "epochs": k, "max_abs": float(diff.max()),
            "max_rel": float(np.max(diff / np.maximum(np.abs(y), 1e-30))),
            "bytes_equal": a.extra.get("bytes", [])[:k] == b.extra.get("bytes", [])[:k]}


def ratios(runs: dict[str, gb.Run], dev: str) -> dict[str, float]:
    """Each architecture's torch epoch on ``dev`` over PyG's there (only where both have a figure)."""
    out = {}
    for a in ARCHS:
        ours, pyg = runs.get(f"{a} torch {dev}"), runs.get(f"{a} pyg {dev}")
        if ours and pyg and ours.ms and pyg.ms:
            out[a] = ours.ms / pyg.ms
    return out


def slowest(r: dict[str, float]) -> str | None:
    return max(r, key=lambda a: r[a]) if r else None


def torchdist_run(b: gb.Bench, store: Path, dev: str, hidden: int, epochs: int, logs: Path) -> gb.Run:
    """examples/torch_pyg.py's GCN (PyG's GCNConv under torchdist) on one rank: its median epoch after ``skip``."""
    path = logs / f"gcn_torchdist_{dev}.jsonl"
    cmd = [sys.executable, str(EXAMPLE), str(store), "--arch", "gcn", "--hidden", str(hidden), "--epochs", str(epochs),
           "--device", dev, "--log-file", str(path)]
    run = gb.Run(f"gcn torchdist {dev}", cmd)
    res = b.child(run)
    if res is not None or path.exists():
        try:
            recs = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
            eps = [r for r in recs if "seconds" in r]
            summary: dict = next((r for r in recs if r.get("summary")), {})
            timed = [r["seconds"] for r in eps if r["epoch"] >= b.args.skip] or [r["seconds"] for r in eps[1:]]
            run.ms, run.epochs_timed = 1e3 * float(np.median(timed)), len(timed)
            run.extra = {"first_epoch": eps[0]["seconds"], "losses": [r["loss"] for r in eps],
                         "backend": summary.get("backend"), "device": summary.get("device")}
        except (OSError, ValueError, KeyError, IndexError) as e:
            run.error = run.error or f"no log: {e}"
    b.report(run)
    return run


def profile_run(b: gb.Bench, store: Path, arch: str, dev: str, out: Path, logs: Path) -> dict:
    """:mod:`.profile_step` on ``arch``'s run: what one step launches and waits for."""
    args = b.args
    opts, _, _ = gb.arch_opts(args, arch, args.skip + 4)
    path = out / "gpu-profile.json"
    cmd = [sys.executable, "-m", "benchmarks.device.profile_step", "--json", str(path), "--warmup", str(args.skip),
           "--active", "3", "--", str(store), *map(str, opts), "--backend", "torch", "--device", dev,
           "--log", str(logs / f"profile_{arch}.jsonl"), "--overwrite", "--quiet"]
    run = gb.Run(f"{arch} profile {dev}", cmd)
    b.child(run)
    b.report(run)
    try:
        got = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        return {"arch": arch, "error": run.error or f"no profile: {e}"}
    return {**got, "arch": arch, "seconds": round(run.seconds, 1)}


def main(argv: list[str] | None = None) -> int:
    a = part_args(__doc__, argv)
    stop_on_signals()
    sz = sizes(a.dry_run)
    p1, p2 = a.stores / store_name(sz.scale, 1), a.stores / store_name(sz.scale, 2)
    gpu = gb.gpu_facts(sys.executable)
    cuda = bool(gpu.get("cuda"))
    dev = "cuda" if cuda else "cpu"
    a.out.mkdir(parents=True, exist_ok=True)
    part = Part("gpu", a.out, dry_run=a.dry_run, budget=a.budget,
                extra={"device": dev, "gpu": gpu, "sizes": asdict(sz), "archs": list(ARCHS)})
    if not cuda and not a.dry_run:
        part.doc["skipped"] = f"no CUDA device: torch.cuda.is_available() is False ({gpu.get('error', gpu.get('torch'))})"
        part.save(complete=True)
        print(f"gpu: {part.doc['skipped']}", file=sys.stderr)
        return 0
    args = gb.parse([str(p1), "--epochs", str(sz.gpu_epochs), "--cpu-epochs", str(sz.cpu_epochs), "--gat-epochs",
                     str(sz.gat_epochs), "--hidden", str(sz.hidden), "--skip", str(sz.skip), "--budget", str(a.budget),
                     "--timeout", "120", "--ranks-store", str(p2)])
    pyg_ok = importlib.util.find_spec("torch_geometric") is not None
    done = False
    with tempfile.TemporaryDirectory() as tmp:
        logs = Path(tmp) / "logs"
        logs.mkdir()
        b = gb.Bench(args, logs)

        def save(complete: bool = False) -> None:
            part.doc["runs"] = {k: asdict(r) for k, r in b.runs.items()}
            part.doc["ratios"] = ratios(b.runs, dev)
            part.save(complete)

        try:
            npz = Path(tmp) / "graph.npz"
            part.doc["graph"] = gb.export_npz(p1, npz)
            if pyg_ok:
                b.pyg(npz, list(ARCHS), dev)
            else:
                for key in (*(f"{x} pyg {dev}" for x in ARCHS), f"gcn csr {dev}"):
                    b.runs[key] = gb.Run(key, [], error="skipped: torch_geometric is not importable here")
            save()
            for arch in ARCHS:  # (1) the torch backend on the device
                opts, _, _ = gb.arch_opts(args, arch, gb.epochs_of(args, arch, True))
                b.trainer(f"{arch} torch {dev}", p1, 1, [*opts, "--backend", "torch", "--device", dev])
                save()
            for arch in ARCHS:  # (2) numpy on all cores: the losses to compare with
                opts, _, _ = gb.arch_opts(args, arch, gb.epochs_of(args, arch, False))
                b.trainer(f"{arch} numpy cpu", p1, 1, [*opts, "--backend", "numpy", "--threads", gb.cores()])
                save()
            part.doc["losses"] = {arch: losses_against(b.runs.get(f"{arch} torch {dev}"), b.runs.get(f"{arch} numpy cpu"))
                                  for arch in ARCHS}
            r = ratios(b.runs, dev)  # (5) the slowest architecture against PyG, when slower (the dry run: always)
            worst = slowest(r)
            if worst and (r[worst] > 1.0 or a.dry_run) and b.left() > 20:
                part.doc["profile"] = {**profile_run(b, p1, worst, dev, a.out, logs), "ratio": r[worst]}
            elif worst:
                part.doc["profile"] = {"arch": worst, "ratio": r[worst],
                                       "skipped": "not slower than PyG" if r[worst] <= 1.0 else "the budget is spent"}
            gb.ranks_check(b, p2, cuda)  # (3) two ranks on the one GPU
            part.doc["two_ranks"] = {
                "torch P=2 vs P=1": losses_against(b.runs.get(f"P=2 torch {dev}"), b.runs.get(f"gcn torch {dev}")),
                "torch P=2 vs numpy P=2": losses_against(b.runs.get(f"P=2 torch {dev}"), b.runs.get("P=2 numpy cpu"))}
            save()
            if pyg_ok:  # (4) torchdist with PyG's GCNConv against PyG alone
                td = torchdist_run(b, p1, dev, sz.hidden, sz.gpu_epochs, logs)
                pyg = b.runs.get(f"gcn pyg {dev}")
                part.doc["torchdist"] = {"ms": td.ms, "pyg_ms": pyg.ms if pyg else None,
                                         "ratio": td.ms / pyg.ms if td.ms and pyg and pyg.ms else None,
                                         "backend": td.extra.get("backend"), "error": td.error}
                save()
            save()
            done = True
        except KeyboardInterrupt:
            part.doc["stopped"] = "interrupted: the part's time ran out"
        finally:
            with tarfile.open(a.out / "gpu-logs.tar.gz", "w:gz") as tar:
                for f in sorted(logs.glob("*.jsonl")):
                    tar.add(f, arcname=f"gpu-logs/{f.name}")
            save(complete=done)
    return 0


if __name__ == "__main__":
    sys.exit(main())
