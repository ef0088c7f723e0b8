"""The trainer on one machine with a GPU (issue 48): ``shgcn-train`` with the
numpy backend on all cores, the torch backend on all cores and on the GPU,
against PyG's layers and a plain torch.sparse CSR GCN on the same graph on the
GPU; then the numpy backend's epoch at T = 1, 2, 4, 8, 16 threads, full batch
and mini-batch.

    python -m benchmarks.training.gpu_bench STORE [--epochs 50] [--cpu-epochs 20] [--gat-epochs 30] [--hidden 256]
        [--gat-heads 4] [--archs gcn sage gin gat] [--threads 1 2 4 8 16] [--sweep-epochs 15] [--no-sweep]
        [--ranks-store STORE_P2] [--out DIR] [--timeout 90] [--budget 300] [--mpirun 'mpirun --allow-run-as-root']

STORE: a prebuilt one-part store (``pipeline build ... --parts 1``). This
script builds nothing and imports neither dask nor the pipeline: it runs
where only the trainer's packages are (benchmarks/training/gpu_wheels.sh
makes the wheels a machine without them needs). Every run is a child process
with a timeout; the epoch time of a run is the median of the run log's
``epoch_time`` over epochs 10 to the end (``--skip``); PyG's epochs are
timed between two ``torch.cuda.synchronize()`` (benchmarks/training/_pyg_epoch.py,
every architecture in one child). The trainer runs with its defaults but
``--hidden``, ``--dropout 0.5`` and ``--eval-every EPOCHS`` (no evaluation
inside the timed epochs). To stay within the budget the runs on the CPU train
``--cpu-epochs`` (their epochs are 5-50x the GPU's), GAT at most
``--gat-epochs``, with ``--gat-heads`` heads of hidden / heads (the same
total width); a run that times out is timed on the epochs its run log holds
by then. Without a GPU (``torch.cuda.is_available()`` False) the CUDA rows
are skipped, and PyG and the CSR GCN run on the CPU with all cores instead.
``--ranks-store``: a store of more parts, trained with ``mpirun -n P`` (all
ranks on the one GPU; the numpy backend with cores / P threads a rank).

On one H200 with 16 cores most of the time is start-up, not epochs: a torch
cuda run takes 30-40 s (torch.compile of its kernels in the first epoch, for
epochs of 6-11 ms), a CPU run 7-12 s (numba's first compile of GAT's kernels
12 s), PyG's child about 20 s; the whole bench about 5 minutes, which
``--budget`` (seconds) enforces: runs that would start after it are skipped,
and say so. The order is PyG, then per architecture numpy, torch cpu, torch
cuda, then the sweep, then ``--ranks-store``.

Prints the tables (epoch ms, every ratio, the start-up, the thread sweep) as
Markdown; with ``--out DIR`` also writes DIR/gpu_bench.json (every run: its
command, epoch times, errors; the machine, versions and this command),
DIR/gpu_bench.md, and DIR/logs.tar.gz (the run logs).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from benchmarks.common import REPO, bench_env, mpirun, table
from benchmarks.common.results import command, versions

TRAIN = REPO / "trainer" / "train.py"
ARCHS = ("gcn", "sage", "gin", "gat")
THREADS = (1, 2, 4, 8, 16)
GPU_PROBE = ("import json, torch\nok = torch.cuda.is_available()\n"
             "print(json.dumps({'cuda': ok, 'torch': torch.__version__, 'cuda_version': torch.version.cuda,\n"
             "                  'gpu': torch.cuda.get_device_name(0) if ok else None,\n"
             "                  'gpu_memory_gib': round(torch.cuda.get_device_properties(0).total_memory / 2**30, 1)"
             " if ok else None}))")


@dataclass
class Run:
    """One timed child process: what it measured, or why it has no figure."""
    key: str
    cmd: list[str]
    ms: float | None = None
    epochs_timed: int = 0
    seconds: float = 0.0
    error: str | None = None
    extra: dict = field(default_factory=dict)


# ------------------------------------------------------------------ pure functions (tested)

def epoch_median(records: list[dict], skip: int) -> tuple[float, int]:
    """(median ``epoch_time`` in seconds, epochs counted) of a run log's epoch records: epochs ``skip`` to the end,
    or every epoch after the first when the run has no more than ``skip`` epochs."""
    eps = [r for r in records if r.get("type", "epoch") == "epoch" and "epoch_time" in r]
    counted = [r for r in eps if r["epoch"] >= skip] or eps[1:] or eps
    if not counted:
        raise ValueError("the run log holds no epoch")
    return float(np.median([r["epoch_time"] for r in counted])), len(counted)


def sweep(cores: int, wanted: tuple[int, ...] = THREADS) -> list[int]:
    """The thread counts of the sweep on a machine of ``cores`` cores: those of ``wanted`` it has."""
    return [t for t in wanted if t <= cores] or [1]


def ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}" if a and b else "-"


def ms(x: float | None) -> str:
    return f"{x:.1f}" if x is not None else "-"


def cell(run: Run | None) -> str:
    """A run's epoch ms for a table: '-' when it was not run, 'skipped' or 'failed' when it gave no figure."""
    if run is None:
        return "-"
    if run.ms is not None:
        return ms(run.ms)
    return "skipped" if (run.error or "").startswith("skipped") else "failed"


