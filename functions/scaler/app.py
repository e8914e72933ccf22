"""Scaler function: grows the shard count of hot keys when a throttling alarm fires.

Invoked by a CloudWatch alarm on ``WriteKeyRangeThroughputThrottleEvents`` (or the read
twin), either as the alarm's Lambda action (``"source": "aws.cloudwatch"``,
``alarmData``) or through SNS (``Records[0].Sns.Message`` = the classic alarm
notification). The deployed handler string is ``app.handler``.

Flow: parse the alarm -> act only on state ``ALARM`` and only for key-range throttling
(adding shards does nothing for table, account or on-demand-maximum limits) -> ask a
:class:`HotKeySource` which partition keys were throttled or hottest in the alarm's
window -> estimate each logical key's offered load from them
(:func:`dynashard.planning.loads_by_logical_key`, :class:`~dynashard.planning.KeyLoad`)
-> ``plan_shard_count`` from that load and the per-partition limit -> ``grow`` through
the library's conditional update (which honours the cooldown).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal, Protocol

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit, single_metric
from pydantic import Field

from dynashard import names
from dynashard.errors import CooldownActiveError, DynashardError
from dynashard.planning import KeyLoad, attempts_per_request, loads_by_logical_key
from dynashard.settings import DynashardSettings

try:  # package import (tests, sandbox): functions.scaler.app
    from .alarm_states import Alarm, AlarmStateSource, CloudWatchAlarmStates
    from .hot_keys import ContributorInsightsHotKeySource, HotKey, HotKeySource
    from .offered_load import InsightRuleOfferedLoad, OfferedLoadSource
except ImportError:  # Lambda asset root: app.py is a top-level module next to its siblings
    from alarm_states import (  # type: ignore[no-redef]
        Alarm,
        AlarmStateSource,
        CloudWatchAlarmStates,
    )
    from hot_keys import (  # type: ignore[no-redef]
        ContributorInsightsHotKeySource,
        HotKey,
        HotKeySource,
    )
    from offered_load import (  # type: ignore[no-redef]
        InsightRuleOfferedLoad,
        OfferedLoadSource,
    )

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from dynashard import Dynashard, GrowthResult, ShardInfo

logger = Logger()
tracer = Tracer()
metrics = Metrics(namespace=names.METRICS_NAMESPACE)

#: Metrics whose alarms mean "a partition key value is over its limit": the only
#: throttling that more shards relieve (CloudWatch throttling metrics for DynamoDB).
KEY_RANGE_METRICS: dict[str, Literal["write", "read"]] = {
    "WriteKeyRangeThroughputThrottleEvents": "write",
    "ReadKeyRangeThroughputThrottleEvents": "read",
}


# --- configuration ---------------------------------------------------------------------
class Settings(DynashardSettings):
    """The function's settings: the library's model plus the scaler's alarms.

    Attributes
    ----------
    alarm_names : str
        The alarms whose action is this function, comma-separated
        (``DYNASHARD_SCALER_ALARM_NAMES``); what a scheduled sweep checks. Empty turns
        the sweep into a no-op.
    write_load_rule : str
        The Contributor Insights rule that ranks logical keys by the write units the
        ingest functions were offered (``DYNASHARD_WRITE_LOAD_RULE``); empty: plan
        writes from DynamoDB's own hot-key figures alone.
    """

    alarm_names: str = Field("", validation_alias=names.ENV_SCALER_ALARM_NAMES)
    write_load_rule: str = Field("", validation_alias=names.ENV_WRITE_LOAD_RULE)

    @property
    def alarm_name_list(self) -> list[str]:
        """List of str: :attr:`alarm_names` split, blanks dropped."""
        return [n.strip() for n in self.alarm_names.split(",") if n.strip()]


@functools.cache
def get_settings() -> Settings:
    """Read and validate the settings once per container (first invocation, not import).

    Returns
    -------
    Settings
        The cached settings.
    """
    return Settings()  # type: ignore[call-arg]  # values come from the environment


@functools.cache
def get_service() -> Dynashard:
    """Build the :class:`~dynashard.Dynashard` facade once per container.

    Returns
    -------
    Dynashard
        The facade over the configured tables.
    """
    from dynashard import Dynashard

    return Dynashard(get_settings().to_config())


@functools.cache
def get_alarm_states() -> AlarmStateSource:
    """Build the default alarm-state source (CloudWatch) once per container.

    Returns
    -------
    AlarmStateSource
        A :class:`CloudWatchAlarmStates` with a lazily created client.
    """
    return CloudWatchAlarmStates()


@functools.cache
def get_hot_key_source() -> HotKeySource:
    """Build the default hot-key source (Contributor Insights) once per container.

    Returns
    -------
    HotKeySource
        A :class:`ContributorInsightsHotKeySource` with lazily created clients.
    """
    return ContributorInsightsHotKeySource()


@functools.cache
def get_offered_load_source() -> OfferedLoadSource | None:
    """Build the default offered-load source (the stack's rule) once per container.

    Returns
    -------
    OfferedLoadSource or None
        An :class:`InsightRuleOfferedLoad` on ``DYNASHARD_WRITE_LOAD_RULE``, or None
        when no rule is configured.
    """
    rule = get_settings().write_load_rule
    return InsightRuleOfferedLoad(rule) if rule else None


class ScalerService(Protocol):
    """The part of :class:`~dynashard.Dynashard` this function uses."""

    def shard_info(self, key: str) -> ShardInfo:
        """Read a key's shard metadata."""
        ...

    def grow(self, key: str, target: int) -> GrowthResult:
        """Raise a key's shard count to ``target`` (conditional, honours the cooldown)."""
        ...


# --- the alarm ---------------------------------------------------------------------------
def _time(value: Any) -> datetime:
    try:
        parsed = datetime.fromisoformat(str(value))
    except ValueError:
        return datetime.now(UTC)
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def _from_lambda_action(event: Mapping[str, Any]) -> Alarm:
    data = event["alarmData"]
    state = data.get("state") or {}
    metric_names: list[str] = []
    dimensions: dict[str, str] = {}
    period = 60
    for query in (data.get("configuration") or {}).get("metrics") or []:
        stat = query.get("metricStat") or {}
        metric = stat.get("metric") or {}
        if metric.get("name"):
            metric_names.append(metric["name"])
        if metric.get("namespace") == "AWS/DynamoDB":
            dimensions.update(metric.get("dimensions") or {})
        period = max(period, int(stat.get("period") or 60))
    return Alarm(
        name=str(data.get("alarmName", "")),
        state=str(state.get("value", "")),
        timestamp=_time(state.get("timestamp") or event.get("time")),
        window_s=period,
        metric_names=tuple(metric_names),
        table_name=dimensions.get("TableName"),
        index_name=dimensions.get("GlobalSecondaryIndexName"),
    )


def _from_sns_message(message: Mapping[str, Any]) -> Alarm:
    trigger = message.get("Trigger") or {}
    dimensions: dict[str, str] = {}
    for dim in trigger.get("Dimensions") or []:
        name = dim.get("name", dim.get("Name"))
        value = dim.get("value", dim.get("Value"))
        if name and value is not None:
            dimensions[str(name)] = str(value)
    metric_names = [trigger["MetricName"]] if trigger.get("MetricName") else []
    for query in trigger.get("Metrics") or []:  # metric-math alarms
        metric = ((query.get("MetricStat") or {}).get("Metric")) or {}
        if metric.get("MetricName"):
            metric_names.append(metric["MetricName"])
        for dim in metric.get("Dimensions") or []:
            dimensions[str(dim.get("Name"))] = str(dim.get("Value"))
    period = int(trigger.get("Period") or 60)
    evaluations = int(trigger.get("EvaluationPeriods") or 1)
    return Alarm(
        name=str(message.get("AlarmName", "")),
        state=str(message.get("NewStateValue", "")),
        timestamp=_time(message.get("StateChangeTime")),
        window_s=max(60, period * evaluations),
        metric_names=tuple(metric_names),
        table_name=dimensions.get("TableName"),
        index_name=dimensions.get("GlobalSecondaryIndexName"),
    )


def parse_alarm(event: Mapping[str, Any]) -> Alarm:
    """Read a CloudWatch alarm event in either shape.

    Parameters
    ----------
    event : mapping
        The Lambda alarm-action event (``"source": "aws.cloudwatch"``) or an SNS event
        whose first record's ``Sns.Message`` is the alarm notification JSON.

    Returns
    -------
    Alarm
        The alarm's name, new state, window, metrics and table dimensions.

    Raises
    ------
    ValueError
        If the event is neither shape (the invocation fails, so it is retried and then
        reaches the function's failure destination rather than being dropped).
    """
    if event.get("source") == "aws.cloudwatch" and isinstance(event.get("alarmData"), Mapping):
        return _from_lambda_action(event)
    records = event.get("Records")
    if isinstance(records, list) and records:
        sns = records[0].get("Sns") if isinstance(records[0], Mapping) else None
        if isinstance(sns, Mapping) and "Message" in sns:
            try:
                message = json.loads(sns["Message"])
            except (TypeError, ValueError) as exc:
                raise ValueError(f"SNS message is not alarm JSON: {exc}") from exc
            if isinstance(message, Mapping) and "AlarmName" in message:
                return _from_sns_message(message)
    raise ValueError("not a CloudWatch alarm event (Lambda alarm action or SNS notification)")


# --- handler ---------------------------------------------------------------------------------
def _demands(
    alarm: Alarm,
    loads: dict[str, list[KeyLoad]],
    kind: Literal["write", "read"],
    settings: Settings,
    partition_limit: float,
    offered_wcu: dict[str, float],
) -> dict[str, tuple[float, str]]:
    """Return each hot key's load to plan for, units/s, and where the figure came from.

    A key the writers reported is planned from the write units it was offered in the
    alarm's window (exact); any other key (a counter, a read alarm, a stack without the
    rule) from DynamoDB's hot-key figures (:meth:`KeyLoad.demand_units_per_s`, a lower
    bound under producers that retry). On GSI1 the offered load of the whole key bounds
    the load of its busiest time bucket from above.
    """
    demands: dict[str, tuple[float, str]] = {}
    for key, key_groups in loads.items():
        if key in offered_wcu:
            demands[key] = (offered_wcu[key] / max(1.0, alarm.window_s), "offered")
            continue
        # A key's count must carry its busiest group (on GSI1, its busiest time bucket).
        demands[key] = (
            max(
                g.demand_units_per_s(
                    partition_limit,
                    alarm.window_s,
                    attempts_per_request(key, kind, settings.write_max_attempts),
                )
                for g in key_groups
            ),
            "estimated",
        )
    return demands


def _grow_keys(
    demands: dict[str, tuple[float, str]],
    service: ScalerService,
    settings: Settings,
    partition_limit: float,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
    from dynashard import plan_shard_count

    grown: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    errors: list[str] = []
    for key in sorted(demands, key=lambda k: (-demands[k][0], k)):
        demand, basis = demands[key]
        try:
            current = service.shard_info(key).number_of_shards
            target = plan_shard_count(
                current, demand, partition_limit, settings.target_utilization, settings.max_shards
            )
            if target <= current:
                skipped.append(
                    {"key": key, "reason": f"{demand:.0f} units/s fits {current} shard(s)"}
                )
                continue
            result = service.grow(key, target)
        except CooldownActiveError as exc:
            skipped.append({"key": key, "reason": exc.message})
            continue
        except DynashardError as exc:
            logger.exception("growth failed", extra={"key": key})
            skipped.append({"key": key, "reason": f"error: {exc.message}"})
            errors.append(key)
            continue
        if result.changed:
            grown.append(
                {
                    "key": key,
                    "previous": result.previous,
                    "current": result.current,
                    "units_per_s": round(demand, 1),
                    "basis": basis,
                }
            )
        else:
            skipped.append({"key": key, "reason": result.reason})
    return grown, skipped, errors


def _emit_metrics(grown: list[dict[str, Any]]) -> None:
    metrics.add_metric(name="ShardsGrown", unit=MetricUnit.Count, value=len(grown))
    for entry in grown:
        # One EMF blob per key with the key as metadata, not as a dimension: logical
        # keys are unbounded, and each dimension value would be its own metric.
        with single_metric(
            name="ShardCount",
            unit=MetricUnit.Count,
            value=entry["current"],
            namespace=names.METRICS_NAMESPACE,
        ) as metric:
            metric.add_metadata(key="key", value=entry["key"])
            metric.add_metadata(key="previous", value=entry["previous"])


def is_scheduled_event(event: Mapping[str, Any]) -> bool:
    """Tell an EventBridge schedule's event (the sweep) from an alarm event.

    Parameters
    ----------
    event : mapping
        The invocation event.

    Returns
    -------
    bool
        True for ``{"source": "aws.events", "detail-type": "Scheduled Event"}``.
    """
    return event.get("source") == "aws.events" and event.get("detail-type") == "Scheduled Event"


def handle_alarm(
    alarm: Alarm,
    service: ScalerService,
    hot_keys: HotKeySource,
    settings: Settings,
    offered_load: OfferedLoadSource | None = None,
) -> dict[str, Any]:
    """Grow the hot keys behind one alarm in ``ALARM`` (pure of Lambda: the handler's core).

    Parameters
    ----------
    alarm : Alarm
        The alarm, from its event or from a sweep.
    service : ScalerService
        Shard metadata: read and grow.
    hot_keys : HotKeySource
        Where the hot keys of the alarm's window come from.
    settings : Settings
        Limits, headroom, retry budget.
    offered_load : OfferedLoadSource, optional
        The write units the writers were offered per logical key (write alarms plan
        from it for the keys it reports).

    Returns
    -------
    dict
        ``{"alarm", "state", "grown": [{"key", "previous", "current", "units_per_s",
        "basis"}],
        "skipped": [{"key", "reason"}], "errors": [key]}`` (plus ``"ignored"`` when the
        alarm is not in ``ALARM`` or not about key-range throttling).
    """
    summary: dict[str, Any] = {
        "alarm": alarm.name,
        "state": alarm.state,
        "grown": [],
        "skipped": [],
        "errors": [],
    }
    if alarm.state != "ALARM":
        summary["ignored"] = f"state is {alarm.state}, not ALARM"
        return summary
    kinds = {KEY_RANGE_METRICS[m] for m in alarm.metric_names if m in KEY_RANGE_METRICS}
    if alarm.metric_names and not kinds:
        summary["ignored"] = (
            f"metrics {list(alarm.metric_names)} are not key-range throttling: "
            "more shards do not relieve table, account or on-demand limits"
        )
        return summary
    kind: Literal["write", "read"] = "read" if kinds == {"read"} else "write"
    partition_limit = settings.partition_rcu if kind == "read" else settings.partition_wcu
    table = alarm.table_name or settings.data_table
    hot = hot_keys.hot_keys(table, alarm.index_name, alarm.start, alarm.timestamp)
    loads, unmapped = loads_by_logical_key(hot, alarm.index_name)
    offered = (
        offered_load.offered_wcu(alarm.start, alarm.timestamp)
        if offered_load is not None and kind == "write" and loads
        else {}
    )
    demands = _demands(alarm, loads, kind, settings, partition_limit, offered)
    grown, skipped, errors = _grow_keys(demands, service, settings, partition_limit)
    skipped.extend(
        {"key": key, "reason": "not a partition key dynashard writes"} for key in unmapped
    )
    summary.update(grown=grown, skipped=skipped, errors=errors)
    return summary


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(
    event: dict[str, Any],
    context: LambdaContext,
    service: ScalerService | None = None,
    hot_keys: HotKeySource | None = None,
    alarm_states: AlarmStateSource | None = None,
    offered_load: OfferedLoadSource | None = None,
) -> dict[str, Any]:
    """Grow the shard count of the keys behind key-range throttling alarms.

    An alarm event (its action, or SNS) is handled alone. A scheduled event sweeps:
    every alarm of ``DYNASHARD_SCALER_ALARM_NAMES`` still in ``ALARM`` is handled as
    if it had just fired, since CloudWatch invokes an action only on a state change.

    Parameters
    ----------
    event : dict
        CloudWatch alarm event (Lambda alarm action or SNS notification), or an
        EventBridge ``Scheduled Event``.
    context : LambdaContext
        Lambda context.
    service : ScalerService, optional
        A ``Dynashard``-like object; default: the container's.
    hot_keys : HotKeySource, optional
        Where hot keys come from; default: Contributor Insights.
    alarm_states : AlarmStateSource, optional
        Which alarms are in ``ALARM`` (the sweep); default: CloudWatch ``DescribeAlarms``.
    offered_load : OfferedLoadSource, optional
        Offered write units per logical key; default: the stack's Contributor Insights
        rule (``DYNASHARD_WRITE_LOAD_RULE``), or none.

    Returns
    -------
    dict
        For an alarm: ``{"alarm", "state", "grown": [{"key", "previous", "current",
        "units_per_s"}], "skipped": [{"key", "reason"}], "errors"}`` (plus ``"ignored"``
        when nothing was done). For a sweep: ``{"sweep": time, "alarms": [those]}``.

    Raises
    ------
    ValueError
        If the event is neither an alarm nor a schedule.
    DynashardError
        If growing some key failed for a reason other than the cooldown (after the
        other keys were handled), so the invocation is retried.
    """
    sweep = is_scheduled_event(event)
    alarm = None if sweep else parse_alarm(event)  # a bad event fails before any set-up
    settings = get_settings()
    service = service or get_service()
    source = hot_keys or get_hot_key_source()
    offered = offered_load or get_offered_load_source()
    if alarm is None:
        now = _time(event.get("time"))
        states = alarm_states or get_alarm_states()
        in_alarm = states.alarms_in_alarm(settings.alarm_name_list, now)
        summaries = [handle_alarm(a, service, source, settings, offered) for a in in_alarm]
        result: dict[str, Any] = {"sweep": now.isoformat(), "alarms": summaries}
    else:
        logger.append_keys(alarm=alarm.name)
        summaries = [handle_alarm(alarm, service, source, settings, offered)]
        result = summaries[0]
    grown = [g for s in summaries for g in s["grown"]]
    errors = [e for s in summaries for e in s["errors"]]
    _emit_metrics(grown)
    logger.info("scaler done", extra=result)
    if errors:
        raise DynashardError(f"growing {len(errors)} key(s) failed: {', '.join(errors)}")
    return result


#: Exposed for tests and the sandbox.
__all__ = [
    "Alarm",
    "AlarmStateSource",
    "CloudWatchAlarmStates",
    "ContributorInsightsHotKeySource",
    "HotKey",
    "HotKeySource",
    "InsightRuleOfferedLoad",
    "KeyLoad",
    "OfferedLoadSource",
    "Settings",
    "attempts_per_request",
    "get_offered_load_source",
    "get_service",
    "get_settings",
    "handle_alarm",
    "handler",
    "is_scheduled_event",
    "loads_by_logical_key",
    "parse_alarm",
]
