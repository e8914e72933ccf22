"""What CloudWatch and Contributor Insights would record, per minute.

Metric names are DynamoDB's own (Developer Guide, "DynamoDB Metrics and dimensions";
"CloudWatch throttling metrics"), with the table (``TableName``) and, for a GSI,
``GlobalSecondaryIndexName`` as dimensions. The top-N follows "CloudWatch Contributor
Insights for DynamoDB": most accessed and most throttled partition keys, with the two
modes ``ACCESSED_AND_THROTTLED_KEYS`` and ``THROTTLED_KEYS``.

Thread-safe (one lock), so a test or the sandbox can read figures while the server's
event loop writes them from another thread.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from dataclasses import dataclass
from typing import Final, Literal

from sandbox.emulator.limits import LimitType, Operation, Resource

CONSUMED_WCU: Final = "ConsumedWriteCapacityUnits"
CONSUMED_RCU: Final = "ConsumedReadCapacityUnits"
THROTTLED_REQUESTS: Final = "ThrottledRequests"
READ_THROTTLE_EVENTS: Final = "ReadThrottleEvents"
WRITE_THROTTLE_EVENTS: Final = "WriteThrottleEvents"

#: Per-cause throttle-event metric, by (operation, limit type).
THROTTLE_EVENT_METRICS: Final[dict[tuple[Operation, LimitType], str]] = {
    (Operation.READ, LimitType.KEY_RANGE): "ReadKeyRangeThroughputThrottleEvents",
    (Operation.WRITE, LimitType.KEY_RANGE): "WriteKeyRangeThroughputThrottleEvents",
    (Operation.READ, LimitType.PROVISIONED): "ReadProvisionedThroughputThrottleEvents",
    (Operation.WRITE, LimitType.PROVISIONED): "WriteProvisionedThroughputThrottleEvents",
    (Operation.READ, LimitType.ACCOUNT): "ReadAccountLimitThrottleEvents",
    (Operation.WRITE, LimitType.ACCOUNT): "WriteAccountLimitThrottleEvents",
    (Operation.READ, LimitType.MAX_ON_DEMAND): "ReadMaxOnDemandThroughputThrottleEvents",
    (Operation.WRITE, LimitType.MAX_ON_DEMAND): "WriteMaxOnDemandThroughputThrottleEvents",
}

#: Contributor Insights mode (``ContributorInsightsMode`` in the DynamoDB API).
ContributorInsightsMode = Literal["ACCESSED_AND_THROTTLED_KEYS", "THROTTLED_KEYS"]

#: Minutes of figures kept; older minutes are dropped as new ones arrive.
DEFAULT_RETENTION_MINUTES: Final = 180


def minute_of(ts: float) -> int:
    """Return the start of the minute holding ``ts``, epoch seconds.

    Parameters
    ----------
    ts : float
        Epoch seconds.

    Returns
    -------
    int
        ``floor(ts / 60) * 60``.
    """
    return int(ts // 60) * 60


@dataclass(frozen=True, slots=True)
class KeyFigures:
    """One partition key's figures over a time range (a Contributor Insights row).

    Parameters
    ----------
    key : str
        Partition key value.
    consumed_units : float
        RCU or WCU consumed, units (sum over the range).
    requests : int
        Admitted item operations.
    throttled_events : int
        Throttled item operations.
    """

    key: str
    consumed_units: float
    requests: int
    throttled_events: int


class Metrics:
    """Per-minute CloudWatch-like counters and Contributor-Insights-like key figures.

    Parameters
    ----------
    retention_minutes : int
        Minutes kept; figures older than this before the newest minute are dropped.
    """

    def __init__(self, retention_minutes: int = DEFAULT_RETENTION_MINUTES) -> None:
        self.retention_minutes = retention_minutes
        self._lock = threading.Lock()
        # (minute, metric, table, index) -> value
        self._counters: dict[tuple[int, str, str, str | None], float] = defaultdict(float)
        # (minute, operation, table, index) -> key -> [units, requests, throttles]
        self._keys: dict[tuple[int, Operation, str, str | None], dict[str, list[float]]] = {}
        self._newest_minute = 0
        # ThrottlingReason.reason -> throttle events since start (or reset), never rolled
        self._reasons: dict[str, int] = defaultdict(int)

    def _roll(self, minute: int) -> None:
        if minute <= self._newest_minute:
            return
        self._newest_minute = minute
        oldest = minute - self.retention_minutes * 60
        for c in [k for k in self._counters if k[0] < oldest]:
            del self._counters[c]
        for k in [k for k in self._keys if k[0] < oldest]:
            del self._keys[k]

    def add(self, metric: str, resource: Resource, value: float, ts: float) -> None:
        """Add ``value`` to a metric in the minute of ``ts``.

        Parameters
        ----------
        metric : str
            CloudWatch metric name, e.g. ``ConsumedWriteCapacityUnits``.
        resource : Resource
            Table (and GSI) dimension.
        value : float
            Amount (units or a count).
        ts : float
            Epoch seconds.
        """
        minute = minute_of(ts)
        with self._lock:
            self._roll(minute)
            self._counters[(minute, metric, resource.table, resource.index)] += value

    def add_throttle_reason(self, reason: str, events: int = 1) -> None:
        """Count throttle events by their ``ThrottlingReason.reason``.

        Parameters
        ----------
        reason : str
            E.g. ``TableWriteKeyRangeThroughputExceeded``.
        events : int
            Throttle events to add.
        """
        with self._lock:
            self._reasons[reason] += events

    def throttle_reasons(self) -> dict[str, int]:
        """Return the throttle events by reason since the start (or the last reset).

        Unlike the per-minute metrics these totals are never dropped, so a caller can
        sample them at any rate and take differences.

        Returns
        -------
        dict of str to int
            ``ThrottlingReason.reason`` -> throttle events, sorted by reason.
        """
        with self._lock:
            return dict(sorted(self._reasons.items()))

    def record_key(
        self,
        operation: Operation,
        resource: Resource,
        key: str,
        ts: float,
        *,
        units: float = 0.0,
        throttled: bool = False,
        count: bool = True,
    ) -> None:
        """Record one item operation on a partition key (consumed or throttled).

        Parameters
        ----------
        operation : Operation
            Read or write.
        resource : Resource
            Table or GSI.
        key : str
            Partition key value.
        ts : float
            Epoch seconds.
        units : float
            Units consumed (0 for a throttled operation).
        throttled : bool
            True when the operation was throttled.
        count : bool
            False to add units without counting an operation (the rest of a read
            charged once its size is known).
        """
        minute = minute_of(ts)
        with self._lock:
            self._roll(minute)
            per_key = self._keys.setdefault((minute, operation, resource.table, resource.index), {})
            row = per_key.get(key)
            if row is None:
                row = per_key[key] = [0.0, 0.0, 0.0]
            row[0] += units
            if throttled:
                row[2] += 1
            elif count:
                row[1] += 1

    def total(self, metric: str, resource: Resource, start: float, end: float) -> float:
        """Return the sum of a metric over the minutes in ``[start, end)``.

        Parameters
        ----------
        metric : str
            Metric name.
        resource : Resource
            Table (and GSI).
        start, end : float
            Epoch seconds; a minute counts when its start is in the range.

        Returns
        -------
        float
            The sum (0.0 when nothing was recorded).
        """
        return sum(self.series(metric, resource, start, end).values())

    def series(self, metric: str, resource: Resource, start: float, end: float) -> dict[int, float]:
        """Return a metric per minute over ``[start, end)``.

        Parameters
        ----------
        metric : str
            Metric name.
        resource : Resource
            Table (and GSI).
        start, end : float
            Epoch seconds.

        Returns
        -------
        dict of int to float
            Minute start (epoch seconds) -> value, minutes with data only.
        """
        lo = minute_of(start)
        with self._lock:
            return {
                m: v
                for (m, name, table, index), v in self._counters.items()
                if name == metric
                and table == resource.table
                and index == resource.index
                and lo <= m < end
            }

    def snapshot(self) -> list[dict[str, object]]:
        """Return every counter, for the admin route.

        Returns
        -------
        list of dict
            ``{"minute", "metric", "table", "index", "value"}`` rows, sorted.
        """
        with self._lock:
            rows = sorted(self._counters.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2]))
        return [
            {"minute": m, "metric": name, "table": table, "index": index, "value": value}
            for (m, name, table, index), value in rows
        ]

    def key_figures(
        self, operation: Operation, resource: Resource, start: float, end: float
    ) -> list[KeyFigures]:
        """Return every partition key's figures over ``[start, end)``.

        Parameters
        ----------
        operation : Operation
            Read or write.
        resource : Resource
            Table or GSI.
        start, end : float
            Epoch seconds.

        Returns
        -------
        list of KeyFigures
            Unordered.
        """
        lo = minute_of(start)
        sums: dict[str, list[float]] = {}
        with self._lock:
            for (m, op, table, index), per_key in self._keys.items():
                if op != operation or table != resource.table or index != resource.index:
                    continue
                if not lo <= m < end:
                    continue
                for key, row in per_key.items():
                    acc = sums.setdefault(key, [0.0, 0.0, 0.0])
                    acc[0] += row[0]
                    acc[1] += row[1]
                    acc[2] += row[2]
        return [KeyFigures(k, v[0], int(v[1]), int(v[2])) for k, v in sums.items()]

    def top_keys(
        self,
        operation: Operation,
        resource: Resource,
        start: float,
        end: float,
        *,
        by: Literal["accessed", "throttled"] = "accessed",
        n: int = 10,
    ) -> list[KeyFigures]:
        """Return the top-N partition keys, most accessed or most throttled first.

        Parameters
        ----------
        operation : Operation
            Read or write.
        resource : Resource
            Table or GSI.
        start, end : float
            Epoch seconds.
        by : {"accessed", "throttled"}
            Rank by consumed units, or by throttled events (keys never throttled are
            left out).
        n : int
            Most rows returned.

        Returns
        -------
        list of KeyFigures
            Ranked, ties broken by key.
        """
        rows = self.key_figures(operation, resource, start, end)
        if by == "throttled":
            rows = [r for r in rows if r.throttled_events > 0]
            rows.sort(key=lambda r: (-r.throttled_events, -r.consumed_units, r.key))
        else:
            rows = [r for r in rows if r.requests > 0]
            rows.sort(key=lambda r: (-r.consumed_units, -r.requests, r.key))
        return rows[:n]

    def contributors(
        self,
        mode: ContributorInsightsMode,
        operation: Operation,
        resource: Resource,
        start: float,
        end: float,
        n: int = 10,
    ) -> dict[str, list[KeyFigures]]:
        """Return the Contributor Insights views of a mode.

        Parameters
        ----------
        mode : {"ACCESSED_AND_THROTTLED_KEYS", "THROTTLED_KEYS"}
            ``THROTTLED_KEYS`` gives the most throttled keys only;
            ``ACCESSED_AND_THROTTLED_KEYS`` also gives the most accessed keys.
        operation : Operation
            Read or write.
        resource : Resource
            Table or GSI.
        start, end : float
            Epoch seconds.
        n : int
            Rows per view.

        Returns
        -------
        dict
            ``{"most_throttled": [...]}`` and, in the accessed mode, ``"most_accessed"``.

        Raises
        ------
        ValueError
            For an unknown mode.
        """
        if mode not in ("ACCESSED_AND_THROTTLED_KEYS", "THROTTLED_KEYS"):
            raise ValueError(f"unknown Contributor Insights mode {mode!r}")
        views = {
            "most_throttled": self.top_keys(operation, resource, start, end, by="throttled", n=n)
        }
        if mode == "ACCESSED_AND_THROTTLED_KEYS":
            views["most_accessed"] = self.top_keys(
                operation, resource, start, end, by="accessed", n=n
            )
        return views

    def reset(self) -> None:
        """Drop every figure."""
        with self._lock:
            self._counters.clear()
            self._keys.clear()
            self._reasons.clear()
            self._newest_minute = 0
