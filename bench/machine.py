"""What every benchmark's JSON says about its run: when, on what machine, under what load.

The machine is shared, so each result records the load averages at its start and end
(``os.getloadavg``: 1, 5 and 15 minutes); :mod:`bench.report` prints them beside the
figures.
"""

from __future__ import annotations

import os
import platform
from datetime import UTC, datetime
from typing import Any


def load_average() -> list[float] | None:
    """Return the 1-, 5- and 15-minute load averages, rounded, or None where unknown.

    Returns
    -------
    list of float or None
        ``os.getloadavg()`` rounded to 0.01; None on a platform without it.
    """
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def machine(load_start: list[float] | None) -> dict[str, Any]:
    """Return the ``machine`` entry of a result: CPUs, Python, platform, load (no paths).

    Parameters
    ----------
    load_start : list of float or None
        :func:`load_average` taken when the run started.

    Returns
    -------
    dict
        ``{"cpus", "python", "platform", "loadavg_start", "loadavg_end"}``; the end load
        is taken now.
    """
    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "loadavg_start": load_start,
        "loadavg_end": load_average(),
    }


def utc_now() -> str:
    """Return the time now, ISO-8601 UTC to the second (``2026-11-24T15:04:49Z``).

    Returns
    -------
    str
        The ``date`` of a result.
    """
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
