"""Scaler function (wiring): event shapes, settings, default adapters, metrics, the sweep.

The policy itself (load per logical key, planned counts, cooldown, what is ignored) is
tested in tests/unit/library/planning/test_scaling.py, the adapters in test_scaling_adapters.py.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from dynashard import names
from dynashard.cloudwatch.alarms import CloudWatchAlarmStates
from dynashard.cloudwatch.insights import (
    ContributorInsightsHotKeySource,
    InsightRuleOfferedLoad,
)
from dynashard.errors import DynashardError, MetadataError
from dynashard.lambda_kit.cache import reset_all
from dynashard.planning.scaling import Alarm, HotKey
from functions.scaler import app as scaler

from .support import FakeFacade, LambdaContext, load_event

ALARM_TIME = datetime(2024, 2, 17, 11, 53, 8, 431000, tzinfo=UTC)
#: The minute the sample alarms evaluated (their one datapoint: 11:51:00, period 60).
EVALUATED = (datetime(2024, 2, 17, 11, 51, tzinfo=UTC), datetime(2024, 2, 17, 11, 52, tzinfo=UTC))


class FakeHotKeys:
    """A HotKeySource returning fixed keys and recording its calls."""

    def __init__(self, keys: list[HotKey]) -> None:
        self.keys = keys
        self.calls: list[tuple[str, str | None, datetime, datetime]] = []

    def hot_keys(
        self, table_name: str, index_name: str | None, start: datetime, end: datetime
    ) -> list[HotKey]:
        self.calls.append((table_name, index_name, start, end))
        return list(self.keys)


def _jfk_hot() -> FakeHotKeys:
    return FakeHotKeys(
        [
            HotKey("DEPARTURES#JFK#0", 900.0, 120),
            HotKey("DEPARTURES#JFK#1", 950.0, 80),
            HotKey("DEPARTURES#EWR#0", 100.0, 0),
        ]
    )


def _sns_message(event: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = json.loads(event["Records"][0]["Sns"]["Message"])
    return message


def _with_sns_message(event: dict[str, Any], message: dict[str, Any]) -> dict[str, Any]:
    event["Records"][0]["Sns"]["Message"] = json.dumps(message)
    return event


def _gsi1_alarm() -> dict[str, Any]:
    """The sample SNS alarm, on the data table's GSI1."""
    event = load_event("cloudwatch_alarm_sns")
    message = _sns_message(event)
    message["Trigger"]["Dimensions"].append({"value": "GSI1", "name": "GlobalSecondaryIndexName"})
    return _with_sns_message(event, message)


# --- parsing ---------------------------------------------------------------------------------
def test_lambda_action_alarm_is_parsed() -> None:
    alarm = scaler.parse_alarm(load_event("cloudwatch_alarm_lambda_action"))
    assert alarm.name == "dynashard-data-write-key-range-throttles"
    assert alarm.state == "ALARM"
    assert alarm.timestamp == ALARM_TIME
    assert alarm.window_s == 60
    # the window the alarm evaluated (reasonData), not the minute before the state change
    assert (alarm.start, alarm.end) == EVALUATED
    assert alarm.metric_names == ("WriteKeyRangeThroughputThrottleEvents",)
    assert alarm.table_name == "dynashard-data"
    assert alarm.index_name is None


def test_sns_alarm_is_parsed_the_same() -> None:
    from_sns = scaler.parse_alarm(load_event("cloudwatch_alarm_sns"))
    from_action = scaler.parse_alarm(load_event("cloudwatch_alarm_lambda_action"))
    assert from_sns == from_action


def test_sns_gsi_dimension_and_window_of_several_periods() -> None:
    event = load_event("cloudwatch_alarm_sns")
    message = _sns_message(event)
    message["Trigger"]["Dimensions"].append({"value": "GSI1", "name": "GlobalSecondaryIndexName"})
    message["Trigger"]["EvaluationPeriods"] = 3
    message["NewStateReason"] = (
        "Threshold Crossed: 3 out of the last 3 datapoints [412.0 (17/02/24 11:51:00), "
        "10.0 (17/02/24 11:50:00), 7.0 (17/02/24 11:49:00)] was greater than the threshold "
        "(0.0) (minimum 3 datapoints for OK -> ALARM transition)."
    )
    alarm = scaler.parse_alarm(_with_sns_message(event, message))
    assert alarm.index_name == "GSI1"
    assert alarm.window_s == 180
    assert (alarm.start, alarm.end) == (EVALUATED[0] - timedelta(minutes=2), EVALUATED[1])


