"""What the fleet simulation puts behind the library's ports: metadata, CloudWatch, Insights.

In memory and in emulated time: :class:`MemoryMetadataStore` is the metadata table
(DynamoDB's conditional semantics; the library's own
:class:`~dynashard.dynamodb.shard_metadata.ShardMetadata` runs on it, cooldown and
optimistic lock included); :class:`Figures` keeps per minute what DynamoDB publishes
(``WriteKeyRangeThroughputThrottleEvents``) and what the Contributor Insights rules
count (PKT, PKC per physical key; the stack's write-load rules per logical key, one per
part of the key space); :class:`FakeCloudWatch` and :class:`FakeDynamoDB` answer the
library's boto3 adapters (:mod:`dynashard.cloudwatch.insights`) from those figures, with
the report's top-N (``MaxContributorCount``, 1..100), ``OrderBy="Sum"`` and ``Period``,
and count the calls. Which keys a write-load rule counts is what its body's filters say
of the writers' own ``write load`` lines (:func:`write_load_masks`: the library's
:func:`~dynashard.core.load.summarize_write_load` fields, the sandbox's rule evaluation).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import numpy as np

from dynashard.core.load import WRITE_LOAD_MESSAGE, summarize_write_load
from dynashard.core.shard_info import ShardInfo
from sandbox.local_aws.logs import LocalInsightRule

#: Emulated time starts here (epoch seconds, 2026-01-01T00:00:00Z).
EPOCH0 = 1_767_225_600
#: Rule names DynamoDB gives its Contributor Insights rules (``DynamoDBContributorInsights-*``).
PKT_RULE = "DynamoDBContributorInsights-PKT-{table}-0"
PKC_RULE = "DynamoDBContributorInsights-PKC-{table}-0"


class MemoryMetadataStore:
    """The metadata table in memory: :class:`~dynashard.dynamodb.metadata_store.MetadataStore`.

    Parameters
    ----------
    on_change : callable
        ``on_change(key, previous, count, now)`` after every change of N (the simulation
        moves its writers' counts with it).
    """

    def __init__(self, on_change: Callable[[str, int, int, int], None]) -> None:
        self.items: dict[str, ShardInfo] = {}
        self.on_change = on_change
        self.reads = 0
        self.writes = 0

    def get(self, key: str) -> ShardInfo | None:
        self.reads += 1
        return self.items.get(key)

    def create(
        self, key: str, count: int, now: int, *, gsi1: tuple[str, str] | None = None
    ) -> ShardInfo | None:
        self.writes += 1
        if key in self.items:
            return None
        self.items[key] = ShardInfo(key, count, now, ((now, count),))
        return self.items[key]

    def update(
        self,
        key: str,
        count: int,
        expected_last_updated: int,
        now: int,
        *,
        grown_for: str | None = None,
    ) -> ShardInfo | None:
        self.writes += 1
        info = self.items.get(key)
        if info is None or info.last_updated != expected_last_updated:
            return None
        grown = info.grown_for | ({grown_for} if grown_for else set())
        self.items[key] = replace(
            info,
            number_of_shards=count,
            last_updated=now,
            history=(*info.history, (now, count)),
            grown_for=frozenset(grown),
        )
        self.on_change(key, info.number_of_shards, count, now)
        return self.items[key]

    def scan_sharded(self, min_count: int) -> list[ShardInfo]:
        self.reads += len(self.items)  # a Scan reads every item
        return [i for i in self.items.values() if i.number_of_shards > min_count]

    def __getattr__(self, name: str) -> Any:  # put_strategy, adopt, ...: not simulated
        raise NotImplementedError(f"MemoryMetadataStore.{name} is not simulated")


@dataclass
class Minute:
    """What one emulated minute left in CloudWatch, per logical key (arrays of length K).

    ``cons_lo`` / ``thr_lo``: units consumed and requests throttled on each of shards
    ``0..n_lo-1``; ``cons_hi`` / ``thr_hi``: on each of shards ``n_lo..n_hi-1`` (the shards
    only the larger of the writers' two counts reaches while their caches turn over).
    """

    offered: np.ndarray
    cons_lo: np.ndarray
    cons_hi: np.ndarray
    thr_lo: np.ndarray
    thr_hi: np.ndarray
    n_lo: np.ndarray
    n_hi: np.ndarray
    throttle_events: float = 0.0


@dataclass
class Figures:
    """Per-minute figures of the whole run, and what may be read of them when.

    Parameters
    ----------
    keys : sequence of str
        Logical keys, index = position.
    delay_minutes : int
        Minutes after its end that a minute's figures become readable (CloudWatch's
        publication delay).
    keep_minutes : int
        Minutes of per-key figures kept (the longest window a report asks for); older
        ones are dropped, so a run of days holds a bounded memory. ``throttle_events``
        (the table's metric, one float a minute) is kept whole.
    """

    keys: Sequence[str]
    delay_minutes: int = 1
    keep_minutes: int = 60
    minutes: dict[int, Minute] = field(default_factory=dict)
    throttle_events: list[float] = field(default_factory=list)
    now: float = float(EPOCH0)

    def add(self, index: int, minute: Minute) -> None:
        """Record minute ``index`` and drop the minutes older than ``keep_minutes``."""
        self.minutes[index] = minute
        self.minutes.pop(index - self.keep_minutes, None)

    def readable(self, start: datetime, end: datetime) -> list[tuple[int, Minute]]:
        """Return the minutes whose start is in ``[start, end)`` and that are published."""
        first = max(0, int((start.timestamp() - EPOCH0) // 60))
        last = int(-(-(end.timestamp() - EPOCH0) // 60))  # ceil
        published = int((self.now - EPOCH0) // 60) - self.delay_minutes
        stop = min(last, published, max(self.minutes, default=-1) + 1)
        if stop > first and first not in self.minutes:
            raise ValueError(f"minute {first} was dropped (keep_minutes {self.keep_minutes})")
        return [(m, self.minutes[m]) for m in range(first, stop)]


def _stamp(minute: int) -> datetime:
    return datetime.fromtimestamp(EPOCH0 + 60 * minute, UTC)


def _report(
    rows: list[tuple[str, float, list[float]]],
    limit: int,
    unique: int,
    stamps: Sequence[datetime] = (),
    uniques: Sequence[int] | None = None,
) -> dict[str, Any]:
    """A ``GetInsightRuleReport`` answer: each period's start in ``stamps``.

    ``uniques`` (contributors counted per period) gives the rule's own
    ``MetricDatapoints`` (``UniqueContributors``), which the shrink sweep reads to tell
    a live report from an empty one (:func:`dynashard.planning.shrinking.report_gap`).
    """
    rows.sort(key=lambda r: (-r[1], r[0]))
    report: dict[str, Any] = {
        "Contributors": [
            {
                "Keys": [key],
                "ApproximateAggregateValue": total,
                "Datapoints": [
                    {"Timestamp": t, "ApproximateValue": v}
                    for t, v in zip(stamps, points, strict=True)
                ],
            }
            for key, total, points in rows[:limit]
        ],
        "ApproximateUniqueCount": unique,
        "AggregationStatistic": "Sum",
        "KeyLabels": ["PK"],
    }
    if uniques is not None:
        report["MetricDatapoints"] = [
            {"Timestamp": t, "UniqueContributors": float(n)}
            for t, n in zip(stamps, uniques, strict=True)
        ]
    return report


def write_load_masks(
    keys: Sequence[str], bodies: Mapping[str, str], writer_parts: int
) -> dict[str, np.ndarray]:
    """Return, per write-load rule, which logical keys' lines it counts.

    Each key's ``write load`` line is the writers' own (the message and
    :meth:`~dynashard.core.load.KeyWriteLoad.log_fields` of
    :func:`~dynashard.core.load.summarize_write_load`, with the writers' parts), and a
    rule counts it when its body's filters match it
    (:meth:`sandbox.local_aws.logs.LocalInsightRule.contribution`), as CloudWatch would.

    Parameters
    ----------
    keys : sequence of str
        Logical keys, index = position.
    bodies : mapping of str to str
        Rule name -> its body (JSON), as the stack deploys it.
    writer_parts : int
        The writers' ``DYNASHARD_WRITE_LOAD_PARTS``.

    Returns
    -------
    dict of str to ndarray
        Rule name -> boolean mask over ``keys``.
    """
    lines = [
        {"message": WRITE_LOAD_MESSAGE, **load.log_fields()}
        for load in summarize_write_load(((k, 1, False) for k in keys), writer_parts)
    ]
    masks: dict[str, np.ndarray] = {}
    for name, body in bodies.items():
        rule = LocalInsightRule(body, clock=lambda: 0.0)
        masks[name] = np.array([rule.contribution(line) is not None for line in lines])
    return masks


class FakeCloudWatch:
    """The CloudWatch client the library's Insights adapters call, over :class:`Figures`.

    Parameters
    ----------
    figures : Figures
        The run's figures.
    table : str
        Data table name.
    write_load : mapping of str to ndarray
        The stack's write-load rules (offered WCU per logical key): rule name -> the
        keys whose lines it counts (:func:`write_load_masks`).
    """

    def __init__(self, figures: Figures, table: str, write_load: Mapping[str, np.ndarray]) -> None:
        self.figures = figures
        self.rules = {
            PKT_RULE.format(table=table): "PKT",
            PKC_RULE.format(table=table): "PKC",
            **dict.fromkeys(write_load, "LOAD"),
        }
        self.write_load = dict(write_load)
        self.calls: Counter[str] = Counter()
        self._window: tuple[tuple[int, ...], np.ndarray, np.ndarray] | None = None

    def get_insight_rule_report(self, **request: Any) -> dict[str, Any]:
        """Answer ``GetInsightRuleReport``: top ``MaxContributorCount`` by Sum, per ``Period``."""
        self.calls["GetInsightRuleReport"] += 1
        if request.get("OrderBy", "Sum") != "Sum":
            raise NotImplementedError("only OrderBy=Sum is simulated")
        limit = max(1, min(100, int(request.get("MaxContributorCount", 10))))
        period_minutes = max(1, int(request["Period"]) // 60)
        minutes = self.figures.readable(request["StartTime"], request["EndTime"])
        kind = self.rules[request["RuleName"]]
        if not minutes:
            return _report([], limit, 0, uniques=[])
        if kind == "LOAD":
            return self._logical(
                minutes, limit, period_minutes, self.write_load[request["RuleName"]]
            )
        lo, hi = ("thr_lo", "thr_hi") if kind == "PKT" else ("cons_lo", "cons_hi")
        return self._physical(minutes, lo, hi, limit, period_minutes)

    def _periods(self, minutes: list[tuple[int, Minute]], period_minutes: int) -> list[list[int]]:
        groups: dict[int, list[int]] = {}
        for i, (m, _) in enumerate(minutes):
            groups.setdefault(m // period_minutes, []).append(i)
        return list(groups.values())

    def _logical(
        self, minutes: list[tuple[int, Minute]], limit: int, period_minutes: int, mask: np.ndarray
    ) -> dict[str, Any]:
        # the parts of one sweep ask for the same window: stack its minutes once
        window = tuple(m for m, _ in minutes)
        if self._window is None or self._window[0] != window:
            per_minute = np.stack([fig.offered for _, fig in minutes])
            self._window = (window, per_minute, per_minute.sum(axis=0))
        _, per_minute, total = self._window
        total = np.where(mask, total, 0.0)
        nonzero = int(np.count_nonzero(total))
        top = _top(total, limit)
        periods = self._periods(minutes, period_minutes)
        # the periods are runs of consecutive minutes: sum each run at once
        starts = [idx[0] for idx in periods]
        per_period = np.add.reduceat(per_minute[:, top], starts, axis=0).T.tolist()
        rows = [
            (self.figures.keys[k], float(total[k]), points)
            for k, points in zip(top, per_period, strict=True)
        ]
        counted = np.add.reduceat(per_minute[:, mask], starts, axis=0)
        uniques = np.count_nonzero(counted, axis=1).tolist()
        stamps = [_stamp(minutes[i][0]) for i in starts]
        return _report(rows, limit, nonzero, stamps, uniques)

    def _physical(
        self,
        minutes: list[tuple[int, Minute]],
        lo: str,
        hi: str,
        limit: int,
        period_minutes: int,
    ) -> dict[str, Any]:
        # A key's busiest shard is one of 0..n_lo-1, so the keys of the top-N physical
        # keys are among the top N logical keys ranked by their busiest shard.
        busiest = sum(getattr(fig, lo) for _, fig in minutes)
        unique = int(minutes[-1][1].n_hi[np.flatnonzero(busiest)].sum())
        periods = self._periods(minutes, period_minutes)
        rows: list[tuple[str, float, list[float]]] = []
        for k in _top(busiest, limit):
            width = max(int(fig.n_hi[k]) for _, fig in minutes)
            per_shard = np.zeros((len(minutes), width))
            for i, (_, fig) in enumerate(minutes):
                n_lo, n_hi = int(fig.n_lo[k]), int(fig.n_hi[k])
                per_shard[i, :n_lo] = getattr(fig, lo)[k]
                per_shard[i, n_lo:n_hi] = getattr(fig, hi)[k]
            for s in range(width):
                value = float(per_shard[:, s].sum())
                if value > 0:
                    points = [float(per_shard[idx, s].sum()) for idx in periods]
                    rows.append((f"{self.figures.keys[k]}#{s}", value, points))
        stamps = [_stamp(minutes[idx[0]][0]) for idx in periods]
        return _report(rows, limit, unique, stamps)


def _top(values: np.ndarray, n: int) -> list[int]:
    nonzero = np.flatnonzero(values > 0)
    if len(nonzero) > n:
        part = np.argpartition(-values[nonzero], n - 1)[:n]
        nonzero = nonzero[part]
    return [int(k) for k in nonzero]


class FakeDynamoDB:
    """The DynamoDB control-plane client the hot-key adapter asks for its rule names."""

    def __init__(self, table: str) -> None:
        self.table = table
        self.calls: Counter[str] = Counter()

    def describe_contributor_insights(self, **request: Any) -> dict[str, Any]:
        """Answer ``DescribeContributorInsights``: both rules on the table, none on a GSI."""
        self.calls["DescribeContributorInsights"] += 1
        if request.get("IndexName") or request["TableName"] != self.table:
            return {"ContributorInsightsStatus": "DISABLED", "ContributorInsightsRuleList": []}
        return {
            "ContributorInsightsStatus": "ENABLED",
            "ContributorInsightsRuleList": [
                PKT_RULE.format(table=self.table),
                PKC_RULE.format(table=self.table),
            ],
        }
