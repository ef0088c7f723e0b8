"""What one training step of ``shgcn-train`` launches and waits for: the trainer run in this process under
torch.profiler, its epochs counted by the run log's epoch records, the first ``--warmup`` epochs (the compile,
CUDA's start) left out and the next ``--active`` recorded.

    python -m benchmarks.device.profile_step --json PATH [--warmup 10] [--active 3] -- STORE TRAINER_OPTIONS

Writes PATH: per step, the CUDA kernel launches (the runtime's and the driver's launch calls), the host
synchronizations (stream, device and event synchronizations, synchronous copies), the asynchronous copies and the
aten operators; each counted call's name with its count per step; and the operators that took the most device
time (on a CPU: host time). Give the trainer at least ``warmup + active`` epochs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

LAUNCHES = frozenset({"cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx",
                      "cudaLaunchCooperativeKernel", "cudaGraphLaunch"})
SYNCS = frozenset({"cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy",
                   "cuStreamSynchronize", "cuCtxSynchronize", "cuEventSynchronize"})
COPIES = frozenset({"cudaMemcpyAsync", "cuMemcpyAsync", "cudaMemcpy2DAsync"})


def counts(rows: list[tuple[str, int]], steps: int) -> dict[str, Any]:
    """Per step: launches, host syncs, async copies and aten operators among ``rows`` ((name, calls) of the
    profiled steps), and every launch, sync and copy call by name."""
    per = {"kernel_launches": 0, "host_syncs": 0, "async_copies": 0, "aten_ops": 0}
    named: dict[str, float] = {}
    for name, n in rows:
        kind = ("kernel_launches" if name in LAUNCHES else "host_syncs" if name in SYNCS else
                "async_copies" if name in COPIES else "aten_ops" if name.startswith("aten::") else None)
        if kind is None:
            continue
        per[kind] += n
        if kind != "aten_ops":
            named[name] = named.get(name, 0) + n
    s = max(1, steps)
    return {"per_step": {k: v / s for k, v in per.items()}, "calls_per_step": {k: v / s for k, v in sorted(named.items())}}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--json", type=Path, required=True)
    p.add_argument("--warmup", type=int, default=10, help="epochs before the profiled ones")
    p.add_argument("--active", type=int, default=3, help="epochs profiled")
    p.add_argument("trainer", nargs=argparse.REMAINDER, help="-- STORE and shgcn-train's options")
    a = p.parse_args(argv)
    targs = a.trainer[1:] if a.trainer[:1] == ["--"] else a.trainer
    if not targs or a.warmup < 1 or a.active < 1:
        p.error("give --warmup >= 1, --active >= 1, and -- STORE with the trainer's options")

    import torch
    from torch.profiler import ProfilerActivity, profile, schedule

    from shgcn.core import runlog
    from shgcn.trainer.cli import main as train

    cuda = torch.cuda.is_available()
    acts = [ProfilerActivity.CPU, *([ProfilerActivity.CUDA] if cuda else [])]
    got: dict[str, Any] = {}

    def ready(prof) -> None:
        avg = prof.key_averages()
        got.update(counts([(e.key, int(e.count)) for e in avg], a.active))
        attr = "self_device_time_total" if cuda else "self_cpu_time_total"
        ops = [e for e in avg if not e.key.startswith("ProfilerStep")]
        top = sorted(ops, key=lambda e: getattr(e, attr, 0.0), reverse=True)[:12]
        got["top"] = [{"name": e.key, "calls_per_step": e.count / a.active,
                       "us_per_step": getattr(e, attr, 0.0) / a.active} for e in top]

    original = runlog.RunLogWriter.write
    with profile(activities=acts, schedule=schedule(wait=a.warmup - 1, warmup=1, active=a.active, repeat=1),
                 on_trace_ready=ready) as prof:
        def write(self, rec) -> None:  # every epoch record ends a step of the profiler's schedule
            original(self, rec)
            if isinstance(rec, runlog.Epoch):
                prof.step()

        runlog.RunLogWriter.write = write
        try:
            rc = train(targs)
        finally:
            runlog.RunLogWriter.write = original
    doc = {"device": "cuda" if cuda else "cpu", "warmup": a.warmup, "active": a.active, "trainer_exit": rc,
           "trainer": targs, **got}
    if not got:
        doc["error"] = f"the run ended before {a.warmup + a.active} epochs: nothing profiled"
    a.json.write_text(json.dumps(doc, indent=1) + "\n")
    print(json.dumps(doc.get("per_step", doc.get("error"))))
    return 0 if got and rc == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