def test_lambda_action_window_is_the_evaluated_datapoints() -> None:
    # Given an action whose alarm evaluated 3 five-minute datapoints, the last at 11:45
    event = load_event("cloudwatch_alarm_lambda_action")
    state = event["alarmData"]["state"]
    state["reasonData"] = json.dumps(
        {
            "version": "1.0",
            "queryDate": "2024-02-17T11:53:08.423+0000",
            "startDate": "2024-02-17T11:35:00.000+0000",
            "statistic": "Sum",
            "period": 300,
            "recentDatapoints": [1.0, 5.0, 412.0],
            "threshold": 0.0,
            "evaluatedDatapoints": [
                {"timestamp": "2024-02-17T11:45:00.000+0000", "sampleCount": 5.0, "value": 412.0},
                {"timestamp": "2024-02-17T11:40:00.000+0000", "sampleCount": 5.0, "value": 5.0},
                {"timestamp": "2024-02-17T11:35:00.000+0000", "sampleCount": 5.0, "value": 1.0},
            ],
        }
    )
    event["alarmData"]["configuration"]["metrics"][0]["metricStat"]["period"] = 300
    # When it is parsed, the window is [11:35, 11:50): what the alarm saw
    alarm = scaler.parse_alarm(event)
    assert alarm.start == datetime(2024, 2, 17, 11, 35, tzinfo=UTC)
    assert alarm.end == datetime(2024, 2, 17, 11, 50, tzinfo=UTC)
    assert alarm.window_s == 900


def test_an_alarm_without_reason_data_looks_back_from_its_state_change() -> None:
    event = load_event("cloudwatch_alarm_lambda_action")
    del event["alarmData"]["state"]["reasonData"]
    event["alarmData"]["state"]["reason"] = "Threshold Crossed: no datapoints named"
    alarm = scaler.parse_alarm(event)
    assert (alarm.start, alarm.end) == (ALARM_TIME - timedelta(seconds=60), ALARM_TIME)


def test_a_metric_math_lambda_action_is_read_leniently() -> None:
    # Given a metric-math alarm's action: an expression entry without metricStat, the
    # DynamoDB metric over 2 minutes, and a metric of another namespace
    event = load_event("cloudwatch_alarm_lambda_action")
    metrics = event["alarmData"]["configuration"]["metrics"]
    metrics[0]["metricStat"]["metric"]["name"] = "ReadKeyRangeThroughputThrottleEvents"
    metrics[0]["metricStat"]["period"] = 120
    state = event["alarmData"]["state"]
    state["reasonData"] = state["reasonData"].replace('"period":60', '"period":120')
    other = {"namespace": "Custom", "name": "Other", "dimensions": {"TableName": "not-it"}}
    metrics.insert(0, {"id": "e1", "expression": "m1 + m2", "returnData": True})
    metrics.append({"id": "m2", "metricStat": {"metric": other, "period": 60}})
    # When it is parsed
    alarm = scaler.parse_alarm(event)
    # Then the expression is skipped, only AWS/DynamoDB gives dimensions, the longest
    # period is the window; the other namespace's metric keeps its namespace
    assert alarm.metric_names == ("ReadKeyRangeThroughputThrottleEvents", "Custom/Other")
    assert alarm.table_name == "dynashard-data"
    assert alarm.window_s == 120


def test_a_lambda_action_without_a_state_time_takes_the_events_time() -> None:
    event = load_event("cloudwatch_alarm_lambda_action")
    del event["alarmData"]["state"]["timestamp"]
    event["time"] = "2024-02-17T11:53:30+00:00"
    assert scaler.parse_alarm(event).timestamp == ALARM_TIME.replace(second=30, microsecond=0)


