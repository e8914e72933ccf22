"""The local alarm evaluator: CloudWatch's evaluation rules over per-minute figures, the
Lambda alarm-action event it sends, and the scaler it drives."""

from __future__ import annotations

import json
import threading
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from dynashard import names
from dynashard.core.load import write_load_rule_body
from dynashard.core.shard_info import WRITE_LOAD_GROWTH, GrowthResult, ShardInfo
from functions.scaler import app as scaler
from infra.alarm_specs import SCALER_ALARMS, AlarmSpec, Comparison
from sandbox.emulator import EmulatorConfig
from sandbox.emulator.core import PartitionEmulator
from sandbox.emulator.limits import Operation, Resource
from sandbox.env_vars import reset_function_caches
from sandbox.local_aws.alarms import (
    UNWATCHED_GAP,
    AlarmState,
    LocalAlarm,
    LocalAlarmStates,
    LocalSchedule,
    iso_time,
    scaler_action,
)
from sandbox.local_aws.logs import LocalInsightRule

EVENTS_DIR = Path(__file__).resolve().parents[3] / "events"
TABLE = "dynashard-data"
WRITE_KEY_RANGE = SCALER_ALARMS[0]  # the table's WriteKeyRangeThroughputThrottleEvents alarm
GSI_WRITE_KEY_RANGE = SCALER_ALARMS[1]
T0 = 1_800_000_000.0  # a minute boundary (divisible by 60)


