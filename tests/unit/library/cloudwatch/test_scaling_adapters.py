"""The scaler's boto3 adapters (dynashard.cloudwatch), against botocore's Stubber.

moto implements neither ``GetInsightRuleReport`` nor ``DescribeContributorInsights``
rule lists, so the documented response shapes are stubbed.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from dynashard.cloudwatch.alarms import CloudWatchAlarmStates, alarm_from_description
from dynashard.cloudwatch.insights import (
    ContributorInsightsHotKeySource,
    InsightRuleOfferedLoad,
)
from dynashard.planning.scaling import Alarm, HotKey

ALARM_TIME = datetime(2024, 2, 17, 11, 53, 8, 431000, tzinfo=UTC)
SWEEP_TIME = datetime(2024, 2, 17, 11, 54, tzinfo=UTC)
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


# --- Contributor Insights: hot keys ---------------------------------------------------------
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
            "MaxContributorCount": 100,  # the most a report gives, by default
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


def test_adapters_create_no_client_until_first_use(monkeypatch: Any) -> None:
    # Each client comes from the process's one session (raw_items_session), not boto3's
    # default: a second botocore session loads the data files again at cold start.
    from types import SimpleNamespace

    from dynashard.dynamodb import raw_items

    created: list[str] = []
    session = SimpleNamespace(client=lambda name, **_: created.append(name) or object())
    monkeypatch.setattr(raw_items, "raw_items_session", lambda: session)
    monkeypatch.setattr(boto3, "client", lambda name, **_: pytest.fail(f"default session: {name}"))
    hot_keys = ContributorInsightsHotKeySource(max_contributors=500)
    states, offered = CloudWatchAlarmStates(), InsightRuleOfferedLoad("rule", max_contributors=0)
    assert created == []
    assert (hot_keys.max_contributors, offered.max_contributors) == (100, 1)
    _ = hot_keys.client, hot_keys.dynamodb_client, states.client, offered.client
    assert created == ["cloudwatch", "dynamodb", "cloudwatch", "cloudwatch"]


# --- Contributor Insights: the writers' offered load -----------------------------------------
def test_the_insight_rule_adapter_sums_each_keys_offered_units() -> None:
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


def _totals(*contributors: tuple[str, float]) -> dict[str, Any]:
    return {
        "Contributors": [
            {"Keys": [key], "ApproximateAggregateValue": value, "Datapoints": []}
            for key, value in contributors
        ]
    }


def test_the_adapter_reads_every_part_of_the_write_load_rule() -> None:
    # Given the rule split in two parts of the key space, each with its own report
    client = boto3.client("cloudwatch", region_name="us-east-1")
    start = ALARM_TIME - timedelta(seconds=60)
    with Stubber(client) as stub:
        for rule, report in (
            ("stack-offered-write-units-0-of-2", _totals(("A", 600.0))),
            ("stack-offered-write-units-1-of-2", _totals(("B", 60.0), ("C", 6.0))),
        ):
            request = {
                "RuleName": rule,
                "StartTime": start,
                "EndTime": ALARM_TIME,
                "Period": 60,
                "MaxContributorCount": 100,
                "OrderBy": "Sum",
            }
            stub.add_response("get_insight_rule_report", report, request)
        source = InsightRuleOfferedLoad(
            ["stack-offered-write-units-0-of-2", "stack-offered-write-units-1-of-2"], client
        )
        # When growth asks for the offered load of a window
        offered = source.offered_wcu(start, ALARM_TIME)
        # Then each part was asked once, in part order, and their top keys joined
        stub.assert_no_pending_responses()
    assert offered == {"A": 600.0, "B": 60.0, "C": 6.0}
    assert source.rule_name == "stack-offered-write-units-0-of-2"
    with pytest.raises(ValueError, match="name the write-load rule"):
        InsightRuleOfferedLoad([])


# --- CloudWatch: which alarms are in ALARM (the sweep) ---------------------------------------
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
        found = CloudWatchAlarmStates(cloudwatch).alarms_in_alarm(names, SWEEP_TIME)
        stub.assert_no_pending_responses()
    # Then the alarm comes back with its metric, dimensions and window
    assert found == [
        Alarm(
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
        assert CloudWatchAlarmStates(cloudwatch).alarms_in_alarm(names, SWEEP_TIME) == []
        stub.assert_no_pending_responses()


def test_a_metric_math_description_takes_its_metrics_dimensions_and_longest_period() -> None:
    # Given a metric-math alarm: an expression over one metric with a 120 s period
    description = {
        "AlarmName": "math",
        "StateValue": "ALARM",
        "EvaluationPeriods": 2,
        "Metrics": [
            {"Id": "e1", "Expression": "m1 / 60"},
            {
                "Id": "m1",
                "MetricStat": {
                    "Metric": {
                        "Namespace": "AWS/DynamoDB",
                        "MetricName": "ReadKeyRangeThroughputThrottleEvents",
                        "Dimensions": [{"Name": "TableName", "Value": "t"}],
                    },
                    "Period": 120,
                    "Stat": "Sum",
                },
            },
        ],
    }
    alarm = alarm_from_description(description, SWEEP_TIME)
    assert alarm.metric_names == ("ReadKeyRangeThroughputThrottleEvents",)
    assert (alarm.table_name, alarm.index_name) == ("t", None)
    assert alarm.window_s == 240
