"""Scaler function: grows hot keys' shard counts on throttling alarms, shrinks cool ones.

Invoked by a key-range throttle alarm (its Lambda action, ``"source":
"aws.cloudwatch"``, or SNS, ``Records[0].Sns.Message``), and every minute by a schedule
that sweeps the alarms still in ``ALARM`` and then shrinks the keys that stayed cool.
The deployed handler string is ``app.handler``. Wiring only: settings, default adapters
(:mod:`dynashard.cloudwatch`), event shapes and metrics; the policy is
:func:`dynashard.planning.sweep.sweep` (the growth of
:func:`~dynashard.planning.scaling.handle_alarm`, then the shrink of
:func:`~dynashard.planning.shrinking.shrink_cool_keys`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from aws_lambda_powertools.metrics import MetricUnit, single_metric
from aws_lambda_powertools.utilities.data_classes import (
    CloudWatchAlarmConfiguration,
    CloudWatchAlarmEvent,
)
from pydantic import Field

from dynashard import lambda_kit, names
from dynashard.core.throttling import DIM_INDEX_NAME, DIM_TABLE_NAME, DYNAMODB_NAMESPACE
from dynashard.errors import DynashardError
from dynashard.lambda_kit.settings import FunctionSettings
from dynashard.planning import scaling, shrinking, sweep

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from dynashard.cloudwatch.insights import InsightRuleOfferedLoad


class Settings(FunctionSettings):
    """The function's settings: the library's model plus the scaler's alarms.

    Attributes
    ----------
    alarm_names : str
        The alarms whose action is this function, comma-separated
        (``DYNASHARD_SCALER_ALARM_NAMES``); what a scheduled sweep checks. Empty turns
        the sweep into a no-op.
    write_load_rule : str
        The Contributor Insights rule that ranks logical keys by the write units the
        ingest functions were offered (``DYNASHARD_WRITE_LOAD_RULE``), or the rules of
        the parts of the key space comma-separated, part 0 first (the stack's
        ``write_load_parts``); empty: plan writes from DynamoDB's own hot-key figures
        alone, and shrink nothing.
    """

    alarm_names: str = Field("", validation_alias=names.ENV_SCALER_ALARM_NAMES)
    write_load_rule: str = Field("", validation_alias=names.ENV_WRITE_LOAD_RULE)

    @property
    def alarm_name_list(self) -> list[str]:
        """List of str: :attr:`alarm_names` split, blanks dropped."""
        return [n.strip() for n in self.alarm_names.split(",") if n.strip()]

    @property
    def write_load_rule_list(self) -> list[str]:
        """List of str: :attr:`write_load_rule` split, part 0 first, blanks dropped."""
        return [n.strip() for n in self.write_load_rule.split(",") if n.strip()]


kit = lambda_kit.function_kit(__name__, Settings)
logger, tracer, metrics = kit.logger, kit.tracer, kit.metrics
get_settings, get_facade = kit.get_settings, kit.get_facade


@lambda_kit.container_cache
def get_alarm_states() -> scaling.AlarmStateSource:
    """Return the alarm-state adapter (CloudWatch ``DescribeAlarms``), once per container."""
    from dynashard.cloudwatch.alarms import CloudWatchAlarmStates

    return CloudWatchAlarmStates()


@lambda_kit.container_cache
def get_hot_key_source() -> scaling.HotKeySource:
    """Return the hot-key adapter (Contributor Insights), built once per container."""
    from dynashard.cloudwatch.insights import ContributorInsightsHotKeySource

    return ContributorInsightsHotKeySource()


@lambda_kit.container_cache
def get_offered_load_source() -> InsightRuleOfferedLoad | None:
    """Return the adapter on ``DYNASHARD_WRITE_LOAD_RULE`` (offered load and its history).

    Every part's rule, part 0 first: the adapter reads each one's report.
    """
    from dynashard.cloudwatch.insights import InsightRuleOfferedLoad

    rules = get_settings().write_load_rule_list
    return InsightRuleOfferedLoad(rules) if rules else None


def _sweep_client() -> object:
    """Build the sweep's CloudWatch client (``DescribeAlarms`` every minute), if it has alarms.

    The DynamoDB facade is not built at init: a sweep with nothing due and nothing to
    shrink never calls DynamoDB (:func:`dynashard.planning.scaling.ignored_outcome`).
    """
    from dynashard.cloudwatch.alarms import CloudWatchAlarmStates

    states = get_alarm_states()
    if get_settings().alarm_name_list and isinstance(states, CloudWatchAlarmStates):
        return states.client
    return None


# Built at init (provisioned concurrency keeps it): the settings and the sweep's client; a
# misconfiguration is logged here and raised by the first invocation.
kit.warm(get_settings, _sweep_client)


def _from_lambda_action(event: CloudWatchAlarmEvent) -> scaling.Alarm:
    # Lenient, as the SNS shape is: metric-math alarms list expressions without metricStat.
    data = event.alarm_data
    state = data.get("state") or {}
    configuration = CloudWatchAlarmConfiguration(data.get("configuration") or {})
    metric_names: list[str] = []
    dimensions: dict[str, str] = {}
    period = scaling.MIN_WINDOW_S
    for query in configuration.metrics:
        if not query.get("metricStat"):
            # An expression: no period of its own; named when it reads data of its own.
            if label := scaling.expression_label(query.get("expression")):
                metric_names.append(label)
            continue
        stat = query.metric_stat
        metric = stat.metric
        if metric.get("name"):
            metric_names.append(scaling.metric_label(metric.get("namespace"), metric["name"]))
        if metric.get("namespace") == DYNAMODB_NAMESPACE:
            dimensions.update(metric.get("dimensions") or {})
        period = max(period, int(stat.period or scaling.MIN_WINDOW_S))
    alarm = scaling.Alarm(
        name=str(data.get("alarmName", "")),
        state=str(state.get("value", "")),
        timestamp=scaling.parse_time(state.get("timestamp") or event.get("time")),
        window_s=period,
        metric_names=tuple(metric_names),
        table_name=dimensions.get(DIM_TABLE_NAME),
        index_name=dimensions.get(DIM_INDEX_NAME),
    )
    return scaling.with_state_window(alarm, state, period)  # the window it evaluated


def parse_alarm(event: Mapping[str, Any]) -> scaling.Alarm:
    """Read a CloudWatch alarm event in either shape.

    Parameters
    ----------
    event : mapping
        The Lambda alarm-action event (``"source": "aws.cloudwatch"``) or an SNS event
        whose first record's ``Sns.Message`` is the alarm notification JSON.

    Returns
    -------
    scaling.Alarm
        The alarm's name, new state, window, metrics and table dimensions.

    Raises
    ------
    ValueError
        If the event is neither shape (the invocation fails, so it is retried and then
        reaches the function's failure destination rather than being dropped).
    """
    if event.get("source") == "aws.cloudwatch" and isinstance(event.get("alarmData"), Mapping):
        return _from_lambda_action(CloudWatchAlarmEvent(dict(event)))
    records = event.get("Records")
    if isinstance(records, list) and records:
        sns = records[0].get("Sns") if isinstance(records[0], Mapping) else None
        if isinstance(sns, Mapping) and "Message" in sns:
            try:
                message = json.loads(sns["Message"])
            except (TypeError, ValueError) as exc:
                raise ValueError(f"SNS message is not alarm JSON: {exc}") from exc
            if isinstance(message, Mapping) and "AlarmName" in message:
                return scaling.alarm_from_notification(message)
    raise ValueError("not a CloudWatch alarm event (Lambda alarm action or SNS notification)")


def is_scheduled_event(event: Mapping[str, Any]) -> bool:
    """Return True for an EventBridge schedule's event (the sweep), False otherwise."""
    return event.get("source") == "aws.events" and event.get("detail-type") == "Scheduled Event"


def _emit_metrics(run: sweep.ScalerRun) -> None:
    shrunk = run.shrink.shrunk
    metrics.add_metric(name="ShardsGrown", unit=MetricUnit.Count, value=len(run.grown))
    metrics.add_metric(name="ShardsShrunk", unit=MetricUnit.Count, value=len(shrunk))
    # Write-load reports that were no evidence (empty, or not spanning the cool period):
    # no key of theirs shrank; the reasons are in the report (``shrink.no_evidence``).
    metrics.add_metric(
        name="WriteLoadReportsWithoutEvidence",
        unit=MetricUnit.Count,
        value=len(run.shrink.no_evidence),
    )
    # Alarms in ALARM that may not grow shards (invariant 6): counted, and their reason
    # is in the run's report (``ignored``), which the handler logs.
    not_key_range = [o for o in run.alarms if o.ignored and o.state == scaling.ALARM_STATE]
    metrics.add_metric(name="AlarmsIgnored", unit=MetricUnit.Count, value=len(not_key_range))
    changes = [(g.key, g.previous, g.current) for g in run.grown]
    for key, previous, current in changes + [(s.key, s.previous, s.current) for s in shrunk]:
        # One EMF blob per key with the key as metadata, not as a dimension: logical
        # keys are unbounded, and each dimension value would be its own metric.
        with single_metric(
            name="ShardCount",
            unit=MetricUnit.Count,
            value=current,
            namespace=names.METRICS_NAMESPACE,
        ) as metric:
            metric.add_metadata(key="key", value=key)
            metric.add_metadata(key="previous", value=previous)


@kit.entry_point()
def handler(
    event: dict[str, Any],
    context: LambdaContext,
    facade: scaling.ScalerPort | None = None,
    hot_keys: scaling.HotKeySource | None = None,
    alarm_states: scaling.AlarmStateSource | None = None,
    offered_load: scaling.OfferedLoadSource | None = None,
    load_history: shrinking.LoadHistorySource | None = None,
    shrinker: shrinking.ShrinkPort | None = None,
) -> dict[str, Any]:
    """Grow the shard count of the keys behind key-range throttling alarms; shrink cool keys.

    An alarm event is handled alone (it only grows). A scheduled event sweeps: every
    alarm of ``DYNASHARD_SCALER_ALARM_NAMES`` still in ``ALARM`` is handled as if it had
    just fired, since CloudWatch invokes an action only on a state change; then the keys
    above the default count whose offered load stayed cool are shrunk, when there is a
    load history to tell (the stack's write-load rule).

    Parameters
    ----------
    event : dict
        CloudWatch alarm event (Lambda alarm action or SNS), or an EventBridge
        ``Scheduled Event``.
    context : LambdaContext
        Lambda context.
    facade, hot_keys, alarm_states, offered_load, load_history, shrinker : optional
        Ports of :mod:`dynashard.planning.scaling` and
        :mod:`dynashard.planning.shrinking`; default: the
        container's ``Dynashard`` (also the shrinker), Contributor Insights,
        ``DescribeAlarms``, the stack's write-load rule (or none: no shrinking). The
        default facade and hot-key source are built only when an alarm is due or the
        sweep can shrink.

    Returns
    -------
    dict
        For an alarm, :meth:`~dynashard.planning.scaling.AlarmOutcome.to_dict`; for a sweep,
        ``{"sweep": time, "alarms": [those], "shrink":``
        :meth:`~dynashard.planning.shrinking.ShrinkOutcome.to_dict` ``}``.

    Raises
    ------
    ValueError
        If the event is neither an alarm nor a schedule.
    DynashardError
        If growing or shrinking some key failed for a reason other than the cooldown
        (after the other keys were handled), so the invocation is retried.
    """
    alarm = None if is_scheduled_event(event) else parse_alarm(event)  # fails before set-up
    settings = get_settings()
    now = scaling.parse_time(event.get("time"))
    if alarm is None:
        states = alarm_states or get_alarm_states()
        due = states.alarms_in_alarm(settings.alarm_name_list, now)
    else:
        logger.append_keys(alarm=alarm.name)
        due = [alarm]
    history = None if alarm is not None else load_history or get_offered_load_source()

    def port() -> scaling.ScalerPort:
        return facade or get_facade()

    run = sweep.sweep(
        now,
        due,
        port=port,
        hot_keys=lambda: hot_keys or get_hot_key_source(),
        offered_load=lambda: offered_load or get_offered_load_source(),
        history=history,
        shrinker=lambda: shrinker or cast("shrinking.ShrinkPort", port()),  # the facade shrinks
        settings=settings,
        log=logger,
        gsi_name=settings.table_schema.gsi_name,
    )
    result = run.to_dict(alarm is not None, now)
    _emit_metrics(run)
    logger.info("scaler done", extra=result)
    if errors := run.errors:
        what = "growing or shrinking" if run.shrink.errors else "growing"
        raise DynashardError(f"{what} {len(errors)} key(s) failed: {', '.join(errors)}")
    return result
