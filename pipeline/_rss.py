"""Peak resident memory, as the build reports it."""

from __future__ import annotations

import resource


def peak_rss_mib() -> float:
    """Peak resident memory of this process plus the largest of its
    waited-for children (e.g. Mt-KaHyPar's child process), MiB. Linux
    reports ``ru_maxrss`` in KiB."""
    kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss + resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return round(kib / 1024, 1)
