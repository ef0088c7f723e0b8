"""Run the trainer (``python -m benchmarks.training._phases OUT.json
TRAINER-ARGS...``, under mpirun or not) with its mini-batch step's phases
timed per rank: each phase's wall seconds and the rank's thread CPU seconds
in it (``cpu:`` keys: the time the rank ran, without the time other processes
on a loaded machine took its core) summed over the epochs after the first,
written by rank 0 as JSON (one dict per rank) to OUT.json. Used by
``minibatch_bench phases``; the wrappers add a few microseconds per call.

A wrapped function that calls itself, or another wrapped function under the
same key (a symmetric SpMM's transpose calls its forward), counts once."""

from __future__ import annotations

import json
import sys
import time
from collections import defaultdict

from shgcn.trainer import cli

cli.share_cores(cli.threads_option(sys.argv[2:]))  # before numpy loads, as the trainer's own entry point

from shgcn.trainer import loop, minibatch, optim, spmm, targets  # noqa: E402
from shgcn.trainer.archs import gcn  # noqa: E402
from shgcn.trainer.backends.numpy import NumpyBackend  # noqa: E402
from shgcn.trainer.exchanges import Exchange  # noqa: E402

ACC: dict[str, float] = defaultdict(float)
ON = {"epochs": 0, "measure": False}
DEPTH: dict[str, int] = defaultdict(int)  # calls under way per key: only the outermost counts


def wrap(owner, name: str, key: str) -> None:
    real = getattr(owner, name)

    def timed(*args, **kwargs):
        if not ON["measure"] or DEPTH[key]:
            return real(*args, **kwargs)
        DEPTH[key] += 1
        t0, c0 = time.perf_counter(), time.thread_time()
        try:
            return real(*args, **kwargs)
        finally:
            wall, cpu = time.perf_counter() - t0, time.thread_time() - c0
            ACC[key] += wall
            ACC["cpu:" + key] += cpu
            if key == "dropout" and not DEPTH["forward"]:  # the next batch's input, made outside forward
                ACC["dropout (next input)"] += wall
                ACC["cpu:dropout (next input)"] += cpu
            DEPTH[key] -= 1

    static = isinstance(getattr(owner, "__dict__", {}).get(name), staticmethod)
    setattr(owner, name, staticmethod(timed) if static else timed)


def epoch_wrapper():
    real = loop.minibatch_epoch

    def timed(*args, **kwargs):
        ON["measure"] = ON["epochs"] > 0  # the first epoch warms up
        t0, c0 = time.perf_counter(), time.thread_time()
        try:
            return real(*args, **kwargs)
        finally:
            if ON["measure"]:
                ACC["epoch"] += time.perf_counter() - t0
                ACC["cpu:epoch"] += time.thread_time() - c0
            ON["epochs"] += 1
            ON["measure"] = False

    loop.minibatch_epoch = timed


wrap(minibatch.MiniBatches, "view", "plan (view)")
wrap(NumpyBackend, "act_dropout", "dropout")
# every SpMM, forward and backward: the products over the exchange (the 1D LocalProduct under Scaled; a symmetric
# matrix's transpose is its forward, counted once). Until issue 59 only Scaled.forward was wrapped, so the
# backward's SpMM and its exchange wait were counted in "dense".
wrap(spmm.LocalProduct, "forward", "spmm")
wrap(spmm.LocalProduct, "transpose", "spmm")
wrap(Exchange, "_wait", "exchange wait")
wrap(gcn.GCN, "forward", "forward")
wrap(gcn.GCN, "backward", "backward")
wrap(targets.SingleLabel, "loss", "loss")
wrap(optim.Adam, "step", "adam")
wrap(loop, "_minibatch_step", "step")
epoch_wrapper()


def main() -> int:
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(sys.argv) > 1 else 2
    out = sys.argv[1]
    rc = cli.main(sys.argv[2:])
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    gathered = comm.gather({**ACC, "epochs": ON["epochs"] - 1}, root=0)
    if comm.rank == 0:
        with open(out, "w") as f:
            json.dump(gathered, f)
    return rc


if __name__ == "__main__":
    sys.exit(main())
