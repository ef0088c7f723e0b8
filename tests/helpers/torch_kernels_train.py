"""``shgcn-train`` with the torch backend's torch kernels (what a GPU runs: masks, attention and losses as torch
operations, eagerly) in place of its CPU default (the numba kernels): ``python tests/helpers/torch_kernels_train.py
STORE --backend torch ...`` under mpirun, for the tests that hold that path to the numpy backend's losses. The
same as ``--torch-kernels torch --torch-compile off``, kept as the tests' entry point."""

import sys

if __name__ == "__main__":
    from shgcn.trainer.cli import main

    sys.exit(main([*sys.argv[1:], "--torch-kernels", "torch", "--torch-compile", "off"]))
