"""PNG charts of the ``dynashard`` command (matplotlib, Agg backend: no display needed).

matplotlib comes with the ``chart`` extra (``pip install 'dynashard[chart]'``), not with
``cli``: it is about 170 MB installed for one option. :func:`missing_chart_dependency`
lets the command say so before it reads anything.
"""

from __future__ import annotations

import importlib.util
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dynashard.core.shard_info import ShardInfo


#: The optional extra that installs what the charts need.
CHART_EXTRA = "chart"
#: The module the charts draw with.
CHART_MODULE = "matplotlib"


def missing_chart_dependency() -> str | None:
    """Say what to install when the charts cannot be drawn here.

    Returns
    -------
    str or None
        None when matplotlib can be imported; otherwise a message naming the module and
        the ``chart`` extra that installs it.
    """
    if importlib.util.find_spec(CHART_MODULE) is not None:
        return None
    return (
        f"--chart needs {CHART_MODULE}, which is not installed: "
        f"pip install 'dynashard[{CHART_EXTRA}]'"
    )


def shard_history_chart(info: ShardInfo, path: Path, *, now: float) -> Path:
    """Draw a key's shard count over time as a step chart.

    Parameters
    ----------
    info : ShardInfo
        The key's metadata; ``history`` gives ``(since epoch s, count)`` pairs.
    path : Path
        Where to write the PNG.
    now : float
        Epoch seconds where the last step ends.

    Returns
    -------
    Path
        ``path``.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    # matplotlib plots datetimes through its date converter (its stubs say numbers).
    times: list[Any] = [datetime.fromtimestamp(s, UTC) for s, _ in info.history]
    counts = [count for _, count in info.history]
    times.append(datetime.fromtimestamp(max(now, info.history[-1][0]), UTC))
    counts.append(counts[-1])
    fig, ax = plt.subplots(figsize=(8, 3.5), dpi=100)
    try:
        ax.step(times, counts, where="post", color="tab:blue", linewidth=2)
        ax.scatter(times[:-1], counts[:-1], color="tab:blue", zorder=3)
        ax.set_ylim(0, max(counts) * 1.15 + 1)
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel("shard count N")
        ax.set_xlabel("time (UTC)")
        ax.set_title(f"{info.key}: shard history ({info.strategy_label})")
        ax.grid(True, alpha=0.3)
        fig.autofmt_xdate()
        fig.tight_layout()
        fig.savefig(path)
    finally:
        plt.close(fig)
    return path