@pytest.mark.parametrize(
    "event",
    [{}, {"source": "aws.events"}, {"Records": []}, {"Records": [{"Sns": {"Message": "hi"}}]}],
)
def test_not_an_alarm_raises(event: dict[str, Any], context: LambdaContext) -> None:
    with pytest.raises(ValueError, match="alarm"):
        scaler.handler(event, context, facade=FakeFacade(), hot_keys=FakeHotKeys([]))


# --- growth -----------------------------------------------------------------------------------
@pytest.mark.parametrize("sample", ["cloudwatch_alarm_lambda_action", "cloudwatch_alarm_sns"])
def test_alarm_grows_the_hot_key_to_the_planned_count(sample: str, context: LambdaContext) -> None:
    # Given JFK on 2 shards, both throttled (~2,003 WCU/s wanted), and EWR cool on 1
    facade = FakeFacade(shards={"DEPARTURES#JFK": 2})
    hot = _jfk_hot()
    # When the alarm arrives
    summary = scaler.handler(load_event(sample), context, facade=facade, hot_keys=hot)
    # Then the source was asked about the alarm's table and window
    assert hot.calls == [("dynashard-data", None, *EVALUATED)]
    # and JFK grows to ceil(2000.5 / (1000 x 0.8)) = 3 (2 shards at the limit, and 200
    # throttled requests / 8 attempts turned away for 1,850 x 60 units consumed), EWR
    # is left alone
    assert facade.grow_calls == [("DEPARTURES#JFK", 3)]
    assert summary["alarm"] == "dynashard-data-write-key-range-throttles"
    assert summary["state"] == "ALARM"
    assert summary["grown"] == [
        {
            "key": "DEPARTURES#JFK",
            "previous": 2,
            "current": 3,
            "units_per_s": 2000.5,
            "basis": "estimated",
        }
    ]
    assert [s["key"] for s in summary["skipped"]] == ["DEPARTURES#EWR"]


def test_growth_respects_the_configured_limit_and_headroom(
    monkeypatch: pytest.MonkeyPatch, context: LambdaContext
) -> None:
    # Given the sandbox's scaled-down partition limit of 50 WCU/s
    monkeypatch.setenv("DYNASHARD_PARTITION_WCU", "50")
    monkeypatch.setenv("DYNASHARD_TARGET_UTILIZATION", "0.5")
    facade = FakeFacade()
    hot = FakeHotKeys([HotKey("HOT#0", 50.0, 60)])
    # When the alarm arrives
    scaler.handler(
        load_event("cloudwatch_alarm_lambda_action"), context, facade=facade, hot_keys=hot
    )
    # Then the count is planned from 50.1 units/s against 25 per shard
    assert facade.grow_calls == [("HOT", 3)]


def test_growth_plans_from_the_offered_load_with_the_writers_retry_budget(
    monkeypatch: pytest.MonkeyPatch, context: LambdaContext
) -> None:
    # Given writers with 4 attempts, and one shard offered 4 x its 50 WCU/s for the
    # alarm's minute: 150 writes/s turned away, each throttled 4 times
    monkeypatch.setenv("DYNASHARD_PARTITION_WCU", "50")
    monkeypatch.setenv("DYNASHARD_WRITE_MAX_ATTEMPTS", "4")
    facade = FakeFacade()
    hot = FakeHotKeys([HotKey("HOT#0", 50.0, 150 * 60 * 4)])
    # When the alarm arrives
    summary = scaler.handler(
        load_event("cloudwatch_alarm_lambda_action"), context, facade=facade, hot_keys=hot
    )
    # Then the key grows in one step to what 200 units/s need at 40 per shard: 5
    assert facade.grow_calls == [("HOT", 5)]
    assert summary["grown"][0]["units_per_s"] == pytest.approx(200.0)


class FakeOfferedLoad:
    def __init__(self, offered: dict[str, float]) -> None:
        self.offered = offered
        self.calls: list[tuple[datetime, datetime]] = []

    def offered_wcu(self, start: datetime, end: datetime) -> dict[str, float]:
        self.calls.append((start, end))
        return dict(self.offered)


