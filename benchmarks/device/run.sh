#!/usr/bin/env bash
# The device run (issue 60): one call on a GPU machine measures the GPU, the CPU node and the network
# calibration, each part writing its own JSON under $OUT (default: this folder's out/) as it measures.
# `python -m benchmarks.device prepare DIR` copies this file into DIR beside the wheels and the stores.
#
#     bash DIR/run.sh [--dry-run] [--budget SECONDS]      # default budget 480 s (8 minutes, wall)
#
# --dry-run: the CI's check on a CPU (tiny stores, torch's CPU device standing in for CUDA, T = 1, 2).
# Environment: OUT (where the JSONs go), SHGCN_PYTHON (the Python to use, default python3), SHGCN_REPO (the
# checkout whose benchmarks/ to run, default: the folder above DIR that holds benchmarks/device).
set -uo pipefail

started="$(date +%s)"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dry=()
budget=480
usage="usage: bash run.sh [--dry-run] [--budget SECONDS]"
while [ $# -gt 0 ]; do
    case "$1" in
        --dry-run) dry=(--dry-run) ;;
        --budget) [ $# -ge 2 ] || { echo "run.sh: error: --budget needs SECONDS; $usage" >&2; exit 2; }
                  budget="$2"; shift ;;
        --budget=*) budget="${1#--budget=}" ;;
        -h|--help) echo "$usage"; exit 0 ;;
        *) echo "run.sh: error: unknown argument '$1'; $usage" >&2; exit 2 ;;
    esac
    shift
done
case "$budget" in
    ''|*[!0-9]*) echo "run.sh: error: --budget '$budget': whole seconds, e.g. 480" >&2; exit 2 ;;
esac
[ -f "$here/prepared.json" ] || { echo "run.sh: error: $here/prepared.json is missing: run 'python -m benchmarks.device prepare $here' first" >&2; exit 2; }

out="${OUT:-$here/out}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
py="${SHGCN_PYTHON:-python3}"
command -v "$py" >/dev/null 2>&1 || { echo "run.sh: error: no Python '$py' (set SHGCN_PYTHON)" >&2; exit 2; }

# what prepare made it for: a dry run or not, and the Python of the wheels
read -r was_dry wheel_py this_py < <("$py" -c 'import json, sys; d = json.load(open(sys.argv[1]))
print(int(bool(d.get("dry_run"))), d.get("python_version", "?"), "%d.%d" % sys.version_info[:2])' "$here/prepared.json")
if [ "${was_dry:-0}" != "${#dry[@]}" ]; then
    if [ "${was_dry:-0}" = 1 ]; then w=with; else w=without; fi
    echo "run.sh: error: $here was prepared $w --dry-run; run it $w --dry-run, or prepare it again" >&2
    exit 2
fi
if [ "$wheel_py" != "$this_py" ]; then
    echo "run.sh: warning: the wheels are for Python $wheel_py, this is $this_py (prepare --python-version $this_py);" \
         "the parts use what the machine has" >&2
fi

repo="${SHGCN_REPO:-}"
if [ -z "$repo" ]; then  # the checkout this folder sits in (carried beside it), else the one it was prepared in
    d="$here"
    while [ "$d" != "/" ]; do
        d="$(dirname "$d")"
        if [ -f "$d/benchmarks/device/__init__.py" ]; then repo="$d"; break; fi
    done
fi
if [ -z "$repo" ]; then
    repo="$("$py" -c 'import json, sys; print(json.load(open(sys.argv[1]))["repo"])' "$here/prepared.json")"
fi
[ -f "$repo/benchmarks/device/__init__.py" ] || { echo "run.sh: error: no checkout with benchmarks/device found (set SHGCN_REPO)" >&2; exit 2; }

# the wheels beside the machine's own packages (--no-deps: its torch, numpy, numba, mpi4py stay); a Python without
# pip unpacks them (a wheel is a zip of what goes into site-packages)
work="$(mktemp -d "${TMPDIR:-/tmp}/shgcn-device.XXXXXX")"
site="$work/site"
mkdir -p "$site"
{
    echo "python: $("$py" -c 'import sys; print(sys.version)')"
    if "$py" -m pip --version >/dev/null 2>&1; then
        "$py" -m pip install --isolated --no-index --no-deps --no-compile --disable-pip-version-check --find-links "$here/wheels" \
            --target "$site" zarr numcodecs donfig google-crc32c PyYAML shgcn
    else
        echo "no pip: unpacking the wheels"
        for w in "$here"/wheels/*.whl; do "$py" -m zipfile -e "$w" "$site"; done
    fi
} >"$out/install.log" 2>&1 || echo "run.sh: installing the wheels failed (see $out/install.log); the parts use what the machine has" >&2
export PYTHONPATH="$site:$repo${PYTHONPATH:+:$PYTHONPATH}"
export NUMBA_CACHE_DIR="${NUMBA_CACHE_DIR:-$work/numba-cache}"
export TORCHINDUCTOR_CACHE_DIR="${TORCHINDUCTOR_CACHE_DIR:-$work/inductor-cache}"
export MPLCONFIGDIR="$work/mpl"

cd "$repo" || exit 2
"$py" -m benchmarks.device run "$here" --out "$out" --work "$work" --budget "$budget" --started "$started" ${dry[@]+"${dry[@]}"}
rc=$?
rm -rf "$work"
exit "$rc"
