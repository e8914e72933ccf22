"""What every benchmark's JSON says about its run: when, on what machine, under what load.

The machine is shared, so each result records the load averages at its start and end
(``os.getloadavg``: 1, 5 and 15 minutes); :mod:`bench.report` prints them beside the
figures.
"""

from __future__ import annotations

import json
import os
import platform
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
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


def write_result(path: Path, result: Mapping[str, Any]) -> None:
    """Write a benchmark's result as indented JSON, creating its folder.

    Parameters
    ----------
    path : Path
        ``bench/results/<benchmark>.json`` unless ``--output`` says otherwise.
    result : mapping
        The document: ``benchmark``, ``date``, ``machine``, its figures and ``targets``.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n")


def print_targets(targets: Mapping[str, Any], path: Path, wall_s: float) -> None:
    """Print which targets a run met and where its result went.

    Parameters
    ----------
    targets : mapping
        Target name -> ``{"met": bool, ...}``.
    path : Path
        The result file written.
    wall_s : float
        The run's wall time, seconds.
    """
    print(f"targets: { {name: t['met'] for name, t in targets.items()} }")
    print(f"wrote {path.name} in {wall_s:.0f} s")