class FakeMetrics:
    """A MetricsSource: per-minute values set by the test."""

    def __init__(self) -> None:
        self.values: dict[tuple[str, str, str | None], dict[int, float]] = defaultdict(dict)
        self.calls: list[tuple[str, Resource, float, float]] = []

    def put(self, metric: str, minute: float, value: float, index: str | None = None) -> None:
        self.values[(metric, TABLE, index)][int(minute)] = value

    def series(self, metric: str, resource: Resource, start: float, end: float) -> dict[int, float]:
        self.calls.append((metric, resource, start, end))
        per_minute = self.values.get((metric, resource.table, resource.index), {})
        return {m: v for m, v in per_minute.items() if start // 60 * 60 <= m < end}


class FakeScaler:
    """An alarm action recording the events it receives."""

    def __init__(self, fail: bool = False) -> None:
        self.events: list[dict[str, Any]] = []
        self.fail = fail
        self.called = threading.Event()

    def __call__(self, event: dict[str, Any]) -> dict[str, Any]:
        self.events.append(event)
        self.called.set()
        if self.fail:
            raise RuntimeError("scaler down")
        return {"grown": []}


def make_alarm(
    metrics: FakeMetrics, action: FakeScaler | None = None, spec: AlarmSpec = WRITE_KEY_RANGE
) -> LocalAlarm:
    return LocalAlarm(spec, TABLE, metrics, action, clock=lambda: T0)


def shape(value: Any) -> Any:
    """The key structure of a JSON document (values replaced by their type name)."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shape(v) for v in value[:1]]
    return type(value).__name__


# --- states and transitions -----------------------------------------------------------------
def test_no_figures_is_ok_and_invokes_nothing() -> None:
    # Given an alarm over a table without throttling (no datapoint, as DynamoDB publishes)
    metrics, action = FakeMetrics(), FakeScaler()
    alarm = make_alarm(metrics, action)
    assert alarm.state is AlarmState.INSUFFICIENT_DATA
    # When it is evaluated
    result = alarm.evaluate(T0 + 90)
    # Then missing data is not breaching: OK, and the action was not invoked
    assert result.state is AlarmState.OK
    assert result.previous_state is AlarmState.INSUFFICIENT_DATA
    assert result.datapoints[0].value is None
    assert not result.fired
    assert action.events == []


def test_breach_in_a_complete_minute_fires_the_action_once() -> None:
    # Given 412 key-range throttle events in the minute [T0, T0+60)
    metrics, action = FakeMetrics(), FakeScaler()
    metrics.put(WRITE_KEY_RANGE.metric_name, T0, 412.0)
    alarm = make_alarm(metrics, action)
    alarm.evaluate(T0 + 30)  # that minute is still running: not evaluated
    assert alarm.state is AlarmState.OK
    assert action.events == []
    # When the minute is over
    result = alarm.evaluate(T0 + 61)
    # Then the alarm goes OK -> ALARM and invokes its action once, with the datapoint
    assert (result.previous_state, result.state) == (AlarmState.OK, AlarmState.ALARM)
    assert result.datapoints[-1].start == T0
    assert result.datapoints[-1].value == 412.0
    assert result.action_result == {"grown": []}
    assert len(action.events) == 1
    # And staying in ALARM invokes nothing more (CloudWatch acts on state changes only)
    metrics.put(WRITE_KEY_RANGE.metric_name, T0 + 60, 300.0)
    assert alarm.evaluate(T0 + 125).state is AlarmState.ALARM
    assert len(action.events) == 1
    # And after a quiet minute (OK) a new breach fires again
    assert alarm.evaluate(T0 + 185).state is AlarmState.OK
    metrics.put(WRITE_KEY_RANGE.metric_name, T0 + 180, 5.0)
    assert alarm.evaluate(T0 + 245).fired
    assert alarm.actions_invoked == 2


def test_alarm_reads_its_own_metric_and_dimensions() -> None:
    # Given throttling on the table's writes only
    metrics = FakeMetrics()
    metrics.put(WRITE_KEY_RANGE.metric_name, T0, 10.0)
    metrics.put("WriteProvisionedThroughputThrottleEvents", T0, 99.0, index=names.GSI1_NAME)
    gsi = make_alarm(metrics, FakeScaler(), spec=GSI_WRITE_KEY_RANGE)
    reads = make_alarm(metrics, FakeScaler(), spec=SCALER_ALARMS[2])
    # Then the GSI alarm and the read alarm stay OK
    assert gsi.evaluate(T0 + 61).state is AlarmState.OK
    assert reads.evaluate(T0 + 61).state is AlarmState.OK
    assert metrics.calls[0][0] == GSI_WRITE_KEY_RANGE.metric_name
    assert metrics.calls[0][1] == Resource(TABLE, names.GSI1_NAME)
    # And a GSI breach names the index in the event's dimensions
    metrics.put(WRITE_KEY_RANGE.metric_name, T0 + 60, 3.0, index=names.GSI1_NAME)
    event = gsi.evaluate(T0 + 121).event
    assert event is not None
    metric = event["alarmData"]["configuration"]["metrics"][0]["metricStat"]["metric"]
    assert metric["dimensions"] == {"TableName": TABLE, "GlobalSecondaryIndexName": "GSI1"}


def test_threshold_comparison_comes_from_the_spec() -> None:
    metrics = FakeMetrics()
    metrics.put(WRITE_KEY_RANGE.metric_name, T0, 1.0)
    strict = replace(WRITE_KEY_RANGE, comparison=Comparison.GREATER_THAN_THRESHOLD)
    assert make_alarm(metrics, spec=strict).evaluate(T0 + 61).state is AlarmState.OK
    assert make_alarm(metrics).evaluate(T0 + 61).state is AlarmState.ALARM


def test_m_out_of_n_periods() -> None:
    # Given 2 out of 3 evaluated minutes must breach
    spec = replace(WRITE_KEY_RANGE, evaluation_periods=3, datapoints_to_alarm=2)
    metrics = FakeMetrics()
    metrics.put(spec.metric_name, T0, 4.0)
    alarm = make_alarm(metrics, spec=spec)
    # When only one minute breaches, it is OK; when a second one does, ALARM
    assert alarm.evaluate(T0 + 180).state is AlarmState.OK
    assert [p.start for p in alarm.history[-1].datapoints] == [T0, T0 + 60, T0 + 120]
    metrics.put(spec.metric_name, T0 + 120, 2.0)
    assert alarm.evaluate(T0 + 181).state is AlarmState.ALARM


def test_a_period_of_several_minutes_sums_them() -> None:
    spec = replace(WRITE_KEY_RANGE, period_s=300, threshold=10.0)
    metrics = FakeMetrics()
    for i in range(5):
        metrics.put(spec.metric_name, T0 + 60 * i, 2.0)  # 10 over the 5 minutes
    result = make_alarm(metrics, spec=spec).evaluate(T0 + 300)
    assert result.datapoints[-1].value == 10.0
    assert result.state is AlarmState.ALARM


@pytest.mark.parametrize("change", [{"statistic": "Average"}, {"period_s": 90}, {"period_s": 0}])
def test_unsupported_statistic_or_period_is_refused(change: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        make_alarm(FakeMetrics(), spec=replace(WRITE_KEY_RANGE, **change))


def test_alarm_without_action_builds_the_event_and_invokes_nothing() -> None:
    metrics = FakeMetrics()
    metrics.put(WRITE_KEY_RANGE.metric_name, T0, 7.0)
    alarm = make_alarm(metrics)
    result = alarm.evaluate(T0 + 61)
    assert result.fired
    assert not result.invoked
    assert alarm.actions_invoked == 0


def test_failed_action_is_recorded_and_the_state_change_stands() -> None:
    metrics, action = FakeMetrics(), FakeScaler(fail=True)
    metrics.put(WRITE_KEY_RANGE.metric_name, T0, 7.0)
    result = make_alarm(metrics, action).evaluate(T0 + 61)
    assert result.state is AlarmState.ALARM
    assert result.error == "RuntimeError: scaler down"
    assert len(action.events) == 1


# --- the event ---------------------------------------------------------------------------------
def test_event_has_the_lambda_alarm_action_shape_and_the_scaler_parses_it() -> None:
    # Given a breach
    metrics, action = FakeMetrics(), FakeScaler()
    metrics.put(WRITE_KEY_RANGE.metric_name, T0, 412.0)
    alarm = make_alarm(metrics, action)
    alarm.evaluate(T0 + 30)
    # When the alarm fires
    event = alarm.evaluate(T0 + 68.431).event
    assert event is not None
    # Then the event has the structure of a real Lambda alarm action
    sample = json.loads((EVENTS_DIR / "cloudwatch_alarm_lambda_action.json").read_text())
    assert shape(event) == shape(sample)
    assert event["source"] == "aws.cloudwatch"
    assert event["alarmArn"] == f"arn:aws:cloudwatch:us-east-1:000000000000:alarm:{alarm.name}"
    assert event["alarmData"]["previousState"]["value"] == "OK"
    assert event["time"] == iso_time(T0 + 68.431)
    reason_data = json.loads(event["alarmData"]["state"]["reasonData"])
    assert reason_data["recentDatapoints"] == [412.0]
    assert reason_data["startDate"] == iso_time(T0)
    assert reason_data["threshold"] == WRITE_KEY_RANGE.threshold
    assert "412.0" in event["alarmData"]["state"]["reason"]
    # And the scaler reads from it what the spec says
    parsed = scaler.parse_alarm(event)
    assert parsed.state == "ALARM"
    assert parsed.metric_names == (WRITE_KEY_RANGE.metric_name,)
    assert parsed.table_name == TABLE
    assert parsed.index_name is None
    assert parsed.window_s == WRITE_KEY_RANGE.period_s
    assert parsed.timestamp.timestamp() == pytest.approx(T0 + 68.431)


def test_iso_time_is_cloudwatch_format() -> None:
    assert iso_time(1708170788.431) == "2024-02-17T11:53:08.431+0000"


# --- the real scaler, with hot keys from the emulator's figures -------------------------------
class FakeFacade:
    """The part of Dynashard the scaler uses, recording growth."""

    def __init__(self, shards: int = 1) -> None:
        self.shards = shards
        self.grown: list[tuple[str, int]] = []

    def shard_info(self, key: str) -> ShardInfo:
        return ShardInfo(key, self.shards, 0, ((0, self.shards),), True)

    def grow(self, key: str, target: int, *, reason: str | None = None) -> GrowthResult:
        self.grown.append((key, target))
        previous, self.shards = self.shards, target
        return GrowthResult(key, previous, target, True, "grown")

    def sharded_keys(self) -> list[ShardInfo]:
        # what the sweep's shrink pass lists (the key, grown; its load is unknown here)
        return [self.shard_info("HOT")] if self.shards > 1 else []


#: Applies the scaler's test settings, with extra environment variables.
ScalerEnvironment = Callable[[dict[str, str] | None], None]


@pytest.fixture
def scaler_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[ScalerEnvironment]:
    """Set the scaler's settings to a 50 WCU/s limit and writers that try once (cold).

    Yields a function that applies them, with extra variables; the functions' caches
    are reset when applied and again after the test, so the scaler starts cold.
    """

    def apply(extra: dict[str, str] | None = None) -> None:
        for key, value in {
            names.ENV_DATA_TABLE: TABLE,
            names.ENV_METADATA_TABLE: "dynashard-shards",
            names.ENV_PARTITION_WCU: "50",
            names.ENV_TARGET_UTILIZATION: "0.8",
            names.ENV_WRITE_MAX_ATTEMPTS: "1",
            **(extra or {}),
        }.items():
            monkeypatch.setenv(key, value)
        reset_function_caches()

    yield apply
    reset_function_caches()


def test_scaler_action_grows_the_hot_key_from_the_emulator_figures(
    scaler_environment: ScalerEnvironment,
) -> None:
    # Given an emulator (not started: no socket) whose figures show one hot key at
    # 50 WCU/s (scale 0.05) wanting 200 WCU/s for a whole minute, from writers that
    # try each write once (each throttled request is a write turned away)
    emulator = PartitionEmulator("http://127.0.0.1:9", EmulatorConfig(scale=0.05))
    table = Resource(TABLE)
    for second in range(60):
        ts = T0 + second
        for _ in range(50):
            emulator.metrics.record_key(Operation.WRITE, table, "HOT#0", ts, units=1.0)
        for _ in range(150):
            emulator.metrics.record_key(Operation.WRITE, table, "HOT#0", ts, throttled=True)
    emulator.metrics.add(WRITE_KEY_RANGE.metric_name, table, 9000.0, T0)
    scaler_environment(None)
    facade = FakeFacade()
    alarm = LocalAlarm(
        WRITE_KEY_RANGE, TABLE, emulator.metrics, scaler_action(emulator, facade), clock=lambda: T0
    )
    # When the alarm is evaluated after the minute
    result = alarm.evaluate(T0 + 61)
    # Then the scaler grew the key to what 200 WCU/s needs at 80 % of 50 WCU/s: 5 shards
    assert result.error is None
    assert facade.grown == [("HOT", 5)]
    assert result.action_result["grown"][0]["current"] == 5


def test_an_alarm_left_in_alarm_is_swept_and_its_key_grown_again(
    scaler_environment: ScalerEnvironment,
) -> None:
    # Given a hot key at 2 x its 50 WCU/s limit in the first minute, grown 1 -> 3 when
    # the alarm fired, then offered more in the second minute: 150 WCU/s through its 3
    # shards and 150 writes/s turned away (writers try each write once)
    emulator = PartitionEmulator("http://127.0.0.1:9", EmulatorConfig(scale=0.05))
    table = Resource(TABLE)

    def load(minute: int, shards: int, throttled: int) -> None:
        for second in range(60):
            ts = T0 + minute + second
            for shard in range(shards):
                for _ in range(50):
                    emulator.metrics.record_key(
                        Operation.WRITE, table, f"HOT#{shard}", ts, units=1.0
                    )
            for _ in range(throttled):
                emulator.metrics.record_key(Operation.WRITE, table, "HOT#0", ts, throttled=True)
        emulator.metrics.add(WRITE_KEY_RANGE.metric_name, table, 60.0 * throttled, T0 + minute)

    alarm_name = f"{TABLE}-{WRITE_KEY_RANGE.id}"
    scaler_environment({names.ENV_COOLDOWN_S: "0", names.ENV_SCALER_ALARM_NAMES: alarm_name})
    now = [T0 + 61]
    facade, states = FakeFacade(), LocalAlarmStates()
    action = scaler_action(emulator, facade, alarm_states=states)
    alarm = LocalAlarm(WRITE_KEY_RANGE, TABLE, emulator.metrics, action, clock=lambda: now[0])
    states.alarms.append(alarm)
    sweep = LocalSchedule(action, rate_s=60.0, clock=lambda: now[0])
    load(0, 1, 50)
    assert alarm.evaluate().fired and facade.grown == [("HOT", 3)]
    # When the next minute ends with the alarm still in ALARM (no new action)
    load(60, 3, 150)
    now[0] = T0 + 121
    assert not alarm.evaluate().fired and alarm.state is AlarmState.ALARM
    run = sweep.tick()
    # Then the sweep found it in ALARM and grew the key for the 150 + 150 WCU/s it
    # was offered: ceil(300 / (0.8 x 50)) = 8 shards
    assert run is not None and run.error is None
    assert [a["alarm"] for a in run.result["alarms"]] == [alarm_name]
    assert facade.grown == [("HOT", 3), ("HOT", 8)]


class FakeShrinker:
    """The part of Dynashard the shrink sweep uses: two keys at 8 shards, recording shrinks."""

    def __init__(self, grown_for: frozenset[str] = frozenset()) -> None:
        self.listed = 0
        self.shrunk: list[tuple[str, int]] = []
        self.grown_for = grown_for

    def sharded_keys(self) -> list[ShardInfo]:
        self.listed += 1
        return [
            ShardInfo(k, 8, 0, ((0, 8),), True, grown_for=self.grown_for) for k in ("BUSY", "COOL")
        ]

    def shrink(self, key: str, target: int) -> GrowthResult:
        self.shrunk.append((key, target))
        return GrowthResult(key, 8, target, True, "shrunk")


def test_a_sweep_shrinks_only_once_the_local_rule_has_watched_a_whole_cool_period(
    scaler_environment: ScalerEnvironment,
) -> None:
    # Given the write-load rule created at T0 with BUSY offered 200 WCU/s (half of its 8
    # shards x 50 WCU/s) and COOL 30 WCU/s, every minute from then on, and a cool
    # period of 5 minutes; both keys grown on the write-load report (so a report that
    # states a bound on them could shrink them absent)
    now = [T0]
    rule = LocalInsightRule(write_load_rule_body(["g"]), clock=lambda: now[0])
    for minute in range(10):
        for key, wcu in (("BUSY", 200 * 60), ("COOL", 30 * 60)):
            line = {"message": "write load", "logical_key": key, "offered_wcu": wcu}
            rule.put(json.dumps(line), timestamp=T0 + 60 * minute + 1)
    scaler_environment({names.ENV_SHRINK_COOL_PERIOD_S: "300", names.ENV_COOLDOWN_S: "0"})
    shrinker = FakeShrinker(grown_for=frozenset({WRITE_LOAD_GROWTH}))
    emulator = PartitionEmulator("http://127.0.0.1:9", EmulatorConfig(scale=0.05))
    action = scaler_action(emulator, FakeFacade(), load_history=rule, shrinker=shrinker)
    sweep = LocalSchedule(action, rate_s=60.0, clock=lambda: now[0])
    # When the sweep runs every minute before the rule has seen 5 minutes
    for minute in range(1, 5):
        now[0] = T0 + 60 * minute
        run = sweep.tick()
        # Then the rule knows no key's load yet: both keys are kept as unknown, none
        # shrinks (and the handler never falls back to the deployed rule's adapter,
        # which the template names: it would call CloudWatch)
        # and the sweep says its history is no evidence (issue 38, bug 9)
        assert run is not None and run.error is None, run
        unknown = (
            f"no evidence in its write-load report ({UNWATCHED_GAP}): its load is unknown, not idle"
        )
        assert run.result["shrink"] == {
            "candidates": 2,
            "shrunk": [],
            "kept": [{"key": k, "reason": unknown} for k in ("BUSY", "COOL")],
            "errors": [],
            "no_evidence": [UNWATCHED_GAP],
        }
    assert shrinker.shrunk == []
    # When it runs once the rule has seen 5 minutes
    now[0] = T0 + 300
    run = sweep.tick()
    # Then COOL shrinks to what 30 WCU/s needs at 80 % of 50: 1 shard; BUSY stays
    assert run is not None and run.error is None, run
    assert shrinker.shrunk == [("COOL", 1)]
    (kept,) = run.result["shrink"]["kept"]
    assert kept["key"] == "BUSY" and "low-water" in kept["reason"]


def test_an_alarm_event_never_reads_the_load_history(
    scaler_environment: ScalerEnvironment,
) -> None:
    # Given a rule that has watched an hour of nothing, and an alarm on a hot key
    now = [T0 + 3600.0]
    rule = LocalInsightRule(write_load_rule_body(["g"]), clock=lambda: T0)
    emulator = PartitionEmulator("http://127.0.0.1:9", EmulatorConfig(scale=0.05))
    emulator.metrics.add(WRITE_KEY_RANGE.metric_name, Resource(TABLE), 9000.0, T0 + 3540)
    scaler_environment({names.ENV_SHRINK_COOL_PERIOD_S: "300"})
    shrinker = FakeShrinker()
    action = scaler_action(emulator, FakeFacade(), load_history=rule, shrinker=shrinker)
    alarm = LocalAlarm(WRITE_KEY_RANGE, TABLE, emulator.metrics, action, clock=lambda: now[0])
    # When the alarm fires
    assert alarm.evaluate(now[0] + 1).fired
    # Then the scaler did not look for keys to shrink
    assert shrinker.listed == 0


def test_local_alarm_states_lists_only_named_alarms_in_alarm() -> None:
    metrics = FakeMetrics()
    metrics.put(WRITE_KEY_RANGE.metric_name, T0, 10.0)
    hot, quiet = make_alarm(metrics), make_alarm(metrics, spec=GSI_WRITE_KEY_RANGE)
    hot.evaluate(T0 + 61)
    quiet.evaluate(T0 + 61)
    states = LocalAlarmStates([hot, quiet])
    now = datetime.fromtimestamp(T0 + 61, UTC)
    (found,) = states.alarms_in_alarm([hot.name, quiet.name, "not-an-alarm"], now)
    assert (found.name, found.state, found.timestamp, found.window_s) == (
        hot.name,
        "ALARM",
        now,
        60,
    )
    assert (found.metric_names, found.table_name, found.index_name) == (
        (WRITE_KEY_RANGE.metric_name,),
        TABLE,
        None,
    )
    assert states.alarms_in_alarm([quiet.name], now) == []


def test_a_schedule_runs_its_target_once_per_rate_and_records_failures() -> None:
    now = [T0]
    events: list[dict[str, Any]] = []

    def target(event: dict[str, Any]) -> str:
        events.append(event)
        if len(events) == 2:
            raise RuntimeError("scaler down")
        return "ok"

    schedule = LocalSchedule(target, rate_s=60.0, clock=lambda: now[0])
    assert schedule.tick() is None  # not due before a whole period
    now[0] = T0 + 60
    first = schedule.tick()
    assert first is not None and first.result == "ok"
    assert schedule.tick() is None  # once per period
    assert events[0]["source"] == "aws.events" and events[0]["detail-type"] == "Scheduled Event"
    assert scaler.is_scheduled_event(events[0])
    assert events[0]["time"] == datetime.fromtimestamp(T0 + 60, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    now[0] = T0 + 125
    second = schedule.tick()
    assert second is not None and second.error == "RuntimeError: scaler down"
    assert [r.timestamp for r in schedule.history] == [T0 + 60, T0 + 125]
    with pytest.raises(ValueError, match="rate_s"):
        LocalSchedule(target, rate_s=0)


def test_unknown_contributor_insights_mode_is_refused() -> None:
    emulator = PartitionEmulator("http://127.0.0.1:9")
    with pytest.raises(ValueError):
        scaler_action(emulator, mode="EVERYTHING")  # type: ignore[arg-type]


# --- background loop -------------------------------------------------------------------------
def test_background_loop_evaluates_until_stopped() -> None:
    # Given a breach already in the figures
    metrics, action = FakeMetrics(), FakeScaler()
    metrics.put(WRITE_KEY_RANGE.metric_name, T0, 3.0)
    alarm = LocalAlarm(WRITE_KEY_RANGE, TABLE, metrics, action, clock=lambda: T0 + 61)
    # When the loop runs
    alarm.start(interval_s=0.05, max_duration_s=10.0)
    try:
        with pytest.raises(RuntimeError):
            alarm.start()
        # Then it fires the action by itself
        assert action.called.wait(5.0)
    finally:
        alarm.stop()
    assert alarm.state is AlarmState.ALARM
    assert alarm.actions_invoked == 1
