"""Peak resident memory of this process, as the shp record reports it."""

from __future__ import annotations

import resource


def peak_rss_mib() -> float:
    """Peak resident memory of this process so far, MiB (Linux reports
    ``ru_maxrss`` in KiB). Children are not counted: a library that runs a
    helper program at import (ldconfig, say) must not inflate the figure;
    each partitioner child reports its own peak."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
