"""``shgcn-train`` with the torch backend's torch kernels (what a GPU runs: masks, attention and losses as torch
operations, eagerly) in place of its CPU default (the numba kernels): ``python tests/helpers/torch_kernels_train.py
STORE --backend torch ...`` under mpirun, for the tests that hold that path to the numpy backend's losses."""

import sys

from shgcn.trainer import backends
from shgcn.trainer.backends.torch import TorchBackend

backends.BACKENDS["torch"] = lambda device="cpu", threads=1: TorchBackend(device, threads, compile="off", kernels="torch")

if __name__ == "__main__":
    from shgcn.trainer.cli import main

    sys.exit(main(sys.argv[1:]))
