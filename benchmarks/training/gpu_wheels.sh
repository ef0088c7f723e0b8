#!/usr/bin/env bash
# The wheels a GPU machine that cannot install packages needs to run the trainer and
# benchmarks/training/gpu_bench.py beside its own torch, torch_geometric, numpy, scipy, numba, mpi4py,
# pandas, xarray, psutil, filelock and tqdm (issue 48; README, "A GPU machine"): the store's reader
# (zarr and what it imports: numcodecs, donfig and its PyYAML, google-crc32c) and shgcn itself.
# Run it from the repository root on a machine with PyPI; it fills .whl/ (git-ignored).
#
#     bash benchmarks/training/gpu_wheels.sh [PYTHON_VERSION]     # default 3.12 (the GPU machine's)
#
# On the GPU machine (no network, no pip install into its Python):
#
#     python3 -m pip install --no-index --no-deps --target "$HOME/shgcn-site" .whl/*.whl
#     export PYTHONPATH="$HOME/shgcn-site"
#     python3 -m benchmarks.training.gpu_bench STORE --out results
#
# The versions are those of the development environment the trainer is tested in. The trainer imports
# nothing else beyond the machine's packages: neither dask, distributed, pooch nor python-json-logger
# (the pipeline's), nor crc32c (zarr >= 3.1.4 uses google-crc32c); msgpack and fsspec are optional
# imports of numcodecs and zarr.
set -euo pipefail

PYVER="${1:-3.12}"
DEST="${WHL_DIR:-.whl}"   # WHL_DIR: another folder (e.g. for a test with another Python)
PINS=(
    zarr==3.1.6
    numcodecs==0.16.6
    donfig==0.8.1.post1
    google-crc32c==1.9.0
    PyYAML==6.0.4
)

cd "$(dirname "$0")/../.."
mkdir -p "$DEST"
rm -f "$DEST"/*.whl
for pin in "${PINS[@]}"; do
    python3 -m pip download --no-deps --only-binary=:all: --python-version "$PYVER" --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux2014_x86_64 -d "$DEST" "$pin"
done
python3 -m pip wheel --no-deps -w "$DEST" .
ls -l "$DEST"
du -sh "$DEST"
