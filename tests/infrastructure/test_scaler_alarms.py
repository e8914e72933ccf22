"""Scaler alarms: same definition as the sandbox evaluator, Lambda action to the scaler."""

from __future__ import annotations

import pytest

from infra.alarm_specs import SCALER_ALARMS, AlarmSpec, Comparison, MissingData
from tests.infrastructure.conftest import Synth

pytestmark = pytest.mark.infra


def _alarm(s: Synth, index: int) -> dict:
    return s.resources[s.logical_id(s.stack.scaler.alarms[index])]["Properties"]


@pytest.mark.parametrize("index", range(len(SCALER_ALARMS)))
def test_alarm_matches_the_shared_spec(dev: Synth, index: int) -> None:
    spec = SCALER_ALARMS[index]
    props = _alarm(dev, index)
    table_ref = {"Ref": dev.logical_id(dev.stack.tables.data_table)}
    assert props["MetricName"] == spec.metric_name
    assert props["Namespace"] == "AWS/DynamoDB"
    assert props["Statistic"] == spec.statistic == "Sum"
    assert props["Period"] == spec.period_s == 60
    assert props["Threshold"] == spec.threshold
    assert props["EvaluationPeriods"] == spec.evaluation_periods
    assert props["DatapointsToAlarm"] == spec.datapoints_to_alarm
    assert props["ComparisonOperator"] == spec.comparison.value
    assert props["TreatMissingData"] == spec.treat_missing_data.value
    expected_dims = {"TableName": table_ref}
    if spec.index_name:
        expected_dims["GlobalSecondaryIndexName"] = spec.index_name
    assert {d["Name"]: d["Value"] for d in props["Dimensions"]} == expected_dims


def test_alarms_cover_write_and_read_key_range_on_table_and_gsi1() -> None:
    pairs = {(s.metric_name, s.index_name) for s in SCALER_ALARMS}
    assert pairs == {
        ("WriteKeyRangeThroughputThrottleEvents", None),
        ("WriteKeyRangeThroughputThrottleEvents", "GSI1"),
        ("ReadKeyRangeThroughputThrottleEvents", None),
        ("ReadKeyRangeThroughputThrottleEvents", "GSI1"),
    }


def test_every_alarm_action_invokes_the_scaler_directly(dev: Synth) -> None:
    scaler_id = dev.logical_id(dev.stack.scaler.function.function)
    alarm_ids = {dev.logical_id(a) for a in dev.stack.scaler.alarms}
    for index in range(len(SCALER_ALARMS)):
        assert _alarm(dev, index)["AlarmActions"] == [{"Fn::GetAtt": [scaler_id, "Arn"]}]
    permissions = [
        p["Properties"]
        for p in dev.of_type("AWS::Lambda::Permission").values()
        if p["Properties"]["Principal"] == "lambda.alarms.cloudwatch.amazonaws.com"
    ]
    assert {p["SourceArn"]["Fn::GetAtt"][0] for p in permissions} == alarm_ids
    assert all(p["FunctionName"] == {"Fn::GetAtt": [scaler_id, "Arn"]} for p in permissions)
    assert all(p["Action"] == "lambda:InvokeFunction" for p in permissions)


def test_spec_evaluates_m_out_of_n_like_cloudwatch() -> None:
    spec = AlarmSpec(
        id="t", metric_name="m", threshold=5, evaluation_periods=3, datapoints_to_alarm=2
    )
    assert spec.is_breaching([0, 5, 6])
    assert not spec.is_breaching([9, 9, 0, 4, 5])  # only the last 3 count
    assert not spec.is_breaching([None, None, 7])  # missing = not breaching
    strict = AlarmSpec(id="t", metric_name="m", comparison=Comparison.GREATER_THAN_THRESHOLD)
    assert not strict.is_breaching([1.0])
    assert strict.is_breaching([1.5])
    missing = AlarmSpec(id="t", metric_name="m", treat_missing_data=MissingData.BREACHING)
    assert missing.is_breaching([None])


def test_spec_dimensions() -> None:
    assert SCALER_ALARMS[0].dimensions("t") == {"TableName": "t"}
    gsi = next(s for s in SCALER_ALARMS if s.index_name)
    assert gsi.dimensions("t") == {"TableName": "t", "GlobalSecondaryIndexName": "GSI1"}


def test_alarms_are_named_after_the_stack_and_their_spec(dev: Synth) -> None:
    for index, spec in enumerate(SCALER_ALARMS):
        assert _alarm(dev, index)["AlarmName"] == f"{dev.stack.stack_name}-{spec.id}"


def test_a_rule_sweeps_the_alarms_every_minute(dev: Synth) -> None:
    # An alarm action runs on state changes only; the sweep catches an alarm left in ALARM
    scaler_id = dev.logical_id(dev.stack.scaler.function.function)
    (rule,) = [r["Properties"] for r in dev.of_type("AWS::Events::Rule").values()]
    assert rule["ScheduleExpression"] == "rate(1 minute)"
    assert rule["State"] == "ENABLED"
    (target,) = rule["Targets"]
    assert target["Arn"] == {"Fn::GetAtt": [scaler_id, "Arn"]}
    assert target["RetryPolicy"]["MaximumRetryAttempts"] == 0
    permissions = [
        p["Properties"]
        for p in dev.of_type("AWS::Lambda::Permission").values()
        if p["Properties"]["Principal"] == "events.amazonaws.com"
    ]
    assert [p["FunctionName"] for p in permissions] == [{"Fn::GetAtt": [scaler_id, "Arn"]}]
