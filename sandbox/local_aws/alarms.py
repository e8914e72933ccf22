"""A local CloudWatch alarm: the sandbox's stand-in for the alarms that invoke the scaler.

:class:`LocalAlarm` evaluates one :class:`infra.alarm_specs.AlarmSpec` (the very
definition the CDK stack turns into a CloudWatch alarm: metric, statistic, period,
M out of N evaluation periods, threshold, comparison, missing-data treatment) over the
per-minute figures the partition emulator keeps (:class:`sandbox.emulator.metrics.
Metrics`), and on a transition into ``ALARM`` invokes its action with the event a
CloudWatch Lambda alarm action delivers (``"source": "aws.cloudwatch"``,
``alarmData``; see ``events/cloudwatch_alarm_lambda_action.json``).

As CloudWatch does, it looks only at complete periods (the datapoints of the last
``evaluation_periods`` periods that ended at or before ``now``) and acts only on a
state change: an alarm that stays in ``ALARM`` does not invoke its action again. The
stack's answer to that, a schedule that invokes the scaler every minute to sweep the
alarms still in ``ALARM``, runs here as :class:`LocalSchedule` with
:class:`LocalAlarmStates` as the scaler's view of the alarms.

Evaluation is on demand (:meth:`LocalAlarm.evaluate` with an explicit ``now``), so
tests drive it with a manual clock; :meth:`LocalAlarm.start` runs it in a background
thread for the demo. :class:`sandbox.clock.AcceleratedClock` lets a whole CloudWatch
minute pass in a few seconds of wall time when the emulator, the alarm and the shard
metadata all share it.

Sources: "Using Amazon CloudWatch alarms" (evaluation of M out of N datapoints, state
changes, ``TreatMissingData``) and "Lambda alarm actions" (event shape) in the
CloudWatch User Guide; "DynamoDB metrics and dimensions" in the DynamoDB Developer
Guide.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Final, Protocol, cast

from dynashard.planning.scaling import Alarm
from infra.alarm_specs import AlarmSpec, Comparison
from sandbox.emulator.limits import Resource
from sandbox.emulator.metrics import ContributorInsightsMode

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext as PowertoolsContext

    from dynashard.planning.scaling import OfferedLoadSource, ScalerPort
    from dynashard.planning.shrinking import LoadHistory, ShrinkPort
    from sandbox.emulator.core import PartitionEmulator
    from sandbox.local_aws.lambda_runtime import LocalFunction
    from sandbox.local_aws.logs import LocalInsightRule, LocalWriteLoadRules

_log = logging.getLogger(__name__)

#: Granularity of the emulator's figures, seconds (DynamoDB publishes per minute).
METRIC_RESOLUTION_S: Final = 60

#: Region and account written into the alarm ARN of local events.
DEFAULT_REGION: Final = "us-east-1"
DEFAULT_ACCOUNT_ID: Final = "000000000000"

#: Bounds of the background loop's interval, seconds.
MIN_INTERVAL_S: Final = 0.05
MAX_INTERVAL_S: Final = 60.0


class AlarmState(StrEnum):
    """CloudWatch alarm states (``StateValue``)."""

    OK = "OK"
    ALARM = "ALARM"
    INSUFFICIENT_DATA = "INSUFFICIENT_DATA"


class MetricsSource(Protocol):
    """Per-minute metric figures; :class:`sandbox.emulator.metrics.Metrics` is one."""

    def series(self, metric: str, resource: Resource, start: float, end: float) -> dict[int, float]:
        """Return a metric per minute over ``[start, end)``.

        Parameters
        ----------
        metric : str
            Metric name, e.g. ``WriteKeyRangeThroughputThrottleEvents``.
        resource : Resource
            Table (and GSI) dimension.
        start, end : float
            Epoch seconds.

        Returns
        -------
        dict of int to float
            Minute start (epoch seconds) -> value, minutes with data only.
        """
        ...


#: What an alarm action is: called with the alarm event, returns the function's answer.
AlarmAction = Callable[[dict[str, Any]], Any]


@dataclass(frozen=True)
class Datapoint:
    """One period's statistic.

    Attributes
    ----------
    start : float
        Start of the period, epoch seconds.
    value : float or None
        The statistic (``Sum``) over the period; None when no figure was recorded.
    """

    start: float
    value: float | None


@dataclass(frozen=True)
class Evaluation:
    """The outcome of one evaluation of a :class:`LocalAlarm`.

    Attributes
    ----------
    timestamp : float
        When the alarm was evaluated, epoch seconds.
    state : AlarmState
        State after the evaluation.
    previous_state : AlarmState
        State before it.
    datapoints : tuple of Datapoint
        The evaluated periods, oldest first.
    event : dict or None
        The alarm event sent to the action (only on a transition into ``ALARM``).
    action_result : object
        What the action returned (the scaler's summary), or None.
    error : str or None
        ``"{ExceptionType}: {message}"`` when the action raised; the state change
        stands, as in CloudWatch, and the error is logged.
    invoked : bool
        True when the alarm action was invoked (an alarm without action builds the
        event but invokes nothing).
    """

    timestamp: float
    state: AlarmState
    previous_state: AlarmState
    datapoints: tuple[Datapoint, ...]
    event: dict[str, Any] | None = None
    action_result: Any = None
    error: str | None = None

    invoked: bool = False

    @property
    def fired(self) -> bool:
        """bool: True when the alarm entered ``ALARM`` here (an event was built)."""
        return self.event is not None


def iso_time(ts: float) -> str:
    """Format epoch seconds as CloudWatch writes times in alarm events.

    Parameters
    ----------
    ts : float
        Epoch seconds.

    Returns
    -------
    str
        ``YYYY-MM-DDThh:mm:ss.fff+0000`` (UTC, milliseconds).

    Examples
    --------
    >>> iso_time(0.5)
    '1970-01-01T00:00:00.500+0000'
    """
    moment = datetime.fromtimestamp(ts, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}+0000"


def _short_time(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%d/%m/%y %H:%M:%S")


def _comparison_text(comparison: Comparison) -> str:
    if comparison is Comparison.GREATER_THAN_THRESHOLD:
        return "greater than"
    return "greater than or equal to"


class LocalAlarm:
    """One CloudWatch alarm evaluated locally over the emulator's figures.

    Parameters
    ----------
    spec : AlarmSpec
        The alarm definition shared with the CDK stack.
    table_name : str
        The ``TableName`` dimension (the data table).
    metrics : MetricsSource
        Per-minute figures, e.g. ``emulator.metrics``.
    action : callable, optional
        Invoked with the Lambda alarm-action event on every transition into
        ``ALARM`` (see :func:`scaler_action`); None only records state changes.
    clock : callable
        Returns epoch seconds; used when :meth:`evaluate` gets no ``now``. Share the
        emulator's clock.
    alarm_name : str, optional
        Default ``{table_name}-{spec.id}``.
    region, account_id : str
        Written into the alarm ARN and the event.

    Raises
    ------
    ValueError
        If the statistic is not ``Sum`` (the emulator keeps sums) or the period is not
        a positive multiple of 60 seconds (its figures are per minute).

    Examples
    --------
    >>> alarm = LocalAlarm(SCALER_ALARMS[0], "dynashard-data", emulator.metrics,
    ...                    scaler_action(emulator))  # doctest: +SKIP
    >>> alarm.evaluate(now=time.time()).state  # doctest: +SKIP
    <AlarmState.OK: 'OK'>
    """

    def __init__(
        self,
        spec: AlarmSpec,
        table_name: str,
        metrics: MetricsSource,
        action: AlarmAction | None = None,
        *,
        clock: Callable[[], float] = time.time,
        alarm_name: str | None = None,
        region: str = DEFAULT_REGION,
        account_id: str = DEFAULT_ACCOUNT_ID,
    ) -> None:
        if spec.statistic != "Sum":
            raise ValueError(f"statistic {spec.statistic!r} is not supported locally (only Sum)")
        if spec.period_s <= 0 or spec.period_s % METRIC_RESOLUTION_S:
            raise ValueError(f"period_s must be a positive multiple of 60, got {spec.period_s}")
        self.spec = spec
        self.table_name = table_name
        self.metrics = metrics
        self.action = action
        self.clock = clock
        self.name = alarm_name or f"{table_name}-{spec.id}"
        self.region = region
        self.account_id = account_id
        self.state = AlarmState.INSUFFICIENT_DATA
        self.state_reason = "Unchecked: Initial alarm creation"
        self.state_timestamp = clock()
        self.history: list[Evaluation] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def arn(self) -> str:
        """str: ``arn:aws:cloudwatch:{region}:{account}:alarm:{name}``."""
        return f"arn:aws:cloudwatch:{self.region}:{self.account_id}:alarm:{self.name}"

    @property
    def resource(self) -> Resource:
        """Resource: The table (and GSI) the metric is about."""
        return Resource(self.table_name, self.spec.index_name)

    @property
    def actions_invoked(self) -> int:
        """int: How many evaluations invoked the action so far."""
        return sum(1 for e in self.history if e.invoked)

    def datapoints(self, now: float) -> tuple[Datapoint, ...]:
        """Return the statistic of the last complete periods before ``now``.

        Parameters
        ----------
        now : float
            Epoch seconds.

        Returns
        -------
        tuple of Datapoint
            ``evaluation_periods`` periods, oldest first; the newest ends at the last
            period boundary at or before ``now`` (a period still running is not
            evaluated, as in CloudWatch).
        """
        period = self.spec.period_s
        end = (now // period) * period
        start = end - self.spec.evaluation_periods * period
        series = self.metrics.series(self.spec.metric_name, self.resource, start, end)
        points = []
        for i in range(self.spec.evaluation_periods):
            p0 = start + i * period
            values = [v for m, v in series.items() if p0 <= m < p0 + period]
            points.append(Datapoint(p0, sum(values) if values else None))
        return tuple(points)

    def _reason(self, points: tuple[Datapoint, ...], breaching: bool) -> str:
        spec = self.spec
        shown = ", ".join(
            f"{p.value:.1f} ({_short_time(p.start)})" for p in points if p.value is not None
        )
        verb = "was" if breaching else "was not"
        new, old = ("ALARM", "OK") if breaching else ("OK", "ALARM")
        return (
            f"Threshold Crossed: {spec.datapoints_to_alarm} out of the last "
            f"{spec.evaluation_periods} datapoints [{shown}] {verb} "
            f"{_comparison_text(spec.comparison)} the threshold ({spec.threshold:.1f}) "
            f"(minimum {spec.datapoints_to_alarm} datapoint for {old} -> {new} transition)."
        )

    def _reason_data(self, points: tuple[Datapoint, ...], now: float) -> str:
        present = [p for p in points if p.value is not None]
        return json.dumps(
            {
                "version": "1.0",
                "queryDate": iso_time(now),
                "startDate": iso_time(points[0].start),
                "statistic": self.spec.statistic,
                "period": self.spec.period_s,
                "recentDatapoints": [p.value for p in present],
                "threshold": self.spec.threshold,
                "evaluatedDatapoints": [
                    {"timestamp": iso_time(p.start), "value": p.value} for p in reversed(present)
                ],
            },
            separators=(",", ":"),
        )

    def build_event(
        self,
        state: AlarmState,
        reason: str,
        reason_data: str,
        now: float,
    ) -> dict[str, Any]:
        """Build the event a CloudWatch Lambda alarm action delivers.

        Parameters
        ----------
        state : AlarmState
            The new state.
        reason : str
            ``StateReason`` text.
        reason_data : str
            ``StateReasonData`` JSON text.
        now : float
            Time of the state change, epoch seconds.

        Returns
        -------
        dict
            ``{"source": "aws.cloudwatch", "alarmArn", "accountId", "time", "region",
            "alarmData": {"alarmName", "state", "previousState", "configuration"}}``,
            the shape of ``events/cloudwatch_alarm_lambda_action.json``.
        """
        spec = self.spec
        stamp = iso_time(now)
        return {
            "source": "aws.cloudwatch",
            "alarmArn": self.arn,
            "accountId": self.account_id,
            "time": stamp,
            "region": self.region,
            "alarmData": {
                "alarmName": self.name,
                "state": {
                    "value": state.value,
                    "reason": reason,
                    "reasonData": reason_data,
                    "timestamp": stamp,
                },
                "previousState": {
                    "value": self.state.value,
                    "reason": self.state_reason,
                    "timestamp": iso_time(self.state_timestamp),
                },
                "configuration": {
                    "description": f"{spec.metric_name} on {self.table_name} (local alarm)",
                    "metrics": [
                        {
                            "id": "m1",
                            "metricStat": {
                                "metric": {
                                    "namespace": spec.namespace,
                                    "name": spec.metric_name,
                                    "dimensions": spec.dimensions(self.table_name),
                                },
                                "period": spec.period_s,
                                "stat": spec.statistic,
                            },
                            "returnData": True,
                        }
                    ],
                },
            },
        }

    def evaluate(self, now: float | None = None) -> Evaluation:
        """Evaluate the alarm once; invoke the action on a transition into ``ALARM``.

        Parameters
        ----------
        now : float, optional
            Epoch seconds; default the alarm's clock.

        Returns
        -------
        Evaluation
            The new state, the datapoints, and the event and action result when the
            action ran. Also appended to :attr:`history`.
        """
        with self._lock:
            at = self.clock() if now is None else now
            points = self.datapoints(at)
            breaching = self.spec.is_breaching([p.value for p in points])
            new_state = AlarmState.ALARM if breaching else AlarmState.OK
            previous = self.state
            event: dict[str, Any] | None = None
            result: Any = None
            error: str | None = None
            invoked = False
            if new_state is not previous:
                reason = self._reason(points, breaching)
                if new_state is AlarmState.ALARM:
                    event = self.build_event(new_state, reason, self._reason_data(points, at), at)
                self.state, self.state_reason, self.state_timestamp = new_state, reason, at
                if event is not None and self.action is not None:
                    invoked = True
                    try:
                        result = self.action(event)
                    except Exception as exc:  # the state change stands, as in CloudWatch
                        error = f"{type(exc).__name__}: {exc}"
                        _log.exception("alarm action of %s failed", self.name)
            evaluation = Evaluation(at, new_state, previous, points, event, result, error, invoked)
            self.history.append(evaluation)
            return evaluation

    def start(self, interval_s: float = 1.0, max_duration_s: float = 3600.0) -> None:
        """Evaluate in a background thread every ``interval_s`` wall seconds.

        Parameters
        ----------
        interval_s : float
            Wall seconds between evaluations, clamped to [0.05, 60].
        max_duration_s : float
            The loop ends by itself after this many wall seconds.

        Raises
        ------
        RuntimeError
            If the loop is already running.
        """
        if self._thread is not None:
            raise RuntimeError(f"alarm {self.name} is already running")
        interval = min(MAX_INTERVAL_S, max(MIN_INTERVAL_S, interval_s))
        rounds = max(1, int(max_duration_s / interval))
        self._stop.clear()

        def loop() -> None:
            for _ in range(rounds):
                if self._stop.wait(interval):
                    return
                try:
                    self.evaluate()
                except Exception:  # a failed read of the figures: log, evaluate again later
                    _log.exception("evaluation of alarm %s failed", self.name)

        self._thread = threading.Thread(target=loop, name=f"alarm-{self.name}", daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop the background loop (no-op when it is not running).

        Parameters
        ----------
        timeout_s : float
            Seconds to wait for the thread (an action in progress finishes first).
        """
        thread, self._thread = self._thread, None
        self._stop.set()
        if thread is not None:
            thread.join(timeout_s)


class LocalAlarmStates:
    """The scaler's ``AlarmStateSource`` port over local alarms (``DescribeAlarms``'s part).

    Parameters
    ----------
    alarms : sequence of LocalAlarm, optional
        The alarms; :attr:`alarms` may be filled after the alarms are built (their
        action needs this object first).
    """

    def __init__(self, alarms: Sequence[LocalAlarm] = ()) -> None:
        self.alarms: list[LocalAlarm] = list(alarms)

    def alarms_in_alarm(self, names: Sequence[str], now: datetime) -> list[Alarm]:
        """Return the alarms among ``names`` whose state is ``ALARM``.

        Parameters
        ----------
        names : sequence of str
            Alarm names.
        now : datetime
            End of each alarm's window (UTC).

        Returns
        -------
        list of Alarm
            One per local alarm in ``ALARM``, its window ``period x evaluation periods``.
        """
        wanted = set(names)
        return [
            Alarm(
                name=alarm.name,
                state=alarm.state.value,
                timestamp=now,
                window_s=max(60, alarm.spec.period_s * alarm.spec.evaluation_periods),
                metric_names=(alarm.spec.metric_name,),
                table_name=alarm.table_name,
                index_name=alarm.spec.index_name,
            )
            for alarm in self.alarms
            if alarm.name in wanted and alarm.state is AlarmState.ALARM
        ]


@dataclass(frozen=True)
class ScheduledRun:
    """One run of a :class:`LocalSchedule`.

    Attributes
    ----------
    timestamp : float
        When it ran, emulated epoch seconds.
    result : Any
        What the target returned (None when it raised).
    error : str or None
        ``"{ExceptionType}: {message}"`` when the target raised.
    """

    timestamp: float
    result: Any = None
    error: str | None = None


class LocalSchedule:
    """An EventBridge ``rate`` schedule with a Lambda target, on the sandbox's clock.

    Parameters
    ----------
    action : callable
        ``action(event)``: the target, called with
        :func:`sandbox.local_aws.aws_events.scheduled_event`.
    rate_s : float
        Emulated seconds between runs (``rate(1 minute)``: 60).
    clock : callable
        Emulated epoch seconds (share the emulator's :class:`sandbox.clock.AcceleratedClock`).

    Attributes
    ----------
    history : list of ScheduledRun
        Every run, in order.

    Raises
    ------
    ValueError
        If ``rate_s`` is not positive.
    """

    def __init__(
        self,
        action: AlarmAction,
        rate_s: float = 60.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if rate_s <= 0:
            raise ValueError(f"rate_s must be > 0, got {rate_s}")
        self.action = action
        self.rate_s = rate_s
        self.clock = clock
        self.history: list[ScheduledRun] = []
        self._next = clock() + rate_s
        self._tick_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def tick(self, now: float | None = None) -> ScheduledRun | None:
        """Run the target when a run is due.

        Parameters
        ----------
        now : float, optional
            Emulated epoch seconds; default the clock.

        Returns
        -------
        ScheduledRun or None
            The run, or None when none was due. A target that raises is recorded, as
            EventBridge records a failed invocation, and the schedule goes on.
        """
        from sandbox.local_aws.aws_events import scheduled_event

        with self._tick_lock:
            at = self.clock() if now is None else now
            if at < self._next:
                return None
            # A fixed rate, as EventBridge's: late checks do not push later runs back,
            # and runs missed while a check was late are not made up.
            while self._next <= at:
                self._next += self.rate_s
            event = scheduled_event(datetime.fromtimestamp(at, UTC))
            try:
                run = ScheduledRun(at, self.action(event))
            except Exception as exc:
                _log.exception("scheduled target failed")
                run = ScheduledRun(at, error=f"{type(exc).__name__}: {exc}")
            self.history.append(run)
            return run

    def start(self, interval_s: float = 1.0) -> None:
        """Check for due runs in a background thread every ``interval_s`` wall seconds.

        Parameters
        ----------
        interval_s : float
            Wall seconds between checks, clamped to [0.05, 60].

        Raises
        ------
        RuntimeError
            If it is already running.
        """
        if self._thread is not None:
            raise RuntimeError("the schedule is already running")
        interval = min(MAX_INTERVAL_S, max(MIN_INTERVAL_S, interval_s))
        self._stop.clear()

        def loop() -> None:
            while not self._stop.wait(interval):
                self.tick()

        self._thread = threading.Thread(target=loop, name="schedule", daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop the background thread (no-op when it is not running).

        Parameters
        ----------
        timeout_s : float
            Seconds to wait for a run in progress.
        """
        thread, self._thread = self._thread, None
        self._stop.set()
        if thread is not None:
            thread.join(timeout_s)


#: Why :class:`UnwatchedWriteLoad`'s history is no evidence.
UNWATCHED_GAP: Final = "the sandbox's write-load rule has not watched a whole cool period"


class UnwatchedWriteLoad:
    """A write-load rule that has watched nothing yet: every key's load unknown.

    Stands in for the stack's rule where the sandbox has none (or has not watched long
    enough): the scaler's handler would otherwise build the deployed rule's adapter
    (the template names it) and call CloudWatch. The growth planner then estimates
    from the hot keys alone, as with no rule, and the shrink sweep keeps every key
    (absent from the history: :mod:`dynashard.planning.shrinking`, never on missing
    data).
    """

    def offered_wcu(self, start: datetime, end: datetime) -> dict[str, float]:
        """Return no key's offered load.

        Parameters
        ----------
        start, end : datetime
            The window.

        Returns
        -------
        dict of str to float
            Empty.
        """
        return {}

    def peak_offered_wcu(
        self, start: datetime, end: datetime, period_s: int, max_contributors: int = 100
    ) -> LoadHistory:
        """Return an empty history of the window: no contributor, and no bound on any key.

        Parameters
        ----------
        start, end : datetime
            The window.
        period_s : int
            Seconds per datapoint.
        max_contributors : int
            Ignored.

        Returns
        -------
        LoadHistory
            No key's peak, nothing known of the keys it leaves out (its bound is the
            default, infinite), and no evidence (:attr:`LoadHistory.gaps` says so), so
            the sweep shrinks no key on it, not even one grown on the write-load
            report, and reports why.
        """
        from dynashard.planning.shrinking import LoadHistory

        return LoadHistory(start, end, period_s, gaps=(UNWATCHED_GAP,))


#: The one :class:`UnwatchedWriteLoad`.
UNWATCHED: Final = UnwatchedWriteLoad()


def scaler_action(
    emulator: PartitionEmulator,
    facade: ScalerPort | None = None,
    *,
    mode: ContributorInsightsMode = "ACCESSED_AND_THROTTLED_KEYS",
    alarm_states: LocalAlarmStates | None = None,
    offered_load: OfferedLoadSource | None = None,
    load_history: LocalInsightRule | LocalWriteLoadRules | None = None,
    shrinker: ShrinkPort | None = None,
    function: LocalFunction | None = None,
    write_load_rule: str | Sequence[str] | None = None,
) -> AlarmAction:
    """Bind the scaler handler as an alarm action, with hot keys from the emulator.

    The handler reads its settings from the environment (point it at the sandbox with
    :func:`sandbox.env_vars.function_environment`, whose ``DYNASHARD_PARTITION_WCU``
    must be the emulator's scaled limit).

    A sweep (a :class:`LocalSchedule`'s event) also shrinks the keys whose offered load
    stayed cool, once ``load_history`` has observed a whole cool period
    (``DYNASHARD_SHRINK_COOL_PERIOD_S``, emulated seconds) before the sweep: a rule
    deployed on AWS has watched the writers long before, while the local rule saw
    nothing before it was created, and that silence says nothing about the load.
    Until then the sweep gets no load history, so it grows exactly as without one.

    Parameters
    ----------
    emulator : PartitionEmulator
        Source of the Contributor-Insights-like figures
        (:class:`sandbox.emulator.insights.EmulatorHotKeySource`).
    facade : ScalerPort, optional
        A ``Dynashard``-like object; default the function's own (from the environment).
    mode : {"ACCESSED_AND_THROTTLED_KEYS", "THROTTLED_KEYS"}
        Contributor Insights mode emulated.
    alarm_states : LocalAlarmStates, optional
        What a scheduled sweep sees of the alarms; default none in ``ALARM``.
    offered_load : OfferedLoadSource, optional
        The offered write units per logical key (the stack's Contributor Insights rule
        evaluated locally, :class:`sandbox.local_aws.logs.LocalInsightRule`); default
        :data:`UNWATCHED`, so the scaler estimates writes from the hot keys alone.
    load_history : LocalInsightRule or LocalWriteLoadRules, optional
        The same rule (or its parts), read per period for the shrink sweep
        (:meth:`sandbox.local_aws.logs.LocalInsightRule.peak_offered_wcu`); default
        :data:`UNWATCHED`: the sweep never shrinks.
    shrinker : ShrinkPort, optional
        What lists and shrinks the sharded keys (a ``Dynashard``, on the emulated clock
        so that the cooldown is emulated seconds); default the function's own facade.
    function : LocalFunction, optional
        The scaler as the template deploys it (:meth:`sandbox.twin.LocalTwin.function`):
        invoked with its name, timeout and role, and each stand-in above checked against
        that role for the CloudWatch call it replaces (:mod:`sandbox.twin.ports`);
        default the handler imported, unchecked.
    write_load_rule : str or sequence of str, optional
        The write-load rule's name, or its parts' names, for the check of
        ``GetInsightRuleReport`` (one call per rule, as the deployed adapter makes).

    Returns
    -------
    callable
        ``action(event) -> dict``: the scaler's summary (an alarm event, or a
        :class:`LocalSchedule`'s event for a sweep).

    Raises
    ------
    ValueError
        For an unknown Contributor Insights mode.
    """
    from dynashard.planning.scaling import parse_time
    from functions.scaler.app import get_settings, handler, is_scheduled_event
    from sandbox.emulator.insights import EmulatorHotKeySource
    from sandbox.local_aws.aws_events import LambdaContext

    if mode not in ("ACCESSED_AND_THROTTLED_KEYS", "THROTTLED_KEYS"):
        raise ValueError(f"unknown Contributor Insights mode {mode!r}")
    hot_keys: Any = EmulatorHotKeySource(emulator, mode=mode)
    states: Any = alarm_states if alarm_states is not None else LocalAlarmStates()
    offered: Any = offered_load if offered_load is not None else UNWATCHED
    role = function.role if function is not None else None
    if role is not None:
        from sandbox.twin.ports import CheckedPort, contributor_insights_requests

        rule_names = (
            [write_load_rule]
            if write_load_rule is None or isinstance(write_load_rule, str)
            else list(write_load_rule)
        )
        rule_report = [
            ("cloudwatch", "GetInsightRuleReport", {"RuleName": rule}) for rule in rule_names
        ]
        hot_keys = CheckedPort(hot_keys, role, {"hot_keys": contributor_insights_requests})
        states = CheckedPort(
            states,
            role,
            {
                "alarms_in_alarm": lambda names, *_: [
                    ("cloudwatch", "DescribeAlarms", {"AlarmNames": list(names)})
                ]
            },
        )
        offered = CheckedPort(offered, role, {"offered_wcu": lambda *_: rule_report})
        checked_unwatched = CheckedPort(
            UNWATCHED, role, {"peak_offered_wcu": lambda *_, **__: rule_report}
        )
        if load_history is not None:
            checked_history: Any = CheckedPort(
                load_history, role, {"peak_offered_wcu": lambda *_, **__: rule_report}
            )
    invoke: Callable[..., Any] = function if function is not None else handler

    def action(event: dict[str, Any]) -> Any:
        # The stand-in has the attributes Powertools reads; the handler is typed for its.
        context = (
            function.context()
            if function is not None
            else cast("PowertoolsContext", LambdaContext(function_name="dynashard-scaler"))
        )
        history: Any = None
        if is_scheduled_event(event):
            window_start = parse_time(event.get("time")).timestamp()
            window_start -= get_settings().shrink_cool_period_s
            # Before the local rule has watched a whole cool period it knows no key's
            # load: every key is unknown, so none shrinks (never None: the handler
            # would then build the deployed rule's adapter and call CloudWatch).
            if load_history is not None and window_start >= load_history.started:
                history = checked_history if role is not None else load_history
            else:
                history = checked_unwatched if role is not None else UNWATCHED
        return invoke(
            event,
            context,
            facade=facade,
            hot_keys=hot_keys,
            alarm_states=states,
            offered_load=offered,
            load_history=history,
            shrinker=shrinker,
        )

    return action
