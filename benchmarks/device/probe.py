"""One line of JSON per rank: the rank (the launcher's), its CPU affinity (``os.sched_getaffinity``), the thread
variables and numba's thread count after ``shgcn-train --threads T``'s own setting of them
(:func:`shgcn.trainer.cli.share_cores`). Started as the threads sweep starts its runs:

    mpirun -n P python -m benchmarks.device.probe --threads T
"""

from __future__ import annotations

import argparse
import json
import os
import sys


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, required=True)
    a = p.parse_args(argv)
    from shgcn.trainer.cli import share_cores
    from shgcn.trainer.threads import THREAD_VARS, launcher_rank

    threads = share_cores(a.threads)
    import numba

    print(json.dumps({"rank": launcher_rank(), "threads": threads, "affinity": sorted(os.sched_getaffinity(0)),
                      "numba_threads": numba.get_num_threads(),
                      "env": {v: os.environ.get(v) for v in (*THREAD_VARS, "OMP_WAIT_POLICY")}}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