def test_writes_are_planned_from_the_offered_load_the_writers_reported(
    monkeypatch: pytest.MonkeyPatch, context: LambdaContext
) -> None:
    # Given one shard throttled at 50 WCU/s (retries make the estimate a lower bound),
    # and writers that report 12,000 WCU offered in the alarm's minute (200 WCU/s)
    monkeypatch.setenv("DYNASHARD_PARTITION_WCU", "50")
    monkeypatch.setenv("DYNASHARD_TARGET_UTILIZATION", "0.5")
    facade = FakeFacade()
    hot = FakeHotKeys([HotKey("HOT#0", 50.0, 60), HotKey("COUNTER#C#0", 50.0, 600)])
    offered = FakeOfferedLoad({"HOT": 12_000.0, "COLD": 60.0})
    # When the alarm arrives
    summary = scaler.handler(
        load_event("cloudwatch_alarm_lambda_action"),
        context,
        facade=facade,
        hot_keys=hot,
        offered_load=offered,
    )
    # Then the rule was asked about the alarm's window, HOT grows in one step to
    # ceil(200 / 25) = 8 on the offered basis, the counter (not in the writers' report)
    # on the estimate, and COLD (offered, but not hot) is left alone
    assert offered.calls == [EVALUATED]
    grown = {g["key"]: (g["current"], g["basis"]) for g in summary["grown"]}
    assert grown["HOT"] == (8, "offered")
    assert grown["COUNTER#C"][1] == "estimated"
    assert "COLD" not in grown


