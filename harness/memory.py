"""Peak memory of the running process, for the run record's ``peak_rss_mib`` (issue 31 item 6)."""

from __future__ import annotations

import resource
import sys

__all__ = ["peak_rss_mib"]


def peak_rss_mib() -> float:
    """Peak resident memory of this process so far, MiB, one decimal (``resource.getrusage(RUSAGE_SELF).ru_maxrss``:
    KiB on Linux, bytes on macOS). A high-water mark: read after each step of a run, a step's own peak shows as a
    rise over the previous reading (and is hidden when an earlier step peaked higher)."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(rss / (1024 * 1024 if sys.platform == "darwin" else 1024), 1)
