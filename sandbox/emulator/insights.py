"""The scaler's ``HotKeySource`` port over the emulator's Contributor-Insights figures.

:class:`EmulatorHotKeySource` answers exactly what
``dynashard.cloudwatch.insights.ContributorInsightsHotKeySource`` answers against AWS: the
keys of the PKT report (most throttled) and, in ``ACCESSED_AND_THROTTLED_KEYS`` mode,
of the PKC report (most consuming), joined and ranked by the library's own
``rank_hot_keys``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dynashard.cloudwatch.insights import rank_hot_keys
from dynashard.core.load import MAX_CONTRIBUTORS
from sandbox.emulator.limits import Operation, Resource
from sandbox.emulator.metrics import ContributorInsightsMode

if TYPE_CHECKING:
    from datetime import datetime

    from dynashard.planning.scaling import HotKey
    from sandbox.emulator.core import PartitionEmulator


class EmulatorHotKeySource:
    """``HotKeySource`` reading the partition emulator's per-key figures (in process).

    Parameters
    ----------
    emulator : PartitionEmulator
        The running emulator.
    mode : {"ACCESSED_AND_THROTTLED_KEYS", "THROTTLED_KEYS"}
        Contributor Insights mode emulated: ``THROTTLED_KEYS`` reports throttled keys
        only, with ``consumed_units_per_s`` of 0 (as the AWS adapter does without the
        PKC report).
    operation : Operation
        Write capacity (WCU, the default: the scaler shards writes) or read (RCU).
    max_contributors : int
        Top-N of each report (Contributor Insights allows 1..100); default 100, as the
        library's ``ContributorInsightsHotKeySource`` asks.
    """

    def __init__(
        self,
        emulator: PartitionEmulator,
        mode: ContributorInsightsMode = "ACCESSED_AND_THROTTLED_KEYS",
        operation: Operation = Operation.WRITE,
        max_contributors: int = MAX_CONTRIBUTORS,
    ) -> None:
        self.emulator = emulator
        self.mode: ContributorInsightsMode = mode
        self.operation = operation
        self.max_contributors = max(1, min(MAX_CONTRIBUTORS, max_contributors))

    def hot_keys(
        self, table_name: str, index_name: str | None, start: datetime, end: datetime
    ) -> list[HotKey]:
        """Return the emulator's hot partition keys of a table or GSI in a window.

        Implements ``dynashard.planning.scaling.HotKeySource.hot_keys`` (same parameters; whole
        minutes whose start is in the window count).

        Returns
        -------
        list of HotKey
            As :func:`dynashard.cloudwatch.insights.rank_hot_keys` ranks them, with the
            consumed units of the window divided by its length in seconds.
        """
        t0, t1 = start.timestamp(), end.timestamp()
        window_s = max(1.0, t1 - t0)
        views = self.emulator.metrics.contributors(
            self.mode,
            self.operation,
            Resource(table_name, index_name),
            t0,
            t1,
            n=self.max_contributors,
        )
        throttled = {r.key: r.throttled_events for r in views["most_throttled"]}
        consumed = {r.key: r.consumed_units for r in views.get("most_accessed", [])}
        return rank_hot_keys(throttled, consumed, window_s)
