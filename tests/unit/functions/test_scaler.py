"""Scaler function: alarm shapes, load per logical key, growth, Contributor Insights source."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from dynashard.errors import CooldownActiveError, DynashardError, MetadataError
from functions.scaler import app as scaler
from functions.scaler.hot_keys import ContributorInsightsHotKeySource, HotKey

from .support import FakeService, LambdaContext, load_event

ALARM_TIME = datetime(2024, 2, 17, 11, 53, 8, 431000, tzinfo=UTC)


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
    alarm = scaler.parse_alarm(_with_sns_message(event, message))
    assert alarm.index_name == "GSI1"
    assert alarm.window_s == 180
    assert alarm.start == ALARM_TIME - timedelta(seconds=180)


@pytest.mark.parametrize(
    "event",
    [{}, {"source": "aws.events"}, {"Records": []}, {"Records": [{"Sns": {"Message": "hi"}}]}],
)
def test_not_an_alarm_raises(event: dict[str, Any], context: LambdaContext) -> None:
    with pytest.raises(ValueError, match="alarm"):
        scaler.handler(event, context, service=FakeService(), hot_keys=FakeHotKeys([]))


# --- load per logical key: the pure part is tested in tests/unit/library/test_planning.py
def test_gsi1_buckets_are_separate_loads_and_the_busiest_sets_the_count(
    context: LambdaContext,
) -> None:
    # Given a GSI1 alarm whose minute spans midnight UTC: JFK's 2 shards throttled in the
    # old day's bucket, then its 2 shards in the new day's (THROTTLED_KEYS mode)
    hot = FakeHotKeys(
        [
            HotKey(f"DEPARTURES#JFK#{day}#{shard}", 0.0, 80)
            for day in ("2013-01-01", "2013-01-02")
            for shard in (0, 1)
        ]
    )
    service = FakeService(shards={"DEPARTURES#JFK": 2})
    # When the alarm arrives
    scaler.handler(_gsi1_alarm(), context, service=service, hot_keys=hot)
    # Then N carries one bucket at 2 shards x 1,000 WCU/s (+ 160 / 8 / 60 turned away):
    # ceil(2000.3 / 800) = 3, not the 5 that summing both buckets' 4 shards would ask
    assert service.grow_calls == [("DEPARTURES#JFK", 3)]


# --- growth -----------------------------------------------------------------------------------
@pytest.mark.parametrize("sample", ["cloudwatch_alarm_lambda_action", "cloudwatch_alarm_sns"])
def test_alarm_grows_the_hot_key_to_the_planned_count(sample: str, context: LambdaContext) -> None:
    # Given JFK on 2 shards, both throttled (~2,003 WCU/s wanted), and EWR cool on 1
    service = FakeService(shards={"DEPARTURES#JFK": 2})
    hot = _jfk_hot()
    # When the alarm arrives
    summary = scaler.handler(load_event(sample), context, service=service, hot_keys=hot)
    # Then the source was asked about the alarm's table and window
    assert hot.calls == [("dynashard-data", None, ALARM_TIME - timedelta(seconds=60), ALARM_TIME)]
    # and JFK grows to ceil(2000.5 / (1000 x 0.8)) = 3 (2 shards at the limit, and 200
    # throttled requests / 8 attempts turned away for 1,850 x 60 units consumed), EWR
    # is left alone
    assert service.grow_calls == [("DEPARTURES#JFK", 3)]
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
    service = FakeService()
    hot = FakeHotKeys([HotKey("HOT#0", 50.0, 60)])
    # When the alarm arrives
    scaler.handler(
        load_event("cloudwatch_alarm_lambda_action"), context, service=service, hot_keys=hot
    )
    # Then the count is planned from 50.1 units/s against 25 per shard
    assert service.grow_calls == [("HOT", 3)]


def test_growth_plans_from_the_offered_load_with_the_writers_retry_budget(
    monkeypatch: pytest.MonkeyPatch, context: LambdaContext
) -> None:
    # Given writers with 4 attempts, and one shard offered 4 x its 50 WCU/s for the
    # alarm's minute: 150 writes/s turned away, each throttled 4 times
    monkeypatch.setenv("DYNASHARD_PARTITION_WCU", "50")
    monkeypatch.setenv("DYNASHARD_WRITE_MAX_ATTEMPTS", "4")
    service = FakeService()
    hot = FakeHotKeys([HotKey("HOT#0", 50.0, 150 * 60 * 4)])
    # When the alarm arrives
    summary = scaler.handler(
        load_event("cloudwatch_alarm_lambda_action"), context, service=service, hot_keys=hot
    )
    # Then the key grows in one step to what 200 units/s need at 40 per shard: 5
    assert service.grow_calls == [("HOT", 5)]
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
    service = FakeService()
    hot = FakeHotKeys([HotKey("HOT#0", 50.0, 60), HotKey("COUNTER#C#0", 50.0, 600)])
    offered = FakeOfferedLoad({"HOT": 12_000.0, "COLD": 60.0})
    # When the alarm arrives
    summary = scaler.handler(
        load_event("cloudwatch_alarm_lambda_action"),
        context,
        service=service,
        hot_keys=hot,
        offered_load=offered,
    )
    # Then the rule was asked about the alarm's window, HOT grows in one step to
    # ceil(200 / 25) = 8 on the offered basis, the counter (not in the writers' report)
    # on the estimate, and COLD (offered, but not hot) is left alone
    assert offered.calls == [(ALARM_TIME - timedelta(seconds=60), ALARM_TIME)]
    grown = {g["key"]: (g["current"], g["basis"]) for g in summary["grown"]}
    assert grown["HOT"] == (8, "offered")
    assert grown["COUNTER#C"][1] == "estimated"
    assert "COLD" not in grown


def test_read_alarms_never_ask_for_the_offered_write_load(context: LambdaContext) -> None:
    event = load_event("cloudwatch_alarm_lambda_action")
    metric = event["alarmData"]["configuration"]["metrics"][0]["metricStat"]["metric"]
    metric["name"] = "ReadKeyRangeThroughputThrottleEvents"
    offered = FakeOfferedLoad({"DEPARTURES#JFK": 1e9})
    service = FakeService(shards={"DEPARTURES#JFK": 2})
    scaler.handler(event, context, service=service, hot_keys=_jfk_hot(), offered_load=offered)
    assert offered.calls == []


def test_the_default_offered_load_source_is_the_stacks_rule(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert scaler.get_offered_load_source() is None
    scaler.get_settings.cache_clear()
    scaler.get_offered_load_source.cache_clear()
    monkeypatch.setenv("DYNASHARD_WRITE_LOAD_RULE", "stack-offered-write-units")
    source = scaler.get_offered_load_source()
    assert isinstance(source, scaler.InsightRuleOfferedLoad)
    assert source.rule_name == "stack-offered-write-units"


def test_index_alarm_grows_the_logical_key_behind_the_gsi1_keys(context: LambdaContext) -> None:
    # Given a GSI1 key-range alarm and the index's hot keys
    hot = FakeHotKeys([HotKey("DEPARTURES#JFK#2013-01-01#0", 0.0, 48_000)])
    service = FakeService()
    # When the alarm arrives
    scaler.handler(_gsi1_alarm(), context, service=service, hot_keys=hot)
    # Then the index was asked, and the logical key (not "{logical}#{bucket}") grows
    # (one GSI1 key at its limit plus 48,000 / 60 s / 8 attempts = 1,100 units/s)
    assert hot.calls[0][1] == "GSI1"
    assert service.grow_calls == [("DEPARTURES#JFK", 2)]


def test_growth_metrics_keep_the_key_out_of_the_dimensions(
    context: LambdaContext, capsys: pytest.CaptureFixture[str]
) -> None:
    service = FakeService(shards={"DEPARTURES#JFK": 2})
    scaler.handler(
        load_event("cloudwatch_alarm_lambda_action"), context, service=service, hot_keys=_jfk_hot()
    )
    blobs = [json.loads(x) for x in capsys.readouterr().out.splitlines() if '"_aws"' in x]
    shard_count = [b for b in blobs if "ShardCount" in b]
    assert len(shard_count) == 1
    assert shard_count[0]["key"] == "DEPARTURES#JFK"
    assert shard_count[0]["ShardCount"] in (3, 3.0, [3.0])
    dims = shard_count[0]["_aws"]["CloudWatchMetrics"][0]["Dimensions"]
    assert all("key" not in d for d in dims)
    assert any(b.get("ShardsGrown") in (1, 1.0, [1.0]) for b in blobs)


def test_ok_state_is_ignored(context: LambdaContext) -> None:
    event = load_event("cloudwatch_alarm_lambda_action")
    event["alarmData"]["state"]["value"] = "OK"
    service, hot = FakeService(), _jfk_hot()
    summary = scaler.handler(event, context, service=service, hot_keys=hot)
    assert summary["state"] == "OK"
    assert summary["grown"] == [] and "ignored" in summary
    assert hot.calls == [] and service.grow_calls == []


def test_ok_state_in_sns_is_ignored(context: LambdaContext) -> None:
    event = load_event("cloudwatch_alarm_sns")
    message = _sns_message(event)
    message["NewStateValue"] = "OK"
    service, hot = FakeService(), _jfk_hot()
    summary = scaler.handler(
        _with_sns_message(event, message), context, service=service, hot_keys=hot
    )
    assert summary["state"] == "OK"
    assert hot.calls == [] and service.grow_calls == []


def test_non_key_range_throttling_does_not_grow(context: LambdaContext) -> None:
    # Given an alarm on provisioned-throughput throttling (a table limit, not a hot key)
    event = load_event("cloudwatch_alarm_lambda_action")
    metric = event["alarmData"]["configuration"]["metrics"][0]["metricStat"]["metric"]
    metric["name"] = "WriteProvisionedThroughputThrottleEvents"
    service, hot = FakeService(), _jfk_hot()
    # When it arrives
    summary = scaler.handler(event, context, service=service, hot_keys=hot)
    # Then nothing is grown: more shards do not relieve a table limit
    assert "not key-range" in summary["ignored"]
    assert hot.calls == [] and service.grow_calls == []


def test_read_key_range_alarm_plans_against_the_read_limit(context: LambdaContext) -> None:
    event = load_event("cloudwatch_alarm_lambda_action")
    metric = event["alarmData"]["configuration"]["metrics"][0]["metricStat"]["metric"]
    metric["name"] = "ReadKeyRangeThroughputThrottleEvents"
    service = FakeService()
    # 2,500 RCU/s is over 3,000 x 0.8 = 2,400 RCU/s per shard: 2 shards (the WCU limit would say 4)
    scaler.handler(
        event, context, service=service, hot_keys=FakeHotKeys([HotKey("R#0", 2500.0, 0)])
    )
    assert service.grow_calls == [("R", 2)]


def test_cooldown_is_a_skip_not_an_error(context: LambdaContext) -> None:
    service = FakeService(
        shards={"DEPARTURES#JFK": 2},
        grow_raises={"DEPARTURES#JFK": CooldownActiveError("DEPARTURES#JFK", 42.0)},
    )
    summary = scaler.handler(
        load_event("cloudwatch_alarm_lambda_action"), context, service=service, hot_keys=_jfk_hot()
    )
    assert summary["grown"] == []
    jfk = next(s for s in summary["skipped"] if s["key"] == "DEPARTURES#JFK")
    assert "cooldown" in jfk["reason"]


def test_failure_on_one_key_still_grows_the_others_then_raises(context: LambdaContext) -> None:
    # Given two hot keys, the first of which cannot be grown
    hot = FakeHotKeys([HotKey("A#0", 0.0, 6000), HotKey("B#0", 0.0, 60)])
    service = FakeService(grow_raises={"A": MetadataError()})
    # When the alarm arrives
    with pytest.raises(DynashardError, match="growing 1 key"):
        scaler.handler(load_event("cloudwatch_alarm_sns"), context, service=service, hot_keys=hot)
    # Then B was still grown before the invocation failed (so it is retried)
    assert ("B", 2) in service.grow_calls
    assert service.shards["B"] == 2


def test_unmapped_keys_are_reported_as_skipped(context: LambdaContext) -> None:
    hot = FakeHotKeys([HotKey("DEPARTURES#JFK#2024-02-17", 0.0, 10)])
    service = FakeService()
    summary = scaler.handler(
        load_event("cloudwatch_alarm_sns"), context, service=service, hot_keys=hot
    )
    assert summary["skipped"] == [
        {"key": "DEPARTURES#JFK#2024-02-17", "reason": "not a partition key dynashard writes"}
    ]
    assert service.grow_calls == []


# --- Contributor Insights source (botocore Stubber: moto does not implement it) -----------------
PKT = "DynamoDBContributorInsights-PKT-dynashard-data-1708160000000"
PKC = "DynamoDBContributorInsights-PKC-dynashard-data-1708160000000"


def _report(contributors: list[tuple[str, float]]) -> dict[str, Any]:
    return {
        "KeyLabels": ["PK"],
        "AggregationStatistic": "Sum",
        "AggregateValue": sum(v for _, v in contributors),
        "ApproximateUniqueCount": len(contributors),
        "Contributors": [
            {"Keys": [k], "ApproximateAggregateValue": v, "Datapoints": []} for k, v in contributors
        ],
    }


def _clients() -> tuple[Any, Any]:
    return (
        boto3.client("cloudwatch", region_name="us-east-1"),
        boto3.client("dynamodb", region_name="us-east-1"),
    )


def test_contributor_insights_source_reads_both_reports() -> None:
    # Given a table in ACCESSED_AND_THROTTLED_KEYS mode (PKC and PKT rules)
    cloudwatch, dynamodb = _clients()
    start, end = ALARM_TIME - timedelta(seconds=120), ALARM_TIME
    with Stubber(dynamodb) as ddb_stub, Stubber(cloudwatch) as cw_stub:
        ddb_stub.add_response(
            "describe_contributor_insights",
            {
                "TableName": "dynashard-data",
                "ContributorInsightsRuleList": [PKC, PKT],
                "ContributorInsightsStatus": "ENABLED",
            },
            {"TableName": "dynashard-data"},
        )
        common = {
            "StartTime": start,
            "EndTime": end,
            "Period": 120,
            "MaxContributorCount": 25,
            "OrderBy": "Sum",
        }
        cw_stub.add_response(
            "get_insight_rule_report",
            _report([("DEPARTURES#JFK#0", 700.0), ("DEPARTURES#JFK#1", 300.0)]),
            {"RuleName": PKT, **common},
        )
        cw_stub.add_response(
            "get_insight_rule_report",
            _report([("DEPARTURES#JFK#0", 120_000.0), ("DEPARTURES#EWR#0", 2_400.0)]),
            {"RuleName": PKC, **common},
        )
        source = ContributorInsightsHotKeySource(client=cloudwatch, dynamodb_client=dynamodb)
        # When asked for the window
        hot = source.hot_keys("dynashard-data", None, start, end)
        # Then throttles and consumption (per second of the window) come back, hottest first
        cw_stub.assert_no_pending_responses()
    assert hot == [
        HotKey("DEPARTURES#JFK#0", 1000.0, 700),
        HotKey("DEPARTURES#JFK#1", 0.0, 300),
        HotKey("DEPARTURES#EWR#0", 20.0, 0),
    ]


def test_throttled_keys_mode_has_no_consumption_and_asks_the_index() -> None:
    cloudwatch, dynamodb = _clients()
    pkt_gsi = "DynamoDBContributorInsights-PKT-dynashard-data/index/GSI1-1708160000000"
    with Stubber(dynamodb) as ddb_stub, Stubber(cloudwatch) as cw_stub:
        ddb_stub.add_response(
            "describe_contributor_insights",
            {"ContributorInsightsRuleList": [pkt_gsi], "ContributorInsightsStatus": "ENABLED"},
            {"TableName": "dynashard-data", "IndexName": "GSI1"},
        )
        cw_stub.add_response("get_insight_rule_report", _report([("K#2024-02-17", 30.0)]))
        source = ContributorInsightsHotKeySource(cloudwatch, dynamodb)
        hot = source.hot_keys(
            "dynashard-data", "GSI1", ALARM_TIME - timedelta(seconds=60), ALARM_TIME
        )
    assert hot == [HotKey("K#2024-02-17", 0.0, 30)]


def test_disabled_contributor_insights_yields_no_keys_and_no_report_calls() -> None:
    cloudwatch, dynamodb = _clients()
    with Stubber(dynamodb) as ddb_stub, Stubber(cloudwatch):
        ddb_stub.add_response(
            "describe_contributor_insights",
            {"TableName": "dynashard-data", "ContributorInsightsStatus": "DISABLED"},
        )
        source = ContributorInsightsHotKeySource(cloudwatch, dynamodb)
        assert source.hot_keys("dynashard-data", None, ALARM_TIME, ALARM_TIME) == []


# --- the sweep: alarms that stay in ALARM ------------------------------------------------------
SWEEP_TIME = datetime(2024, 2, 17, 11, 54, tzinfo=UTC)


class FakeAlarmStates:
    """An AlarmStateSource that reports fixed alarms in ALARM and records its calls."""

    def __init__(self, alarms: list[scaler.Alarm]) -> None:
        self.alarms = alarms
        self.calls: list[tuple[list[str], datetime]] = []

    def alarms_in_alarm(self, names: Sequence[str], now: datetime) -> list[scaler.Alarm]:
        self.calls.append((list(names), now))
        return [a for a in self.alarms if a.name in names]


def _still_in_alarm(name: str = "dynashard-dev-TableWriteKeyRange") -> scaler.Alarm:
    return scaler.Alarm(
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
    service, hot = FakeService(shards={"DEPARTURES#JFK": 2}), _jfk_hot()
    # When the schedule invokes the scaler
    result = scaler.handler(
        load_event("eventbridge_scheduled_sweep"),
        context,
        service=service,
        hot_keys=hot,
        alarm_states=states,
    )
    # Then CloudWatch was asked about both alarms, as of the schedule's time
    assert states.calls == [
        (["dynashard-dev-TableWriteKeyRange", "dynashard-dev-Gsi1WriteKeyRange"], SWEEP_TIME)
    ]
    # and the alarm in ALARM was handled as if it had fired: its last minute, JFK grown
    assert hot.calls == [("dynashard-data", None, SWEEP_TIME - timedelta(seconds=60), SWEEP_TIME)]
    assert service.grow_calls == [("DEPARTURES#JFK", 3)]
    assert result["sweep"] == SWEEP_TIME.isoformat()
    assert [a["alarm"] for a in result["alarms"]] == ["dynashard-dev-TableWriteKeyRange"]


def test_a_sweep_without_alarms_in_alarm_does_nothing(
    monkeypatch: pytest.MonkeyPatch, context: LambdaContext
) -> None:
    # Given the scaler's alarm, asked about by the sweep but not in ALARM
    monkeypatch.setenv("DYNASHARD_SCALER_ALARM_NAMES", "dynashard-dev-TableWriteKeyRange")
    states, service, hot = FakeAlarmStates([]), FakeService(), _jfk_hot()
    result = scaler.handler(
        load_event("eventbridge_scheduled_sweep"),
        context,
        service=service,
        hot_keys=hot,
        alarm_states=states,
    )
    # Then CloudWatch was asked, and nothing else happened
    assert states.calls == [(["dynashard-dev-TableWriteKeyRange"], SWEEP_TIME)]
    assert result["alarms"] == [] and hot.calls == [] and service.grow_calls == []


def test_cloudwatch_alarm_states_reads_describe_alarms() -> None:
    # Given DescribeAlarms answering with one metric alarm in ALARM (documented shape)
    cloudwatch, _ = _clients()
    names = ["dynashard-dev-TableWriteKeyRange", "dynashard-dev-Gsi1WriteKeyRange"]
    with Stubber(cloudwatch) as stub:
        stub.add_response(
            "describe_alarms",
            {
                "MetricAlarms": [
                    {
                        "AlarmName": "dynashard-dev-Gsi1WriteKeyRange",
                        "StateValue": "ALARM",
                        "MetricName": "WriteKeyRangeThroughputThrottleEvents",
                        "Namespace": "AWS/DynamoDB",
                        "Dimensions": [
                            {"Name": "TableName", "Value": "dynashard-data"},
                            {"Name": "GlobalSecondaryIndexName", "Value": "GSI1"},
                        ],
                        "Period": 60,
                        "EvaluationPeriods": 2,
                    }
                ]
            },
            {"AlarmNames": names, "StateValue": "ALARM", "AlarmTypes": ["MetricAlarm"]},
        )
        # When the port is asked which are in ALARM
        found = scaler.CloudWatchAlarmStates(cloudwatch).alarms_in_alarm(names, SWEEP_TIME)
        stub.assert_no_pending_responses()
    # Then the alarm comes back with its metric, dimensions and window
    assert found == [
        scaler.Alarm(
            name="dynashard-dev-Gsi1WriteKeyRange",
            state="ALARM",
            timestamp=SWEEP_TIME,
            window_s=120,
            metric_names=("WriteKeyRangeThroughputThrottleEvents",),
            table_name="dynashard-data",
            index_name="GSI1",
        )
    ]


def test_cloudwatch_alarm_states_asks_at_most_100_names_a_call() -> None:
    cloudwatch, _ = _clients()
    names = [f"alarm-{i}" for i in range(150)]
    with Stubber(cloudwatch) as stub:
        for chunk in (names[:100], names[100:]):
            stub.add_response(
                "describe_alarms",
                {"MetricAlarms": []},
                {"AlarmNames": chunk, "StateValue": "ALARM", "AlarmTypes": ["MetricAlarm"]},
            )
        assert scaler.CloudWatchAlarmStates(cloudwatch).alarms_in_alarm(names, SWEEP_TIME) == []
        stub.assert_no_pending_responses()


def test_the_insight_rule_adapter_sums_each_keys_offered_units() -> None:
    from functions.scaler.offered_load import InsightRuleOfferedLoad

    client = boto3.client("cloudwatch", region_name="us-east-1")
    start = ALARM_TIME - timedelta(seconds=90)
    with Stubber(client) as stub:
        stub.add_response(
            "get_insight_rule_report",
            {
                "Contributors": [
                    {
                        "Keys": ["DEPARTURES#JFK"],
                        "ApproximateAggregateValue": 12_000.0,
                        "Datapoints": [],
                    },
                    {
                        "Keys": ["DEPARTURES#EWR"],
                        "ApproximateAggregateValue": 60.0,
                        "Datapoints": [],
                    },
                ]
            },
            {
                "RuleName": "stack-offered-write-units",
                "StartTime": start,
                "EndTime": ALARM_TIME,
                "Period": 120,
                "MaxContributorCount": 100,
                "OrderBy": "Sum",
            },
        )
        source = InsightRuleOfferedLoad("stack-offered-write-units", client=client)
        offered = source.offered_wcu(start, ALARM_TIME)
    assert offered == {"DEPARTURES#JFK": 12_000.0, "DEPARTURES#EWR": 60.0}