def test_the_default_offered_load_source_is_the_stacks_rule(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert scaler.get_offered_load_source() is None
    reset_all()  # a new container
    monkeypatch.setenv("DYNASHARD_WRITE_LOAD_RULE", "stack-offered-write-units")
    source = scaler.get_offered_load_source()
    assert isinstance(source, InsightRuleOfferedLoad)
    assert source.rule_name == "stack-offered-write-units"
    assert source.rule_names == ("stack-offered-write-units",)


def test_the_offered_load_source_reads_every_part_of_the_stacks_rule(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given the stack's rule in three parts, named comma-separated, part 0 first
    reset_all()  # a new container
    rules = [f"stack-offered-write-units-{i}-of-3" for i in range(3)]
    monkeypatch.setenv("DYNASHARD_WRITE_LOAD_RULE", ",".join(rules))
    # Then the adapter reads the three, in part order
    source = scaler.get_offered_load_source()
    assert isinstance(source, InsightRuleOfferedLoad)
    assert source.rule_names == tuple(rules)


def test_index_alarm_grows_the_logical_key_behind_the_gsi1_keys(context: LambdaContext) -> None:
    # Given a GSI1 key-range alarm and the index's hot keys
    hot = FakeHotKeys([HotKey("DEPARTURES#JFK#2013-01-01#0", 0.0, 48_000)])
    facade = FakeFacade()
    # When the alarm arrives
    scaler.handler(_gsi1_alarm(), context, facade=facade, hot_keys=hot)
    # Then the index was asked, and the logical key (not "{logical}#{bucket}") grows
    # (one GSI1 key at its limit plus 48,000 / 60 s / 8 attempts = 1,100 units/s)
    assert hot.calls[0][1] == "GSI1"
    assert facade.grow_calls == [("DEPARTURES#JFK", 2)]


def test_an_alarm_on_a_renamed_time_bucket_gsi_grows_the_logical_key(
    context: LambdaContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a table whose time-bucket GSI is "ByTime" (DYNASHARD_GSI_NAME), a key-range
    # alarm on it and the index's hot keys
    monkeypatch.setenv(names.ENV_GSI_NAME, "ByTime")
    event = load_event("cloudwatch_alarm_sns")
    message = _sns_message(event)
    message["Trigger"]["Dimensions"].append({"value": "ByTime", "name": "GlobalSecondaryIndexName"})
    hot = FakeHotKeys([HotKey("DEPARTURES#JFK#2013-01-01#0", 0.0, 48_000)])
    facade = FakeFacade()
    # When the alarm arrives
    summary = scaler.handler(
        _with_sns_message(event, message), context, facade=facade, hot_keys=hot
    )
    # Then the index's keys map to the logical key, which grows as on GSI1
    assert hot.calls[0][1] == "ByTime"
    assert facade.grow_calls == [("DEPARTURES#JFK", 2)]
    assert not summary["skipped"]


def test_growth_metrics_keep_the_key_out_of_the_dimensions(
    context: LambdaContext, capsys: pytest.CaptureFixture[str]
) -> None:
    facade = FakeFacade(shards={"DEPARTURES#JFK": 2})
    scaler.handler(
        load_event("cloudwatch_alarm_lambda_action"), context, facade=facade, hot_keys=_jfk_hot()
    )
    blobs = [json.loads(x) for x in capsys.readouterr().out.splitlines() if '"_aws"' in x]
    shard_count = [b for b in blobs if "ShardCount" in b]
    assert len(shard_count) == 1
    assert shard_count[0]["key"] == "DEPARTURES#JFK"
    assert shard_count[0]["ShardCount"] in (3, 3.0, [3.0])
    dims = shard_count[0]["_aws"]["CloudWatchMetrics"][0]["Dimensions"]
    assert all("key" not in d for d in dims)
    assert any(b.get("ShardsGrown") in (1, 1.0, [1.0]) for b in blobs)


def test_an_alarm_mixing_key_range_and_table_throttling_grows_nothing(
    context: LambdaContext, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a metric-math alarm action: key-range throttles plus the table's throttles
    event = load_event("cloudwatch_alarm_lambda_action")
    metrics = event["alarmData"]["configuration"]["metrics"]
    table = {
        "namespace": "AWS/DynamoDB",
        "name": "WriteThrottleEvents",
        "dimensions": {"TableName": "dynashard-data"},
    }
    metrics.insert(0, {"id": "e1", "expression": "m1 + m2", "returnData": True})
    metrics.append({"id": "m2", "metricStat": {"metric": table, "period": 60}})
    facade, hot = FakeFacade(shards={"DEPARTURES#JFK": 2}), _jfk_hot()
    # When the scaler is invoked
    summary = scaler.handler(event, context, facade=facade, hot_keys=hot)
    # Then nothing is grown, the report says why, and the ignored alarm is counted
    assert hot.calls == [] and facade.grow_calls == []
    assert "WriteThrottleEvents" in summary["ignored"]
    blobs = [json.loads(x) for x in capsys.readouterr().out.splitlines() if '"_aws"' in x]
    assert any(b.get("AlarmsIgnored") in (1, 1.0, [1.0]) for b in blobs)


def test_a_search_expression_alarm_grows_nothing(context: LambdaContext) -> None:
    # Given an alarm whose expression searches for metrics of its own
    event = load_event("cloudwatch_alarm_lambda_action")
    search = "SEARCH('{AWS/DynamoDB,TableName} ThrottledRequests', 'Sum', 60)"
    metrics = event["alarmData"]["configuration"]["metrics"]
    metrics.insert(0, {"id": "e1", "expression": f"m1 + SUM({search})", "returnData": True})
    facade, hot = FakeFacade(shards={"DEPARTURES#JFK": 2}), _jfk_hot()
    summary = scaler.handler(event, context, facade=facade, hot_keys=hot)
    assert hot.calls == [] and facade.grow_calls == []
    assert "SEARCH" in summary["ignored"]


def test_ok_state_is_ignored(context: LambdaContext) -> None:
    event = load_event("cloudwatch_alarm_lambda_action")
    event["alarmData"]["state"]["value"] = "OK"
    facade, hot = FakeFacade(), _jfk_hot()
    summary = scaler.handler(event, context, facade=facade, hot_keys=hot)
    assert summary["state"] == "OK"
    assert summary["grown"] == [] and "ignored" in summary
    assert hot.calls == [] and facade.grow_calls == []


def test_ok_state_in_sns_is_ignored(context: LambdaContext) -> None:
    event = load_event("cloudwatch_alarm_sns")
    message = _sns_message(event)
    message["NewStateValue"] = "OK"
    facade, hot = FakeFacade(), _jfk_hot()
    summary = scaler.handler(
        _with_sns_message(event, message), context, facade=facade, hot_keys=hot
    )
    assert summary["state"] == "OK"
    assert hot.calls == [] and facade.grow_calls == []


def test_failure_on_one_key_still_grows_the_others_then_raises(context: LambdaContext) -> None:
    # Given two hot keys, the first of which cannot be grown
    hot = FakeHotKeys([HotKey("A#0", 0.0, 6000), HotKey("B#0", 0.0, 60)])
    facade = FakeFacade(grow_raises={"A": MetadataError()})
    # When the alarm arrives
    with pytest.raises(DynashardError, match="growing 1 key"):
        scaler.handler(load_event("cloudwatch_alarm_sns"), context, facade=facade, hot_keys=hot)
    # Then B was still grown before the invocation failed (so it is retried)
    assert ("B", 2) in facade.grow_calls
    assert facade.shards["B"] == 2


def test_a_failed_growth_is_logged_by_the_functions_logger(
    context: LambdaContext, caplog: pytest.LogCaptureFixture
) -> None:
    hot = FakeHotKeys([HotKey("A#0", 0.0, 6000)])
    facade = FakeFacade(grow_raises={"A": MetadataError()})
    with pytest.raises(DynashardError):
        scaler.handler(load_event("cloudwatch_alarm_sns"), context, facade=facade, hot_keys=hot)
    failed = [r for r in caplog.records if r.getMessage() == "growth failed"]
    assert len(failed) == 1
    # through Powertools' Logger (its service name), with the key and the exception
    assert failed[0].name == scaler.logger.name != "dynashard.planning.scaling"
    assert failed[0].__dict__["key"] == "A"
    assert failed[0].exc_info is not None and failed[0].exc_info[0] is MetadataError


def test_the_default_adapters_are_the_aws_ones() -> None:
    assert isinstance(scaler.get_hot_key_source(), ContributorInsightsHotKeySource)
    assert isinstance(scaler.get_alarm_states(), CloudWatchAlarmStates)
    assert scaler.get_hot_key_source() is scaler.get_hot_key_source()  # once per container


# --- the sweep: alarms that stay in ALARM ------------------------------------------------------
SWEEP_TIME = datetime(2024, 2, 17, 11, 54, tzinfo=UTC)


class FakeAlarmStates:
    """An AlarmStateSource that reports fixed alarms in ALARM and records its calls."""

    def __init__(self, alarms: list[Alarm]) -> None:
        self.alarms = alarms
        self.calls: list[tuple[list[str], datetime]] = []

    def alarms_in_alarm(self, names: Sequence[str], now: datetime) -> list[Alarm]:
        self.calls.append((list(names), now))
        return [a for a in self.alarms if a.name in names]


def _still_in_alarm(name: str = "dynashard-dev-TableWriteKeyRange") -> Alarm:
    return Alarm(
        name=name,
        state="ALARM",
        timestamp=SWEEP_TIME,
        window_s=60,
        metric_names=("WriteKeyRangeThroughputThrottleEvents",),
        table_name="dynashard-data",
    )


def test_a_sweep_grows_the_keys_of_an_alarm_that_stayed_in_alarm(
    monkeypatch: pytest.MonkeyPatch, context: LambdaContext
) -> None:
    # Given the scaler's two write alarms, one still in ALARM a minute after it fired
    monkeypatch.setenv(
        "DYNASHARD_SCALER_ALARM_NAMES",
        "dynashard-dev-TableWriteKeyRange, dynashard-dev-Gsi1WriteKeyRange",
    )
    states = FakeAlarmStates([_still_in_alarm()])
    facade, hot = FakeFacade(shards={"DEPARTURES#JFK": 2}), _jfk_hot()
    # When the schedule invokes the scaler
    result = scaler.handler(
        load_event("eventbridge_scheduled_sweep"),
        context,
        facade=facade,
        hot_keys=hot,
        alarm_states=states,
    )
    # Then CloudWatch was asked about both alarms, as of the schedule's time
    assert states.calls == [
        (["dynashard-dev-TableWriteKeyRange", "dynashard-dev-Gsi1WriteKeyRange"], SWEEP_TIME)
    ]
    # and the alarm in ALARM was handled as if it had fired: its last minute, JFK grown
    assert hot.calls == [("dynashard-data", None, SWEEP_TIME - timedelta(seconds=60), SWEEP_TIME)]
    assert facade.grow_calls == [("DEPARTURES#JFK", 3)]
    assert result["sweep"] == SWEEP_TIME.isoformat()
    assert [a["alarm"] for a in result["alarms"]] == ["dynashard-dev-TableWriteKeyRange"]


def test_a_sweep_without_alarms_in_alarm_does_nothing(
    monkeypatch: pytest.MonkeyPatch, context: LambdaContext
) -> None:
    # Given the scaler's alarm, asked about by the sweep but not in ALARM
    monkeypatch.setenv("DYNASHARD_SCALER_ALARM_NAMES", "dynashard-dev-TableWriteKeyRange")
    states, facade, hot = FakeAlarmStates([]), FakeFacade(), _jfk_hot()
    result = scaler.handler(
        load_event("eventbridge_scheduled_sweep"),
        context,
        facade=facade,
        hot_keys=hot,
        alarm_states=states,
    )
    # Then CloudWatch was asked, and nothing else happened
    assert states.calls == [(["dynashard-dev-TableWriteKeyRange"], SWEEP_TIME)]
    assert result["alarms"] == [] and hot.calls == [] and facade.grow_calls == []


def test_a_sweep_with_nothing_to_do_builds_no_facade_nor_hot_key_source(
    monkeypatch: pytest.MonkeyPatch, context: LambdaContext
) -> None:
    # Given a cold scaler whose alarm is not in ALARM, and no write-load rule to shrink by
    monkeypatch.setenv("DYNASHARD_SCALER_ALARM_NAMES", "dynashard-dev-TableWriteKeyRange")
    # When the schedule invokes it with its own facade and hot-key source
    result = scaler.handler(
        load_event("eventbridge_scheduled_sweep"), context, alarm_states=FakeAlarmStates([])
    )
    # Then it answered without building either (no DynamoDB client in a cold sweep)
    assert result["alarms"] == []
    assert not scaler.get_facade.cached
    assert not scaler.get_hot_key_source.cached


# --- the sweep shrinks cool keys -----------------------------------------------------------------
class FixedHistory:
    """A LoadHistorySource with fixed peaks (WCU/s), recording its windows."""

    def __init__(self, peaks: dict[str, float]) -> None:
        self.peaks = peaks
        self.calls: list[tuple[datetime, datetime, int]] = []

    def peak_offered_wcu(self, start: datetime, end: datetime, period_s: int) -> Any:
        from dynashard.planning.shrinking import LoadHistory

        self.calls.append((start, end, period_s))
        return LoadHistory(start, end, period_s, dict(self.peaks))


class FakeShrinker:
    def __init__(self, counts: dict[str, int]) -> None:
        from dynashard.core.shard_info import ShardInfo

        self.infos = [ShardInfo(k, n, 0, ((0, 1), (1, n))) for k, n in counts.items()]
        self.calls: list[tuple[str, int]] = []

    def sharded_keys(self) -> list[Any]:
        return list(self.infos)

    def shrink(self, key: str, target: int) -> Any:
        from dynashard.core.shard_info import GrowthResult

        self.calls.append((key, target))
        return GrowthResult(key, 8, target, True, "shrunk")


def test_a_sweep_shrinks_through_the_injected_facade_when_no_shrinker_is_given(
    monkeypatch: pytest.MonkeyPatch, context: LambdaContext
) -> None:
    # Given a facade that can also shrink (as Dynashard does), and no separate shrinker
    monkeypatch.setenv("DYNASHARD_SHRINK_COOL_PERIOD_S", "900")

    class ShrinkingFacade(FakeFacade):
        def __init__(self) -> None:
            super().__init__()
            self.shrinker = FakeShrinker({"DEPARTURES#JFK": 8})

        def sharded_keys(self) -> list[Any]:
            return self.shrinker.sharded_keys()

        def shrink(self, key: str, target: int) -> Any:
            return self.shrinker.shrink(key, target)

    facade = ShrinkingFacade()
    # When the schedule invokes the scaler with that facade
    scaler.handler(
        load_event("eventbridge_scheduled_sweep"),
        context,
        facade=facade,
        hot_keys=_jfk_hot(),
        alarm_states=FakeAlarmStates([]),
        load_history=FixedHistory({"DEPARTURES#JFK": 150.0}),
    )
    # Then the injected facade shrank the cool key (not one built from the environment)
    assert facade.shrinker.calls == [("DEPARTURES#JFK", 1)]


def test_a_sweep_shrinks_the_keys_that_stayed_cool(
    monkeypatch: pytest.MonkeyPatch, context: LambdaContext
) -> None:
    # Given two keys at 8 shards: JFK cool (150 WCU/s), EWR above 8 x 1000 x 0.4 WCU/s
    monkeypatch.setenv("DYNASHARD_SHRINK_COOL_PERIOD_S", "900")
    history = FixedHistory({"DEPARTURES#JFK": 150.0, "DEPARTURES#EWR": 3500.0})
    shrinker = FakeShrinker({"DEPARTURES#JFK": 8, "DEPARTURES#EWR": 8})
    # When the schedule invokes the scaler
    result = scaler.handler(
        load_event("eventbridge_scheduled_sweep"),
        context,
        facade=FakeFacade(),
        hot_keys=_jfk_hot(),
        alarm_states=FakeAlarmStates([]),
        load_history=history,
        shrinker=shrinker,
    )
    # Then the last 15 minutes were read per minute, JFK shrank to 1, EWR was kept
    assert history.calls == [(SWEEP_TIME - timedelta(seconds=900), SWEEP_TIME, 60)]
    assert shrinker.calls == [("DEPARTURES#JFK", 1)]
    assert result["shrink"]["shrunk"] == [
        {"key": "DEPARTURES#JFK", "previous": 8, "current": 1, "peak_units_per_s": 150.0}
    ]
    assert [k["key"] for k in result["shrink"]["kept"]] == ["DEPARTURES#EWR"]


def test_a_sweep_on_an_empty_write_load_report_shrinks_nothing_and_counts_it(
    monkeypatch: pytest.MonkeyPatch,
    context: LambdaContext,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Given a key at 8 shards and a write-load report that names nobody (issue 38, bug 9)
    from dynashard.planning.shrinking import LoadHistory

    monkeypatch.setenv("DYNASHARD_SHRINK_COOL_PERIOD_S", "900")

    class EmptyReport:
        def peak_offered_wcu(self, start: datetime, end: datetime, period_s: int) -> Any:
            return LoadHistory.from_report(start, end, period_s, {}, [], rule="rule")

    shrinker = FakeShrinker({"DEPARTURES#JFK": 8})
    # When the schedule invokes the scaler
    result = scaler.handler(
        load_event("eventbridge_scheduled_sweep"),
        context,
        facade=FakeFacade(),
        hot_keys=_jfk_hot(),
        alarm_states=FakeAlarmStates([]),
        load_history=EmptyReport(),
        shrinker=shrinker,
    )
    # Then nothing shrank, the report says why, and the scaler counted it
    assert shrinker.calls == [] and result["shrink"]["shrunk"] == []
    assert result["shrink"]["no_evidence"] == [
        "rule: the report names no contributor and has no datapoint"
    ]
    captured = capsys.readouterr()
    blobs = [json.loads(x) for x in captured.out.splitlines() if '"_aws"' in x]
    assert any(b.get("WriteLoadReportsWithoutEvidence") in (1, 1.0, [1.0]) for b in blobs)
    [warning] = [r for r in caplog.records if r.getMessage() == "write-load report is no evidence"]
    assert warning.levelname == "WARNING"


def test_an_alarm_never_shrinks(context: LambdaContext) -> None:
    history, shrinker = FixedHistory({}), FakeShrinker({"DEPARTURES#JFK": 8})
    result = scaler.handler(
        load_event("cloudwatch_alarm_lambda_action"),
        context,
        facade=FakeFacade(),
        hot_keys=FakeHotKeys([]),
        load_history=history,
        shrinker=shrinker,
    )
    assert history.calls == [] and shrinker.calls == [] and "shrink" not in result


def test_a_sweep_without_the_write_load_rule_does_not_shrink(context: LambdaContext) -> None:
    # The default history is the stack's rule; without it the scaler cannot tell cool keys
    result = scaler.handler(
        load_event("eventbridge_scheduled_sweep"),
        context,
        facade=FakeFacade(),
        hot_keys=_jfk_hot(),
        alarm_states=FakeAlarmStates([]),
    )
    assert result["shrink"] == {"candidates": 0, "shrunk": [], "kept": [], "errors": []}
