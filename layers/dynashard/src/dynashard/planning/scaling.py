"""Shard growth driven by key-range throttling alarms: the scaler's policy, purely.

A CloudWatch alarm on ``WriteKeyRangeThroughputThrottleEvents`` (or its read twin)
fires; the scaler function turns its event into an :class:`Alarm` and calls
:func:`handle_alarm`, which

1. acts only on state ``ALARM`` and only when every metric the alarm names is
   key-range throttling (:func:`alarm_kind`; design invariant 6: adding shards does
   nothing for table, account or on-demand-maximum limits); any other alarm is
   logged and reported as ignored, with the reason (:func:`ignore_reason`);
2. asks a :class:`HotKeySource` which partition keys were throttled or hottest in the
   alarm's window, and maps them to logical keys
   (:func:`dynashard.planning.shards.loads_by_logical_key`);
3. plans each key's load: the write units the writers were offered
   (:class:`OfferedLoadSource`) where they reported it, otherwise DynamoDB's hot-key
   figures (:meth:`dynashard.planning.shards.KeyLoad.demand_units_per_s`);
4. computes the count that load needs (:func:`dynashard.planning.shards.plan_shard_count`)
   and applies it through a :class:`ScalerPort` (the library's conditional update,
   which honours the cooldown), the keys that lack most first
   (:func:`shortfall_units_per_s`);

and returns an :class:`AlarmOutcome`. The ports are :class:`typing.Protocol` classes;
their boto3 adapters live in :mod:`dynashard.cloudwatch` (CloudWatch, Contributor
Insights), the sandbox brings emulator-backed ones. Nothing here imports boto3.

Sources: "CloudWatch contributor insights for DynamoDB" and "DynamoDB metrics and
dimensions" in the Amazon DynamoDB Developer Guide; "Using Amazon CloudWatch alarms"
(actions, notification format) in the CloudWatch User Guide.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal, Protocol

from dynashard import names
from dynashard.core.keys import MAX_SHARD_COUNT
from dynashard.core.shard_info import WRITE_LOAD_GROWTH
from dynashard.core.throttling import (
    DIM_INDEX_NAME,
    DIM_TABLE_NAME,
    DYNAMODB_NAMESPACE,
    KEY_RANGE_METRICS,
)
from dynashard.errors import CooldownActiveError, DynashardError
from dynashard.planning.shards import (
    KeyLoad,
    ShardCountSettings,
    attempts_per_request,
    loads_by_logical_key,
    owns_shard,
    plan_shard_count,
)

if TYPE_CHECKING:
    from dynashard.core.shard_info import GrowthReason, GrowthResult, ShardInfo

_log = logging.getLogger(__name__)

#: The alarm state the scaler acts on (CloudWatch ``StateValue``).
ALARM_STATE = "ALARM"
#: Shortest window an alarm covers, seconds (DynamoDB publishes per minute).
MIN_WINDOW_S = 60
#: Reason given for a hot key that is not a partition key dynashard writes.
#: (no stored logical key has, or had, its shard: :func:`~dynashard.planning.shards.owns_shard`).
UNMAPPED_REASON = "not a partition key dynashard writes"

#: Where a key's planned load came from: the writers' report, or DynamoDB's figures.
Basis = Literal["offered", "estimated"]


# --- what the scaler reads -------------------------------------------------------------
@dataclass(frozen=True)
class Alarm:
    """What the scaler needs from a CloudWatch alarm, however it learned of it.

    Attributes
    ----------
    name : str
        Alarm name.
    state : str
        State: ``ALARM``, ``OK`` or ``INSUFFICIENT_DATA``.
    timestamp : datetime
        When the state changed, or when a sweep saw it (UTC); the end of the window
        to inspect unless ``window_end`` says otherwise.
    window_s : int
        Seconds of the window to inspect: the evaluated datapoints' span when the
        alarm says which (:func:`evaluated_window`), else period x evaluation periods;
        at least 60.
    metric_names : tuple of str
        The metrics the alarm watches, as :func:`metric_label` names them, plus
        :func:`expression_label` for a metric-math expression that reads data of its
        own; empty when the alarm names none (it then grows nothing).
    table_name, index_name : str or None
        ``TableName`` / ``GlobalSecondaryIndexName`` dimensions, if present.
    window_end : datetime or None
        End of the last datapoint the alarm evaluated (UTC), when it said which
        (:func:`with_evaluated_window`); None: the window ends at ``timestamp``.
    """

    name: str
    state: str
    timestamp: datetime
    window_s: int
    metric_names: tuple[str, ...] = ()
    table_name: str | None = None
    index_name: str | None = None
    window_end: datetime | None = None

    @property
    def end(self) -> datetime:
        """datetime: End of the window to inspect (``window_end``, else ``timestamp``)."""
        return self.window_end or self.timestamp

    @property
    def start(self) -> datetime:
        """datetime: Start of the window to inspect."""
        return self.end - timedelta(seconds=self.window_s)


@dataclass(frozen=True)
class HotKey:
    """One partition key value that was hot in a time window.

    Attributes
    ----------
    key : str
        The partition key value as stored: a physical key ``{logical}#{shard}`` of the
        data table, or a logical key.
    consumed_units_per_s : float
        Capacity it consumed, units per second averaged over the window (0 when the
        source only sees throttling).
    throttled_events : int
        Requests on it that were throttled in the window.
    """

    key: str
    consumed_units_per_s: float
    throttled_events: int


def parse_time(value: Any) -> datetime:
    """Read an ISO-8601 time as an aware UTC datetime, or now when it is not one.

    Parameters
    ----------
    value : Any
        E.g. ``"2024-02-17T11:53:08.431+0000"`` (naive times are taken as UTC).

    Returns
    -------
    datetime
        The time in UTC; the current time for a missing or malformed value (an alarm
        is then looked at up to now).
    """
    try:
        parsed = datetime.fromisoformat(str(value))
    except ValueError:
        return datetime.now(UTC)
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


#: A datapoint in an alarm's reason text: ``412.0 (17/02/24 11:51:00)`` (dd/mm/yy, UTC).
_REASON_DATAPOINT = re.compile(r"\((\d{2})/(\d{2})/(\d{2}) (\d{2}):(\d{2}):(\d{2})\)")


def evaluated_window(reason_data: Any, period_s: int) -> tuple[datetime, datetime] | None:
    """Return the window an alarm evaluated, from its ``StateReasonData``.

    A state change comes minutes after the datapoints that caused it (DynamoDB
    publishes per minute, CloudWatch evaluates with a delay), so the minute before the
    state change can hold none of the load that raised the alarm. The window is
    ``[earliest evaluated datapoint, latest + period)``: ``evaluatedDatapoints``
    timestamps are the starts of their periods; without them, ``[startDate, queryDate]``.

    Parameters
    ----------
    reason_data : str or mapping
        The JSON of ``reasonData`` (Lambda alarm action) or ``StateReasonData``
        (``DescribeAlarms``): ``{"startDate", "queryDate", "period",
        "evaluatedDatapoints": [{"timestamp", "value"}]}``.
    period_s : int
        The alarm's period, seconds, when ``reason_data`` gives none.

    Returns
    -------
    tuple of (datetime, datetime) or None
        Start and end (UTC); None when ``reason_data`` is missing or says neither.

    Examples
    --------
    >>> data = {"period": 60, "evaluatedDatapoints": [{"timestamp": "2024-02-17T11:51:00Z"}]}
    >>> [t.strftime("%H:%M") for t in evaluated_window(data, 60)]
    ['11:51', '11:52']
    >>> evaluated_window("not json", 60) is None
    True
    """
    try:
        data = json.loads(reason_data) if isinstance(reason_data, str | bytes) else reason_data
    except ValueError:
        return None
    if not isinstance(data, Mapping):
        return None
    period = timedelta(seconds=int(data.get("period") or period_s))
    stamps = [
        _strict_time(p.get("timestamp"))
        for p in data.get("evaluatedDatapoints") or []
        if isinstance(p, Mapping)
    ]
    points = [t for t in stamps if t is not None]
    if points:
        return min(points), max(points) + period
    start, end = _strict_time(data.get("startDate")), _strict_time(data.get("queryDate"))
    return (start, end) if start is not None and end is not None and start < end else None


def reason_window(reason: Any, period_s: int) -> tuple[datetime, datetime] | None:
    """Return the window an alarm evaluated, from the datapoints its reason text names.

    A classic (SNS) notification carries no ``StateReasonData``; its ``NewStateReason``
    names each datapoint as ``value (dd/mm/yy HH:MM:SS)``, the start of its period.

    Parameters
    ----------
    reason : str
        E.g. ``Threshold Crossed: 1 out of the last 1 datapoints [412.0 (17/02/24
        11:51:00)] was greater than the threshold (0.0) ...``.
    period_s : int
        The alarm's period, seconds.

    Returns
    -------
    tuple of (datetime, datetime) or None
        ``[earliest, latest + period)`` (UTC); None when the text names no datapoint.

    Examples
    --------
    >>> window = reason_window("[412.0 (17/02/24 11:51:00), 3.0 (17/02/24 11:50:00)]", 60)
    >>> [t.strftime("%H:%M") for t in window]
    ['11:50', '11:52']
    """
    points = [
        datetime(2000 + int(y), int(mo), int(d), int(h), int(mi), int(sec), tzinfo=UTC)
        for d, mo, y, h, mi, sec in _REASON_DATAPOINT.findall(str(reason or ""))
    ]
    if not points:
        return None
    return min(points), max(points) + timedelta(seconds=period_s)


def _strict_time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def with_evaluated_window(alarm: Alarm, window: tuple[datetime, datetime] | None) -> Alarm:
    """Return ``alarm`` looking at the window it evaluated, when one is known.

    Parameters
    ----------
    alarm : Alarm
        As parsed, its window ending at its state change.
    window : tuple of (datetime, datetime) or None
        :func:`evaluated_window` or :func:`reason_window`.

    Returns
    -------
    Alarm
        With ``window_end`` and ``window_s`` (at least 60) of ``window``; ``alarm``
        itself when ``window`` is None.
    """
    if window is None:
        return alarm
    start, end = window
    span = max(MIN_WINDOW_S, int((end - start).total_seconds()))
    return replace(alarm, window_end=end, window_s=span)


def with_state_window(alarm: Alarm, state: Mapping[str, Any], period_s: int) -> Alarm:
    """Return ``alarm`` looking at the window its new state says it evaluated.

    Parameters
    ----------
    alarm : Alarm
        As parsed from a Lambda alarm action.
    state : mapping
        The action's ``alarmData.state``: ``reasonData`` (:func:`evaluated_window`),
        else the datapoints its ``reason`` names (:func:`reason_window`).
    period_s : int
        The alarm's period, seconds.

    Returns
    -------
    Alarm
        See :func:`with_evaluated_window`.
    """
    window = evaluated_window(state.get("reasonData"), period_s)
    return with_evaluated_window(alarm, window or reason_window(state.get("reason"), period_s))


def alarm_from_notification(message: Mapping[str, Any]) -> Alarm:
    """Build an :class:`Alarm` from a classic alarm notification (the SNS message JSON).

    Parameters
    ----------
    message : mapping
        ``{"AlarmName", "NewStateValue", "StateChangeTime", "Trigger": {"MetricName",
        "Dimensions": [{"name", "value"}], "Period", "EvaluationPeriods",
        "Metrics"?}}`` as CloudWatch publishes it to SNS (``Metrics`` for metric-math
        alarms).

    Returns
    -------
    Alarm
        The alarm; its window the datapoints ``NewStateReason`` names
        (:func:`reason_window`), else ``max(60, Period x EvaluationPeriods)`` seconds
        up to the state change.
    """
    trigger = message.get("Trigger") or {}
    dimensions: dict[str, str] = {}
    for dim in trigger.get("Dimensions") or []:
        name = dim.get("name", dim.get("Name"))
        value = dim.get("value", dim.get("Value"))
        if name and value is not None:
            dimensions[str(name)] = str(value)
    metric_names = (
        [metric_label(trigger.get("Namespace"), str(trigger["MetricName"]))]
        if trigger.get("MetricName")
        else []
    )
    for query in trigger.get("Metrics") or []:  # metric-math alarms
        if label := expression_label(query.get("Expression")):
            metric_names.append(label)
        metric = ((query.get("MetricStat") or {}).get("Metric")) or {}
        if metric.get("MetricName"):
            metric_names.append(metric_label(metric.get("Namespace"), str(metric["MetricName"])))
        for dim in metric.get("Dimensions") or []:
            dimensions[str(dim.get("Name"))] = str(dim.get("Value"))
    period = int(trigger.get("Period") or MIN_WINDOW_S)
    evaluations = int(trigger.get("EvaluationPeriods") or 1)
    alarm = Alarm(
        name=str(message.get("AlarmName", "")),
        state=str(message.get("NewStateValue", "")),
        timestamp=parse_time(message.get("StateChangeTime")),
        window_s=max(MIN_WINDOW_S, period * evaluations),
        metric_names=tuple(metric_names),
        table_name=dimensions.get(DIM_TABLE_NAME),
        index_name=dimensions.get(DIM_INDEX_NAME),
    )
    return with_evaluated_window(alarm, reason_window(message.get("NewStateReason"), period))


# --- ports -------------------------------------------------------------------------------
class HotKeySource(Protocol):
    """A port that names the hottest partition keys of a table or GSI in a window."""

    def hot_keys(
        self, table_name: str, index_name: str | None, start: datetime, end: datetime
    ) -> list[HotKey]:
        """Return the hot partition keys between ``start`` and ``end``.

        Parameters
        ----------
        table_name : str
            DynamoDB table name.
        index_name : str or None
            GSI name, or None for the base table.
        start, end : datetime
            The window (UTC).

        Returns
        -------
        list of HotKey
            Hottest first; empty when nothing was throttled or accessed.
        """
        ...


class OfferedLoadSource(Protocol):
    """A port that tells how many write units each logical key was offered in a window."""

    def offered_wcu(self, start: datetime, end: datetime) -> dict[str, float]:
        """Return the write units offered per logical key between ``start`` and ``end``.

        Parameters
        ----------
        start, end : datetime
            The window (UTC).

        Returns
        -------
        dict of str to float
            Logical key -> write capacity units offered in the window (first deliveries),
            for the busiest keys; a key missing was offered nothing the source saw.
        """
        ...


class AlarmStateSource(Protocol):
    """A port that tells which of some alarms are in ``ALARM``.

    A CloudWatch alarm invokes its action on a state change only, so an alarm that
    stays in ``ALARM`` because the first growth was not enough never invokes the scaler
    again; a schedule invokes the scaler to sweep, and this port tells it which alarms
    to handle as if they had just fired.
    """

    def alarms_in_alarm(self, names: Sequence[str], now: datetime) -> list[Alarm]:
        """Return the alarms among ``names`` whose state is ``ALARM``.

        Parameters
        ----------
        names : sequence of str
            Alarm names.
        now : datetime
            The end of the window each returned alarm covers (UTC).

        Returns
        -------
        list of Alarm
            One per alarm in ``ALARM``, with ``timestamp = now``; names that do not
            exist are left out.
        """
        ...


class ScalerPort(Protocol):
    """The part of :class:`~dynashard.Dynashard` the policy uses: read and grow N."""

    def shard_info(self, key: str) -> ShardInfo:
        """Read a key's shard metadata."""
        ...

    def grow(self, key: str, target: int, *, reason: GrowthReason | None = None) -> GrowthResult:
        """Raise a key's N to ``target`` (conditional, honours the cooldown), for ``reason``."""
        ...