def is_open_mpi(version_text: str) -> bool:
    return "Open MPI" in version_text or "OpenRTE" in version_text


# ------------------------------------------------------------------ the machine

def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def git_rev() -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(REPO), "describe", "--always", "--dirty", "--abbrev=12"],
                             capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def gpu_facts(python: str) -> dict:
    """torch's view of the GPU, from a child (this process never initializes CUDA)."""
    try:
        out = subprocess.run([python, "-c", GPU_PROBE], capture_output=True, text=True, timeout=120)
        return json.loads(out.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError) as e:
        return {"cuda": False, "error": f"{type(e).__name__}: {e}"}


def memory_gib() -> float | None:
    """This machine's memory, GiB (/proc/meminfo; None where it cannot be read)."""
    try:
        kb = next(int(x.split()[1]) for x in Path("/proc/meminfo").read_text().splitlines() if x.startswith("MemTotal"))
    except (OSError, StopIteration):
        return None
    return round(kb / 2**20, 1)


def machine_facts(python: str) -> dict:
    mem = memory_gib()
    return {"cpu": cpu_model(), "cores": cores(), "memory_gib": mem, "os": f"{platform.system()} {platform.release()}",
            **gpu_facts(python), "versions": versions("torch", "torch_geometric", "numba"), "shgcn_rev": git_rev(),
            "python": sys.executable, "command": command()}


