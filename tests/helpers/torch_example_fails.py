"""examples/torch_pyg.py with a failure injected, run as the example runs (``td.run_main``):

    python torch_example_fails.py RANK EPOCH raise|hang|exit EXAMPLE_ARGS...

rank RANK raises a RuntimeError as it starts epoch EPOCH (``raise``), stops answering there (``hang``: sleeps
in native code, holding nothing), or leaves (``exit``: exit code 3, as a rank killed by its own code)."""

import os
import runpy
import sys
import time
from pathlib import Path

rank, epoch, how = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
sys.argv = [sys.argv[0], *sys.argv[4:]]
example = runpy.run_path(str(Path(__file__).resolve().parents[2] / "examples" / "torch_pyg.py"),
                         run_name="torch_pyg")
step = example["epoch_step"]

from shgcn.trainer import torchdist as td  # noqa: E402
from shgcn.trainer.torchdist.launch import job_rank  # noqa: E402


def failing(model, opt, graph, e):
    if (job_rank(), e) == (rank, epoch):
        if how == "raise":
            raise RuntimeError(f"injected failure at epoch {e}")
        if how == "hang":
            time.sleep(10**6)
        os._exit(3)
    return step(model, opt, graph, e)


example["main"].__globals__["epoch_step"] = failing
sys.exit(td.run_main(example["main"], "torch_pyg"))