class ScalingSettings(ShardCountSettings, Protocol):
    """The settings the policy plans with (``lambda_kit.settings.FunctionSettings`` is one).

    The limits, target utilization and cap of :class:`ShardCountSettings`, and:

    Attributes
    ----------
    data_table : str
        Table asked about when the alarm names none.
    write_max_attempts : int
        Attempts a writer makes on a throttled item (tells retries from demand).
    """

    @property
    def data_table(self) -> str: ...  # noqa: D102

    @property
    def write_max_attempts(self) -> int: ...  # noqa: D102


class ErrorLog(Protocol):
    """Where a failed change is logged: a :class:`logging.Logger` or Powertools' ``Logger``."""

    def exception(self, msg: str, *, extra: Mapping[str, object] | None = None) -> None:
        """Log ``msg`` with the exception being handled."""
        ...

    def warning(self, msg: str, *, extra: Mapping[str, object] | None = None) -> None:
        """Log ``msg`` as a warning (e.g. a write-load report that is no evidence)."""
        ...


# --- what the scaler did -----------------------------------------------------------------
@dataclass(frozen=True)
class KeyGrowth:
    """One logical key whose shard count was raised.

    Attributes
    ----------
    key : str
        Logical key.
    previous, current : int
        N before and after.
    units_per_s : float
        The load it was planned for, units/s (WCU/s or RCU/s).
    basis : {"offered", "estimated"}
        ``offered``: the writers' report of the units they were offered (exact);
        ``estimated``: DynamoDB's hot-key figures (a lower bound under retries).
    """

    key: str
    previous: int
    current: int
    units_per_s: float
    basis: Basis

    def to_dict(self) -> dict[str, Any]:
        """Return the report entry: ``{"key", "previous", "current", "units_per_s", "basis"}``.

        Returns
        -------
        dict
            ``units_per_s`` rounded to 0.1.
        """
        return {
            "key": self.key,
            "previous": self.previous,
            "current": self.current,
            "units_per_s": round(self.units_per_s, 1),
            "basis": self.basis,
        }


