"""What every benchmark shares: where things are and the child processes it
starts (:mod:`.runs`), and writing its section of benchmarks/RESULTS.md
(:mod:`.results`). The graph and partition cache of the partitioning and
epoch-model benchmarks is :mod:`.graphs`; :mod:`.fixtures` holds a small
dataset directory written by hand."""

from benchmarks.common.results import RESULTS, header, machine, table, versions, write_section
from benchmarks.common.runs import REPO, SHARED, bench_env, build_store, mpirun, store_info

__all__ = ["REPO", "RESULTS", "SHARED", "bench_env", "build_store", "header", "machine", "mpirun", "store_info",
           "table", "versions", "write_section"]