def launcher(spec: str | None) -> list[str]:
    """The mpirun to start P ranks with: ``spec`` as given, else the one beside this Python or on PATH; an Open
    MPI one gets ``--bind-to none`` (its default binds each of 2 ranks to one core) and, as root,
    ``--allow-run-as-root``."""
    if spec:
        return shlex.split(spec)
    exe = mpirun()
    try:
        text = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return [exe]
    if not is_open_mpi(text):
        return [exe]
    root = ["--allow-run-as-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []
    return [exe, *root, "--bind-to", "none", "-x", "PYTHONPATH"]


# ------------------------------------------------------------------ the runs

def timed(cmd: list[str], timeout: float) -> tuple[subprocess.CompletedProcess, bool]:
    """(``cmd``'s exit and output, whether it ran past ``timeout`` seconds): it runs in a session of its own, and
    past the timeout its whole process group is killed (mpirun's ranks too); its output is what it wrote by then."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=bench_env(),
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
        return subprocess.CompletedProcess(cmd, proc.returncode, out, err), False
    except KeyboardInterrupt:  # this process is stopped (a budget's SIGINT): the child's group goes with it
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        raise
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = proc.communicate(timeout=30)
        return subprocess.CompletedProcess(cmd, -signal.SIGKILL, out or "", err or ""), True


class Bench:
    """The runs in order under one time budget; their results by key."""

    def __init__(self, args, logs: Path):
        self.args, self.logs = args, logs
        self.t0 = time.perf_counter()
        self.runs: dict[str, Run] = {}

    def left(self) -> float:
        return self.args.budget - (time.perf_counter() - self.t0)

    def child(self, run: Run, timeout: float | None = None) -> subprocess.CompletedProcess | None:
        """Run ``run.cmd`` with a timeout (the smaller of ``timeout`` or ``--timeout`` and the budget left): its
        output, also when it timed out (``run.error`` says so); None when it was skipped or failed (``run.error``
        says why)."""
        self.runs[run.key] = run
        if self.left() < 5:
            run.error = "skipped: the budget is spent"
            return None
        t0 = time.perf_counter()
        res, late = timed(run.cmd, max(10.0, min(timeout or self.args.timeout, self.left())))
        run.seconds = time.perf_counter() - t0
        if late:
            run.error = f"timed out after {run.seconds:.0f} s"
        elif res.returncode != 0:
            tail = (res.stderr.strip() or res.stdout.strip()).splitlines()[-3:]
            run.error = f"exit {res.returncode}: {' / '.join(tail)}"[:400]
            return None
        return res

    def report(self, run: Run) -> None:
        what = f"{run.ms:.1f} ms/epoch" if run.ms is not None else run.error
        print(f"[{time.perf_counter() - self.t0:5.0f} s] {run.key}: {what} ({run.seconds:.1f} s)", file=sys.stderr,
              flush=True)

    def trainer(self, key: str, store: Path, ranks: int, opts: list) -> Run:
        """``shgcn-train STORE OPTS`` (under mpirun for ``ranks`` > 1): the median epoch of its run log."""
        log = self.logs / f"{key.replace(' ', '_').replace('/', '-')}.jsonl"
        cmd = [sys.executable, str(TRAIN), str(store), *map(str, opts), "--log", str(log), "--overwrite", "--quiet"]
        if ranks > 1:
            cmd = [*launcher(self.args.mpirun), "-n", str(ranks), *cmd]
        run = Run(key, cmd)
        if self.child(run) is not None:  # a run cut short: the epochs it logged by then
            try:
                recs = [json.loads(line) for line in log.read_text().splitlines()[1:] if line.endswith("}")]
                sec, run.epochs_timed = epoch_median(recs, self.args.skip)
                run.ms = 1e3 * sec
                epochs = [r for r in recs if r.get("type", "epoch") == "epoch"]
                run.extra["first_epoch"] = epochs[0]["epoch_time"]
                run.extra["losses"] = [r["loss"] for r in epochs]
                run.extra["bytes"] = [r.get("bytes_sent") for r in epochs]
                if run.error:
                    run.error = f"{run.error}: timed on the {run.epochs_timed} epochs it logged"
            except (OSError, ValueError) as e:
                run.error = run.error or f"no run log: {e}"
        self.report(run)
        return run

    def pyg(self, npz: Path, archs: list[str], device: str) -> None:
        """benchmarks/training/_pyg_epoch.py: PyG's layers (and the CSR GCN after GCN) on ``device``, all in one
        child (torch, PyG and the GPU start once): one run ``ARCH pyg DEVICE`` (``gcn csr DEVICE``) each."""
        args = self.args
        names = [n for a in archs for n in ((a, "csr") if a == "gcn" else (a,))]
        gpu = device == "cuda"
        gat_hidden, heads = max(1, args.hidden // args.gat_heads), args.gat_heads
        cmd = [args.python, "-m", "benchmarks.training._pyg_epoch", str(npz), ",".join(names),
               str(epochs_of(args, "gcn", gpu)), str(args.hidden), "--gat-hidden", str(gat_hidden),
               "--gat-epochs", str(epochs_of(args, "gat", gpu)), "--heads", str(heads), "--dropout", str(args.dropout),
               "--device", device, "--threads", str(cores()), "--skip", str(args.skip), "--normalized"]
        keys = [f"{a} pyg {device}" if a != "csr" else f"gcn csr {device}" for a in names]
        whole = Run("pyg " + device, cmd)
        res = self.child(whole, timeout=args.timeout * len(names) / 2)
        self.runs.pop(whole.key)
        done = {}
        for line in (res.stdout if res is not None else "").splitlines():
            try:
                out = json.loads(line)
                done[out["arch"]] = out
            except (ValueError, KeyError, TypeError):
                continue
        for name, key in zip(names, keys):
            out = done.get(name)
            run = Run(key, cmd, seconds=whole.seconds)
            if out:
                run.ms, run.epochs_timed, run.extra = 1e3 * out["epoch_time"], out["epochs_timed"], out
            else:
                run.error = whole.error or "no result"
            self.runs[key] = run
            self.report(run)


def export_npz(store: Path, out: Path) -> dict:
    """The graph for PyG, as the trainer's one rank holds it (the store's vertex order): the pattern without self
    loops (row, col: edges col -> row), Â with its values and self loops (a_row, a_col, a_val), features, labels
    (>= 0), masks of labelled vertices. Returns its sizes. Rank 0's export of a one-part store is the whole graph
    read from the rank's block alone (the whole-graph export reads the node table through xarray)."""
    from shgcn.store import graph_arrays, open_store

    parts = open_store(store).parts
    if parts != 1:
        raise SystemExit(f"gpu_bench: {store} has {parts} parts; STORE must have one (pass a store of more parts as "
                         "--ranks-store)")
    g = graph_arrays(store, rank=0, normalized=True)
    keep = g.src != g.dst
    labelled = g.labels >= 0
    np.savez(out, row=g.dst[keep], col=g.src[keep], a_row=g.dst, a_col=g.src, a_val=g.weight, x=g.features,
             y=np.maximum(g.labels, 0), train=g.train_mask & labelled, val=g.val_mask & labelled,
             test=g.test_mask & labelled)
    return {"n": g.num_nodes, "nnz": g.num_edges, "features": int(g.features.shape[1]),
            "classes": int(g.labels.max()) + 1, "train": int((g.train_mask & labelled).sum())}


