"""One JSON file per rank, DIR/rank-R.json (lines on a shared stdout can interleave): the rank (the
launcher's), its CPU affinity (``os.sched_getaffinity``), the thread variables and numba's thread count after
``shgcn-train --threads T``'s own setting of them (:func:`shgcn.trainer.cli.share_cores`). Started as the
threads sweep starts its runs:

    mpirun -n P python -m benchmarks.device.probe --threads T --out DIR
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--out", type=Path, required=True, help="a folder: each rank writes rank-R.json there")
    a = p.parse_args(argv)
    from shgcn.trainer.cli import share_cores
    from shgcn.trainer.threads import THREAD_VARS, launcher_rank

    threads = share_cores(a.threads)
    import numba

    rank = launcher_rank()
    (a.out / f"rank-{rank}.json").write_text(json.dumps({
        "rank": rank, "threads": threads, "affinity": sorted(os.sched_getaffinity(0)),
        "numba_threads": numba.get_num_threads(), "env": {v: os.environ.get(v) for v in (*THREAD_VARS, "OMP_WAIT_POLICY")}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