@dataclass(frozen=True)
class KeySkip:
    """One hot key left as it was, and why.

    Attributes
    ----------
    key : str
        Logical key (or, for a key dynashard does not write, the partition key value).
    reason : str
        E.g. ``"1500 units/s fits 3 shard(s)"``, the cooldown's message, or
        ``"error: ..."``.
    """

    key: str
    reason: str

    def to_dict(self) -> dict[str, Any]:
        """Return the report entry: ``{"key", "reason"}``."""
        return {"key": self.key, "reason": self.reason}


@dataclass(frozen=True)
class AlarmOutcome:
    """What handling one alarm did.

    Attributes
    ----------
    alarm, state : str
        The alarm's name and state.
    grown : tuple of KeyGrowth
        Keys whose N was raised, the most lacking first (:func:`grow_keys`).
    skipped : tuple of KeySkip
        Keys left alone (as :func:`grow_keys` lists them), then the keys dynashard does
        not write.
    errors : tuple of str
        Keys whose growth failed for a reason other than the cooldown (also skipped).
    ignored : str or None
        Why the alarm was not acted on (not in ``ALARM``, or not key-range throttling).
    """

    alarm: str
    state: str
    grown: tuple[KeyGrowth, ...] = ()
    skipped: tuple[KeySkip, ...] = ()
    errors: tuple[str, ...] = ()
    ignored: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Return the report: the scaler function's answer and log line for one alarm.

        Returns
        -------
        dict
            ``{"alarm", "state", "grown": [{"key", "previous", "current",
            "units_per_s", "basis"}], "skipped": [{"key", "reason"}], "errors": [key]}``
            plus ``"ignored"`` when the alarm was not acted on.
        """
        report: dict[str, Any] = {
            "alarm": self.alarm,
            "state": self.state,
            "grown": [g.to_dict() for g in self.grown],
            "skipped": [s.to_dict() for s in self.skipped],
            "errors": list(self.errors),
        }
        if self.ignored is not None:
            report["ignored"] = self.ignored
        return report


# --- the policy --------------------------------------------------------------------------
def alarm_kind(alarm: Alarm) -> Literal["write", "read"] | None:
    """Tell which key-range throttling an alarm is about, if it is only about that.

    Design invariant 6: only key-range throttling grows shards. So an alarm qualifies
    only when it names at least one metric and **every** metric it names is a
    key-range throttle metric of ``AWS/DynamoDB``
    (:data:`dynashard.core.throttling.KEY_RANGE_METRICS`, the metrics of the alarms
    the stack deploys, ``infra/alarm_specs.py``). An alarm that names no metric, or
    metric math that mixes a key-range metric with table-level throttling
    (``WriteThrottleEvents``, ``ThrottledRequests``, ...), a metric of another
    namespace (:func:`metric_label`) or a data source of its own
    (:func:`expression_label`), cannot tell a hot partition from a table, account
    or on-demand-maximum limit, so it does not grow anything (:func:`ignore_reason`).

    Parameters
    ----------
    alarm : Alarm
        The alarm.

    Returns
    -------
    {"write", "read"} or None
        ``read`` when all its metrics are read key-range metrics, ``write`` when all
        are key-range metrics and one is a write one (planned against the lower write
        limit), None otherwise.

    Examples
    --------
    >>> from datetime import UTC, datetime
    >>> alarm = Alarm("a", "ALARM", datetime(2024, 1, 1, tzinfo=UTC), 60)
    >>> alarm_kind(replace(alarm, metric_names=("WriteKeyRangeThroughputThrottleEvents",)))
    'write'
    >>> alarm_kind(alarm) is None  # names no metric
    True
    >>> mixed = ("WriteKeyRangeThroughputThrottleEvents", "WriteThrottleEvents")
    >>> alarm_kind(replace(alarm, metric_names=mixed)) is None
    True
    """
    if not alarm.metric_names or any(m not in KEY_RANGE_METRICS for m in alarm.metric_names):
        return None
    kinds = {KEY_RANGE_METRICS[m] for m in alarm.metric_names}
    return "read" if kinds == {"read"} else "write"


def ignore_reason(alarm: Alarm) -> str | None:
    """Return why an alarm in ``ALARM`` must not grow shards, or None when it may.

    Parameters
    ----------
    alarm : Alarm
        The alarm.

    Returns
    -------
    str or None
        None when :func:`alarm_kind` is not None; else a sentence naming the metrics
        that are not key-range throttling (or saying that the alarm names none).
    """
    if alarm_kind(alarm) is not None:
        return None
    if not alarm.metric_names:
        return (
            "the alarm names no metric, so it cannot tell key-range throttling from "
            "table, account or on-demand limits; more shards relieve only the former"
        )
    others = [m for m in alarm.metric_names if m not in KEY_RANGE_METRICS]
    return (
        f"metrics {others} of {list(alarm.metric_names)} are not key-range throttling "
        f"({', '.join(sorted(KEY_RANGE_METRICS))} of {DYNAMODB_NAMESPACE}): more shards do "
        "not relieve table, account or on-demand limits"
    )


#: Metric-math functions that bring in data of their own, not of the alarm's metrics
#: (CloudWatch User Guide, "Metric math syntax and functions"; Metrics Insights ``SELECT``).
_DATA_SOURCE_FUNCTION = re.compile(
    r"\b(SEARCH|INSIGHT_RULE_METRIC|SERVICE_QUOTA|METRICS|SELECT|ANOMALY_DETECTION_BAND)\b",
    re.IGNORECASE,
)


def metric_label(namespace: Any, name: str) -> str:
    """Return how an alarm's metric is named in :attr:`Alarm.metric_names`.

    Parameters
    ----------
    namespace : str or None
        The metric's namespace as the alarm gives it; None or empty when not given.
    name : str
        The metric's name.

    Returns
    -------
    str
        ``name`` for ``AWS/DynamoDB`` (or no namespace given), ``{namespace}/{name}``
        otherwise: a custom metric called ``WriteKeyRangeThroughputThrottleEvents`` is
        not DynamoDB's and must not pass for key-range throttling.

    Examples
    --------
    >>> metric_label("AWS/DynamoDB", "WriteKeyRangeThroughputThrottleEvents")
    'WriteKeyRangeThroughputThrottleEvents'
    >>> metric_label("MyApp", "WriteKeyRangeThroughputThrottleEvents")
    'MyApp/WriteKeyRangeThroughputThrottleEvents'
    """
    if not namespace or namespace == DYNAMODB_NAMESPACE:
        return name
    return f"{namespace}/{name}"


def expression_label(expression: Any) -> str | None:
    """Return a pseudo metric name for a metric-math expression that reads data of its own.

    An expression over the alarm's own metrics (``m1 + m2``, ``FILL(m1, 0)``) adds no
    metric; one that searches or queries (``SEARCH``, ``SELECT``, ``METRICS()``,
    ``INSIGHT_RULE_METRIC``, ``SERVICE_QUOTA``, ``ANOMALY_DETECTION_BAND``) may read any
    metric, so it is named, and the alarm is then not key-range throttling alone.

    Parameters
    ----------
    expression : str or None
        The ``Expression`` of one metric-data query.

    Returns
    -------
    str or None
        ``expression:{expression}``, or None for an expression over listed metrics.

    Examples
    --------
    >>> expression_label("m1 * 2") is None
    True
    >>> expression_label('SEARCH("{AWS/DynamoDB} ThrottledRequests", "Sum")')[:18]
    'expression:SEARCH('
    """
    if isinstance(expression, str) and _DATA_SOURCE_FUNCTION.search(expression):
        return f"expression:{expression}"
    return None


def plan_demands(
    alarm: Alarm,
    loads: Mapping[str, list[KeyLoad]],
    kind: Literal["write", "read"],
    settings: ScalingSettings,
    offered_wcu: Mapping[str, float],
) -> dict[str, tuple[float, Basis]]:
    """Return each hot key's load to plan for, units/s, and where the figure came from.

    A key the writers reported is planned from the write units it was offered in the
    alarm's window (exact); any other key (a counter, a read alarm, a stack without the
    rule) from DynamoDB's hot-key figures (:meth:`KeyLoad.demand_units_per_s`, a lower
    bound under producers that retry). On GSI1 the offered load of the whole key bounds
    the load of its busiest time bucket from above.

    Parameters
    ----------
    alarm : Alarm
        The alarm (its window, seconds).
    loads : mapping of str to list of KeyLoad
        Logical key -> its partition groups' loads.
    kind : {"write", "read"}
        The throttled operation.
    settings : ScalingSettings
        Limits and the writers' retry budget.
    offered_wcu : mapping of str to float
        Logical key -> WCU offered in the window (empty for reads).

    Returns
    -------
    dict of str to (float, str)
        Logical key -> (units/s, ``"offered"`` or ``"estimated"``).
    """
    limit = settings.partition_rcu if kind == "read" else settings.partition_wcu
    demands: dict[str, tuple[float, Basis]] = {}
    for key, key_groups in loads.items():
        if key in offered_wcu:
            demands[key] = (offered_wcu[key] / max(1.0, alarm.window_s), "offered")
            continue
        # A key's count must carry its busiest group (on GSI1, its busiest time bucket).
        attempts = attempts_per_request(key, kind, settings.write_max_attempts)
        demands[key] = (
            max(g.demand_units_per_s(limit, alarm.window_s, attempts) for g in key_groups),
            "estimated",
        )
    return demands


def shortfall_units_per_s(demand: float, current: int, partition_limit: float) -> float:
    """Return what a key lacks: its load less what its current count can take, units/s.

    The scaler grows keys in this order, most lacking first. Ranked by load instead,
    the same giants, grown long ago and lacking nothing, would come first every
    minute, ahead of a key that needs its second shard.

    Parameters
    ----------
    demand : float
        The key's planned load (:func:`plan_demands`), units/s.
    current : int
        N in force.
    partition_limit : float
        Per-shard limit, units/s.

    Returns
    -------
    float
        ``demand - current x partition_limit``; negative when N can take the load.

    Examples
    --------
    A giant of 60,000 WCU/s on 80 shards lacks nothing; a key of 2,500 WCU/s on one
    shard lacks 1,500:

    >>> shortfall_units_per_s(60_000.0, 80, 1000.0), shortfall_units_per_s(2_500.0, 1, 1000.0)
    (-20000.0, 1500.0)
    """
    return demand - current * partition_limit


def grow_keys(
    demands: Mapping[str, tuple[float, Basis]],
    facade: ScalerPort,
    settings: ScalingSettings,
    partition_limit: float,
    log: ErrorLog | None = None,
    kind: Literal["write", "read"] = "write",
) -> tuple[list[KeyGrowth], list[KeySkip], list[str]]:
    """Grow each key to the count its load needs, the key that lacks most first.

    Every key's metadata is read first, then keys are grown in order of what they
    lack (:func:`shortfall_units_per_s`), then by key: if the run is cut short (its
    timeout, a failing table), the keys furthest behind their load have been grown.

    Parameters
    ----------
    demands : mapping of str to (float, str)
        From :func:`plan_demands`.
    facade : ScalerPort
        Shard metadata: read and grow.
    settings : ScalingSettings
        Headroom and the cap on N (``max_shards``; a key's own cap, ``ShardInfo.max_shards``,
        lowers it for that key, :meth:`ShardInfo.cap`).
    partition_limit : float
        Per-shard limit of the throttled operation, units/s.
    log : ErrorLog, optional
        Where a failed growth is logged (``"growth failed"`` with the key); default
        this module's :mod:`logging` logger.
    kind : {"write", "read"}
        The throttled operation, passed to :meth:`ScalerPort.grow` as ``reason`` (a
        key grown for reads then shrinks only on read-load evidence); a write growth
        planned on the write-load report's figure (basis ``offered``) passes
        ``write-load`` instead (:data:`~dynashard.core.shard_info.WRITE_LOAD_GROWTH`):
        the report named the key, so its writes are logged, and a later report that
        leaves it out bounds its load.

    Returns
    -------
    tuple of (list of KeyGrowth, list of KeySkip, list of str)
        Keys grown, most lacking first; keys skipped (a key whose metadata could not
        be read first, then fit already, cooldown, capped, or failed); keys whose
        growth failed for a reason other than the cooldown.
    """
    log = log if log is not None else _log
    grown: list[KeyGrowth] = []
    skipped: list[KeySkip] = []
    errors: list[str] = []
    infos: dict[str, ShardInfo] = {}
    for key in sorted(demands):
        try:
            infos[key] = facade.shard_info(key)
        except DynashardError as exc:
            log.exception("growth failed", extra={"key": key})
            skipped.append(KeySkip(key, f"error: {exc.message}"))
            errors.append(key)

    def lack(key: str) -> float:
        return shortfall_units_per_s(demands[key][0], infos[key].number_of_shards, partition_limit)

    for key in sorted(infos, key=lambda k: (-lack(k), k)):
        demand, basis = demands[key]
        info = infos[key]
        try:
            current, cap = info.number_of_shards, info.cap(settings.max_shards)
            needed = plan_shard_count(
                current, demand, partition_limit, settings.target_utilization, MAX_SHARD_COUNT
            )
            target = min(needed, max(current, cap))
            if needed > current and target <= current:
                skipped.append(
                    KeySkip(key, f"capped: {demand:.0f} units/s needs {needed} shard(s), cap {cap}")
                )
                continue
            if target <= current:
                skipped.append(KeySkip(key, f"{demand:.0f} units/s fits {current} shard(s)"))
                continue
            reason: GrowthReason = (
                WRITE_LOAD_GROWTH if kind == "write" and basis == "offered" else kind
            )
            result = facade.grow(key, target, reason=reason)
        except CooldownActiveError as exc:
            skipped.append(KeySkip(key, exc.message))
            continue
        except DynashardError as exc:
            log.exception("growth failed", extra={"key": key})
            skipped.append(KeySkip(key, f"error: {exc.message}"))
            errors.append(key)
            continue
        if result.changed:
            grown.append(KeyGrowth(key, result.previous, result.current, demand, basis))
        else:
            skipped.append(KeySkip(key, result.reason))
    return grown, skipped, errors


def ignored_outcome(alarm: Alarm) -> AlarmOutcome | None:
    """Return the outcome of an alarm :func:`handle_alarm` ignores, else None.

    An alarm not in ``ALARM``, or not about key-range throttling (logged as a warning
    with the reason), needs no port: a sweep asks this first and builds the facade and
    the hot-key source only for an alarm that can grow keys (``bench/cold_start.py``:
    the scaler's cold start no longer builds a DynamoDB client for an alarm it ignores).

    Parameters
    ----------
    alarm : Alarm
        The alarm, from its event or from a sweep.

    Returns
    -------
    AlarmOutcome or None
        The ignored outcome (``ignored`` says why); None when the alarm is to be handled.

    Examples
    --------
    >>> from datetime import datetime, timezone
    >>> at = datetime(2026, 1, 1, tzinfo=timezone.utc)
    >>> throttled = ("WriteKeyRangeThroughputThrottleEvents",)
    >>> ignored_outcome(Alarm("a", "OK", at, 60, throttled)).ignored
    'state is OK, not ALARM'
    """
    if alarm.state != ALARM_STATE:
        return AlarmOutcome(alarm.name, alarm.state, ignored=f"state is {alarm.state}, not ALARM")
    if alarm_kind(alarm) is None:
        reason = ignore_reason(alarm)
        _log.warning("alarm ignored: %s: %s", alarm.name, reason)
        return AlarmOutcome(alarm.name, alarm.state, ignored=reason)
    return None


def handle_alarm(
    alarm: Alarm,
    facade: ScalerPort,
    hot_keys: HotKeySource,
    settings: ScalingSettings,
    offered_load: OfferedLoadSource | None = None,
    log: ErrorLog | None = None,
    *,
    gsi_name: str | None = names.GSI1_NAME,
) -> AlarmOutcome:
    """Grow the hot keys behind one alarm in ``ALARM``.

    Parameters
    ----------
    alarm : Alarm
        The alarm, from its event or from a sweep.
    facade : ScalerPort
        Shard metadata: read and grow.
    hot_keys : HotKeySource
        Where the hot keys of the alarm's window come from.
    settings : ScalingSettings
        Limits, headroom, retry budget, default table.
    offered_load : OfferedLoadSource, optional
        The write units the writers were offered per logical key (write alarms plan
        from it for the keys it reports).
    log : ErrorLog, optional
        Where a failed growth is logged; default this module's logger.
    gsi_name : str or None
        The data table's time-bucket GSI (:attr:`TableSchema.gsi_name
        <dynashard.core.schema.TableSchema.gsi_name>`; ``GSI1`` on dynashard's own
        table, None when it has none): an alarm on that index has its partition keys
        mapped as ``{logical}#{bucket}#{shard}``; on another index, none is mapped
        (:func:`~dynashard.planning.shards.partition_group`).

    Returns
    -------
    AlarmOutcome
        What was grown and skipped, or why the alarm was ignored (not in ``ALARM``,
        or not about key-range throttling). Growth failures are listed in
        :attr:`AlarmOutcome.errors`, not raised, so that one key cannot stop the others.

    Raises
    ------
    Exception
        Whatever a port raises while reading hot keys or offered load (e.g.
        ``botocore.exceptions.ClientError`` from the AWS adapters), or while reading
        the metadata that maps a reported partition key to its logical key
        (``MetadataError`` from :meth:`ScalerPort.shard_info`).
    """
    ignored = ignored_outcome(alarm)
    kind = alarm_kind(alarm)
    if ignored is not None or kind is None:
        return ignored or AlarmOutcome(alarm.name, alarm.state, ignored=ignore_reason(alarm))
    partition_limit = settings.partition_rcu if kind == "read" else settings.partition_wcu
    table = alarm.table_name or settings.data_table
    hot = hot_keys.hot_keys(table, alarm.index_name, alarm.start, alarm.end)
    known: dict[str, ShardInfo] = {}

    def owns(logical: str, shard: int) -> bool:
        # The metadata, not the format, says whose a reported key is (SENSOR#42 is not
        # SENSOR's unless SENSOR has had 43 shards); one read per logical key.
        if logical not in known:
            known[logical] = facade.shard_info(logical)
        return owns_shard(known[logical], shard)

    loads, unmapped = loads_by_logical_key(hot, alarm.index_name, owns, gsi_name)
    offered = (
        offered_load.offered_wcu(alarm.start, alarm.end)
        if offered_load is not None and kind == "write" and loads
        else {}
    )
    demands = plan_demands(alarm, loads, kind, settings, offered)
    grown, skipped, errors = grow_keys(demands, facade, settings, partition_limit, log, kind)
    skipped.extend(KeySkip(key, UNMAPPED_REASON) for key in unmapped)
    return AlarmOutcome(alarm.name, alarm.state, tuple(grown), tuple(skipped), tuple(errors))
