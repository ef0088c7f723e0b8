"""Where do the build's time and memory go, how fast are its readers, and how
does it scale out?

- ``build_stages``: wall time by stage and peak memory of ``pipeline build``;
- ``scale_build``: ingest speed on one core, bytes through the client and the scheduler, R-MAT builds on an
  external cluster (one with a worker killed), a build beside CPU hogs, KaMinPar against METIS;
- ``dataset_dirs``: OGB and GraphSAINT directories at 1M vertices, streamed;
- ``compare_stores``: are two stores the same, byte for byte? (a tool; writes no section)
"""