def epochs_of(args, arch: str, gpu: bool) -> int:
    """Epochs of a run: ``--epochs`` on the GPU, ``--cpu-epochs`` on the CPU, GAT at most ``--gat-epochs``."""
    n = args.epochs if gpu else args.cpu_epochs
    return min(n, args.gat_epochs) if arch == "gat" else n


def arch_opts(args, arch: str, epochs: int) -> tuple[list, int, int]:
    """(the trainer's options, the hidden width per head, heads) of ``arch`` for ``epochs`` epochs: GAT has
    ``--gat-heads`` heads of hidden / heads."""
    heads = args.gat_heads if arch == "gat" else 1
    per = max(1, args.hidden // heads)
    extra = ["--heads", heads] if arch == "gat" else []
    return ["--arch", arch, "--hidden", per, *extra, "--epochs", epochs, "--eval-every", epochs,
            "--dropout", args.dropout], per, heads


def compare(b: Bench, store: Path, npz: Path, cuda: bool) -> None:
    """Parts (1) and (2): every arch on numpy and torch (all cores), torch on the GPU, PyG on the GPU; the CSR
    GCN."""
    args, t = b.args, cores()
    b.pyg(npz, list(args.archs), "cuda" if cuda else "cpu")
    for arch in args.archs if cuda else ():  # the GPU's rows first: a budget that runs out cuts the CPU's
        gpu, _, _ = arch_opts(args, arch, epochs_of(args, arch, True))
        b.trainer(f"{arch} torch cuda", store, 1, [*gpu, "--backend", "torch", "--device", "cuda"])
    for arch in args.archs:
        cpu, _, _ = arch_opts(args, arch, epochs_of(args, arch, False))
        b.trainer(f"{arch} numpy cpu", store, 1, [*cpu, "--backend", "numpy", "--threads", t])
        b.trainer(f"{arch} torch cpu", store, 1, [*cpu, "--backend", "torch", "--device", "cpu", "--threads", t])


def thread_sweep(b: Bench, store: Path) -> None:
    """Part (4): the numpy backend's GCN epoch at every T of the sweep, full batch and mini-batch."""
    args = b.args
    for mode in ("full", "minibatch"):
        for t in sweep(cores(), tuple(args.threads)):
            b.trainer(f"sweep {mode} T={t}", store, 1,
                      ["--hidden", args.hidden, "--dropout", args.dropout, "--epochs", args.sweep_epochs,
                       "--eval-every", args.sweep_epochs, "--mode", mode, "--threads", t])


def ranks_check(b: Bench, store: Path, cuda: bool) -> int:
    """P ranks of a P-part store (GCN): numpy with cores / P threads a rank, torch on the one GPU (or CPU)."""
    from shgcn.store import open_store

    p, args = open_store(store).parts, b.args
    cpu, _, _ = arch_opts(args, "gcn", epochs_of(args, "gcn", False))
    gpu, _, _ = arch_opts(args, "gcn", epochs_of(args, "gcn", cuda))
    b.trainer(f"P={p} numpy cpu", store, p, [*cpu, "--backend", "numpy", "--threads", max(1, cores() // p)])
    dev = "cuda" if cuda else "cpu"
    b.trainer(f"P={p} torch {dev}", store, p, [*gpu, "--backend", "torch", "--device", dev,
                                               *(["--threads", max(1, cores() // p)] if not cuda else [])])
    return p


# ------------------------------------------------------------------ the tables

def agreement(a: Run | None, b: Run | None) -> str:
    """The largest relative difference of two runs' losses over the epochs both logged, and whether their bytes
    per epoch were the same there ("-" when either has no losses)."""
    la, lb = (a.extra.get("losses") if a else None), (b.extra.get("losses") if b else None)
    if not la or not lb:
        return "-"
    k = min(len(la), len(lb))
    x, y = np.asarray(la[:k], np.float64), np.asarray(lb[:k], np.float64)
    rel = float(np.max(np.abs(x - y) / np.maximum(np.abs(y), 1e-30)))
    same = a.extra.get("bytes", [])[:k] == b.extra.get("bytes", [])[:k]  # type: ignore[union-attr]
    return f"{rel:.1e} over {k} epochs, bytes {'equal' if same else 'DIFFER'}"


def agreement_table(runs: dict[str, Run], archs: list[str], p: int | None) -> str:
    """The torch backend's losses (and bytes) against the numpy backend's, CPU and GPU, P = 1 and P = ``p``."""
    rows = [{"run": f"{a}: torch {dev} vs numpy", "v": agreement(runs.get(f"{a} torch {dev}"), runs.get(f"{a} numpy cpu"))}
            for a in archs for dev in ("cpu", "cuda") if f"{a} torch {dev}" in runs]
    if p:
        rows += [{"run": f"gcn, P = {p}: torch {dev} vs numpy",
                  "v": agreement(runs.get(f"P={p} torch {dev}"), runs.get(f"P={p} numpy cpu"))}
                 for dev in ("cpu", "cuda") if f"P={p} torch {dev}" in runs]
    return table(rows, [("run", "run"), ("v", "largest relative loss difference; bytes sent")])


def epoch_table(runs: dict[str, Run], archs: list[str], dev: str) -> str:
    def at(key: str) -> str:
        return cell(runs.get(key))

    rows = [{"arch": a, "numpy": at(f"{a} numpy cpu"), "tcpu": at(f"{a} torch cpu"), "tcuda": at(f"{a} torch cuda"),
             "pyg": at(f"{a} pyg {dev}"), "csr": at(f"{a} csr {dev}") if a == "gcn" else ""} for a in archs]
    return table(rows, [("arch", "arch"), ("numpy", "numpy, all cores"), ("tcpu", "torch cpu, all cores"),
                        ("tcuda", "torch cuda"), ("pyg", f"PyG ({dev})"), ("csr", f"torch.sparse CSR GCN ({dev})")])


def ratio_table(runs: dict[str, Run], archs: list[str], dev: str) -> str:
    def t(key: str) -> float | None:
        r = runs.get(key)
        return r.ms if r else None

    ours = "cuda" if dev == "cuda" else "cpu"
    rows = []
    for a in archs:
        row = {"arch": a, "cpu_np": ratio(t(f"{a} torch cpu"), t(f"{a} numpy cpu")),
               "cuda_np": ratio(t(f"{a} torch cuda"), t(f"{a} numpy cpu")),
               "cuda_cpu": ratio(t(f"{a} torch cuda"), t(f"{a} torch cpu")),
               "ours_pyg": ratio(t(f"{a} torch {ours}"), t(f"{a} pyg {dev}")),
               "np_pyg": ratio(t(f"{a} numpy cpu"), t(f"{a} pyg {dev}"))}
        if a == "gcn":
            row["csr"] = (f"ours {ratio(t(f'gcn torch {ours}'), t(f'gcn csr {dev}'))}, "
                          f"PyG {ratio(t(f'gcn pyg {dev}'), t(f'gcn csr {dev}'))}")
        rows.append(row)
    return table(rows, [("arch", "arch"), ("cpu_np", "torch cpu / numpy"), ("cuda_np", "torch cuda / numpy"),
                        ("cuda_cpu", "torch cuda / torch cpu"), ("ours_pyg", f"torch {ours} / PyG ({dev})"),
                        ("np_pyg", f"numpy / PyG ({dev})"), ("csr", f"GCN / torch.sparse CSR GCN ({dev})")])


def sweep_table(runs: dict[str, Run], threads: list[int]) -> str:
    rows = []
    for t in threads:
        row = {"t": t}
        for mode, col in (("full", "full"), ("minibatch", "mb")):
            r, one = runs.get(f"sweep {mode} T={t}"), runs.get(f"sweep {mode} T={threads[0]}")
            row[col] = cell(r)
            row[col + "_x"] = ratio(one.ms if one else None, r.ms if r else None)
        rows.append(row)
    return table(rows, [("t", "T"), ("full", "full batch ms"), ("full_x", f"speed-up vs T={threads[0]}"),
                        ("mb", "mini-batch ms"), ("mb_x", f"speed-up vs T={threads[0]}")])


def start_table(runs: dict[str, Run], archs: list[str]) -> str:
    """Each trainer run's first epoch (numba's and torch.compile's compiles, CUDA's start; not in the medians)
    and its whole run, start-up included."""
    def at(key: str) -> str:
        r = runs.get(key)
        if r is None or r.error and r.ms is None:
            return "-"
        first = r.extra.get("first_epoch")
        return f"{first:.1f} / {r.seconds:.0f}" if first is not None else f"- / {r.seconds:.0f}"

    rows = [{"arch": a, "numpy": at(f"{a} numpy cpu"), "tcpu": at(f"{a} torch cpu"), "tcuda": at(f"{a} torch cuda")}
            for a in archs]
    return table(rows, [("arch", "arch"), ("numpy", "numpy: first epoch s / run s"),
                        ("tcpu", "torch cpu: first epoch s / run s"), ("tcuda", "torch cuda: first epoch s / run s")])


def ranks_table(runs: dict[str, Run], p: int, dev: str) -> str:
    def t(key: str) -> float | None:
        r = runs.get(key)
        return r.ms if r else None

    where = "on the one GPU" if dev == "cuda" else f"x {max(1, cores() // p)} threads"
    rows = [{"run": f"numpy, P = {p} x {max(1, cores() // p)} threads", "ms": ms(t(f"P={p} numpy cpu")),
             "vs": ratio(t(f"P={p} numpy cpu"), t("gcn numpy cpu"))},
            {"run": f"torch {dev}, P = {p} {where}", "ms": ms(t(f"P={p} torch {dev}")),
             "vs": ratio(t(f"P={p} torch {dev}"), t(f"gcn torch {dev}"))}]
    return table(rows, [("run", "GCN run"), ("ms", "epoch ms"), ("vs", "P / P = 1 (same backend)")])


def render(b: Bench, facts: dict, graph: dict, p: int | None) -> str:
    args, runs, cuda = b.args, b.runs, bool(facts.get("cuda"))
    dev = "cuda" if cuda else "cpu"
    archs = list(args.archs)
    gpu = (f"{facts.get('gpu')} ({facts.get('gpu_memory_gib')} GiB, CUDA {facts.get('cuda_version')})" if cuda
           else f"none: torch.cuda.is_available() is False, the CUDA rows are skipped and PyG runs on the CPU "
                f"({facts.get('error', 'torch ' + str(facts.get('torch')))})")
    out = [f"## The trainer on a GPU machine (issue 48)\n\n- command: `{facts['command']}`\n"
           f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n"
           f"- machine: {facts['cpu']}, {facts['cores']} cores, {facts['memory_gib']} GiB memory, {facts['os']}\n"
           f"- GPU: {gpu}\n- versions: {facts['versions']}; shgcn rev {facts['shgcn_rev'] or 'unknown'}\n"
           f"- store: `{args.store}` (n = {graph['n']:,}, Â's nonzeros {graph['nnz']:,}, {graph['features']} features, "
           f"{graph['classes']} classes, {graph['train']:,} training vertices)\n",
           f"### Epoch ms (median of epochs {args.skip} to the end)\n", epoch_table(runs, archs, dev),
           "\n### Ratios (below 1: the first is faster)\n", ratio_table(runs, archs, dev),
           "\n### Start-up: each run's first epoch (compiles, CUDA's start; not in the medians) and whole run\n",
           start_table(runs, archs)]
    threads = sweep(cores(), tuple(args.threads))
    if any(k.startswith("sweep") for k in runs):
        out += [f"\n### numpy backend, GCN: epoch ms against threads T (median of epochs {args.skip} to "
                f"{args.sweep_epochs - 1})\n", sweep_table(runs, threads)]
    if p:
        out += [f"\n### {p} ranks on one machine{' and one GPU' if cuda else ''}: `{args.ranks_store}`\n",
                ranks_table(runs, p, dev)]
    out += ["\n### The torch backend's losses against the numpy backend's (the same seed and masks)\n",
            agreement_table(runs, archs, p)]
    heads = args.gat_heads
    out.append(
        f"\nshgcn-train: hidden {args.hidden}, dropout {args.dropout}, {args.epochs} epochs on the GPU and "
        f"{args.cpu_epochs} on the CPU, `--eval-every` the epochs "
        f"(no evaluation inside the timed epochs), the trainer's defaults otherwise (lr 0.01, weight decay 5e-4 on "
        f"the first layer, Adam); GAT: {heads} heads of {max(1, args.hidden // heads)} (the same total width), "
        f"attention dropout {args.dropout}, at most {args.gat_epochs} epochs. PyG and the CSR GCN: the epochs of "
        f"the trainer on the same device. numpy and torch cpu with `--threads "
        f"{cores()}` (all cores); torch cuda with the trainer's default threads. PyG "
        "(benchmarks/training/_pyg_epoch.py, torch threads = all cores): GCNConv(normalize=False) on the store's Â "
        "(self loops and values as edge_weight), SAGEConv, GINConv(train_eps=True) with a two-layer MLP, GATConv on "
        "Â's pattern without self loops, the same widths and dropout, Adam lr 0.01; the CSR GCN: `Â @ lin(H)` per "
        f"layer with torch's sparse CSR product. Thread sweep: GCN, hidden {args.hidden}, {args.sweep_epochs} epochs, "
        "mini-batch: the node sampler at the trainer's default batch (10% of n). Every run once (a ratio is of two "
        "single runs), in this order: PyG, torch cuda for every architecture, then per architecture numpy and torch "
        "cpu, then the sweep; "
        f"{time.perf_counter() - b.t0:.0f} s in all.\n")
    failed = [f"- {r.key}: {r.error}" for r in runs.values() if r.error]
    if failed:
        out.append("\nRuns without a figure:\n\n" + "\n".join(failed) + "\n")
    return "\n".join(out)


def write_out(out: Path, b: Bench, facts: dict, graph: dict, text: str) -> None:
    """DIR/gpu_bench.json, DIR/gpu_bench.md and the run logs as DIR/logs.tar.gz (three files to bring back)."""
    out.mkdir(parents=True, exist_ok=True)
    with tarfile.open(out / "logs.tar.gz", "w:gz") as tar:
        for log in sorted(b.logs.glob("*.jsonl")):
            tar.add(log, arcname=f"logs/{log.name}")
    doc = {"machine": facts, "graph": graph, "args": {k: (str(v) if isinstance(v, Path) else v)
                                                      for k, v in vars(b.args).items()},
           "seconds": time.perf_counter() - b.t0, "runs": [asdict(r) for r in b.runs.values()]}
    (out / "gpu_bench.json").write_text(json.dumps(doc, indent=1) + "\n")
    (out / "gpu_bench.md").write_text(text)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("store", type=Path, help="a prebuilt one-part store")
    p.add_argument("--epochs", type=int, default=50, help="epochs of a run on the GPU")
    p.add_argument("--cpu-epochs", type=int, default=20, help="epochs of a run on the CPU (numpy, torch cpu)")
    p.add_argument("--gat-epochs", type=int, default=30, help="GAT's epochs at most")
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--dropout", type=float, default=0.5)
    p.add_argument("--gat-heads", type=int, default=4, help="GAT: heads of hidden / heads each")
    p.add_argument("--archs", nargs="+", default=list(ARCHS), choices=ARCHS)
    p.add_argument("--threads", type=int, nargs="+", default=list(THREADS), help="the sweep's T (up to the cores)")
    p.add_argument("--sweep-epochs", type=int, default=15)
    p.add_argument("--no-sweep", action="store_true", help="leave out the thread sweep")
    p.add_argument("--skip", type=int, default=10, help="the first epochs of a run not counted")
    p.add_argument("--ranks-store", type=Path, help="a store of P > 1 parts: GCN at P ranks on this machine")
    p.add_argument("--mpirun", help="the launcher for --ranks-store, e.g. 'mpirun --allow-run-as-root' "
                                    "(default: the one beside this Python, else on PATH)")
    p.add_argument("--python", default=sys.executable, help="the Python that runs PyG (torch_geometric)")
    p.add_argument("--timeout", type=float, default=90, help="seconds a run may take")
    p.add_argument("--budget", type=float, default=300, help="seconds in all: later runs are skipped")
    p.add_argument("--out", type=Path, help="write gpu_bench.json, gpu_bench.md and logs.tar.gz (the run logs) here")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    facts = machine_facts(args.python)
    cuda = bool(facts.get("cuda"))
    print(f"gpu_bench: {facts['cpu']}, {facts['cores']} cores; GPU: {facts.get('gpu') or 'none (CUDA rows skipped)'}",
          file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        logs = Path(tmp) / "logs"
        logs.mkdir()
        b = Bench(args, logs)
        graph = export_npz(args.store, Path(tmp) / "graph.npz")
        p = None
        try:  # an interrupted bench still prints and writes what it measured
            compare(b, args.store, Path(tmp) / "graph.npz", cuda)
            if not args.no_sweep:
                thread_sweep(b, args.store)
            p = ranks_check(b, args.ranks_store, cuda) if args.ranks_store else None
        finally:
            text = render(b, facts, graph, p)
            print(text)
            if args.out:
                write_out(args.out, b, facts, graph, text)


if __name__ == "__main__":
    main()
