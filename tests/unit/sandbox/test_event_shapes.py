"""Every event the sandbox builds validates against Powertools' parser models.

The sandbox drives the real handlers with events it builds itself
(:mod:`sandbox.local_aws.aws_events`, the alarm evaluator of
:mod:`sandbox.local_aws.alarms`). Powertools' parser models are AWS's shapes as the
Powertools maintainers keep them, field by field, so an event that validates has every
field a handler on AWS can rely on, with the type AWS sends:

- API Gateway: the stack's API is a REST API (``aws_apigateway.RestApi``, payload
  format 1.0): ``APIGatewayProxyEventModel``;
- SQS: ``SqsModel``; Kinesis Data Streams: ``KinesisDataStreamModel``;
- EventBridge scheduled event: ``EventBridgeModel``;
- CloudWatch alarm action (Lambda's alarm-action event): the pinned Powertools has no
  parser model for it, only the data class ``CloudWatchAlarmEvent``. Every property of
  the data class is read (a missing key raises ``KeyError``), and a strict model below,
  written from the CloudWatch User Guide ("Lambda alarm actions"), checks the types.

The recorded samples in ``events/`` are validated the same way.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import pytest
from aws_lambda_powertools.utilities.data_classes import CloudWatchAlarmEvent
from aws_lambda_powertools.utilities.parser.models import (
    APIGatewayProxyEventModel,
    EventBridgeModel,
    KinesisDataStreamModel,
    SqsModel,
)
from pydantic import BaseModel, ConfigDict

from infra.alarm_specs import SCALER_ALARMS
from sandbox.local_aws.alarms import AlarmState, LocalAlarm
from sandbox.local_aws.aws_events import (
    api_gateway_event,
    kinesis_event,
    kinesis_record,
    scheduled_event,
    sqs_event,
    sqs_message_record,
    sqs_record,
)

EVENTS_DIR = Path(__file__).resolve().parents[3] / "events"
T0 = 1_800_000_000.0


# --- API Gateway (REST API, payload format 1.0) ------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {"method": "GET", "path": "/events", "query": {"key": "DEPARTURES#EWR", "limit": "10"}},
        {"method": "GET", "path": "/events", "query": {"key": ["A", "B"]}},  # repeated
        {
            "method": "GET",
            "path": "/counters/CARRIER#UA",
            "resource": "/counters/{name}",
            "path_parameters": {"name": "CARRIER#UA"},
        },
        {"method": "POST", "path": "/events", "body": {"key": "K", "id": "1", "data": {}}},
        {"method": "POST", "path": "/events", "body": "not json"},
        {"method": "POST", "path": "/events", "body": b"\xff\xfe binary"},
        {"method": "POST", "path": "/events", "headers": {"X-Custom": ["a", "b"]}},
    ],
    ids=["query", "repeated-query", "path-parameter", "json", "text", "binary", "multi-header"],
)
def test_api_gateway_event_is_a_rest_api_proxy_event(kwargs: dict[str, Any]) -> None:
    # Given an API Gateway event built as the local gateway builds it
    event = api_gateway_event(**kwargs)
    # When Powertools' REST API model parses it, Then it validates, with what was given
    parsed = APIGatewayProxyEventModel.model_validate(event)
    assert parsed.httpMethod == kwargs["method"]
    assert parsed.path == kwargs["path"]
    assert parsed.requestContext.stage == "local"
    assert parsed.isBase64Encoded is isinstance(kwargs.get("body"), bytes)


# --- SQS ---------------------------------------------------------------------------------


def test_sqs_event_of_built_records_is_an_sqs_event() -> None:
    event = sqs_event(
        [
            sqs_record({"key": "K", "id": "1"}),
            sqs_record("text", message_id="m-2", receive_count=3, sent_ms=1_700_000_000_000),
        ]
    )
    parsed = SqsModel.model_validate(event)
    assert [r.messageId for r in parsed.Records][1] == "m-2"
    assert parsed.Records[1].attributes.ApproximateReceiveCount == "3"


def _received_message(**extra_attributes: str) -> dict[str, Any]:
    """One ``ReceiveMessage`` entry as boto3 returns it (the poller's input)."""
    return {
        "MessageId": "5fea7756-0ea4-451a-a703-a558b933e274",
        "ReceiptHandle": "AQEBwJnKyrHigUMZj6rYigCgxlaS3SLy0a",
        "MD5OfBody": "e4e68fb7bd0e697a0ae8f1bb342846b3",
        "Body": '{"key": "K", "id": "1"}',
        "Attributes": {
            "SenderId": "AIDAIENQZJOLO23YVJ4VO",
            "ApproximateFirstReceiveTimestamp": "1545082649185",
            "ApproximateReceiveCount": "1",
            "SentTimestamp": "1545082649183",
            **extra_attributes,
        },
        "MessageAttributes": {
            "trace": {"StringValue": "abc", "DataType": "String"},
            "blob": {"BinaryValue": b"\x00\x01", "DataType": "Binary"},
        },
    }


@pytest.mark.parametrize(
    "extra",
    [
        {},
        {
            "SequenceNumber": "18849496460467696128",
            "MessageGroupId": "DEPARTURES#EWR",
            "MessageDeduplicationId": "flight-1",
        },
    ],
    ids=["standard", "fifo"],
)
def test_sqs_record_of_a_received_message_is_an_sqs_record(extra: dict[str, str]) -> None:
    record = sqs_message_record(_received_message(**extra), "arn:aws:sqs:us-east-1:1:q")
    parsed = SqsModel.model_validate(sqs_event([record]))
    (rec,) = parsed.Records
    assert rec.messageAttributes["trace"].stringValue == "abc"
    assert rec.messageAttributes["blob"].binaryValue == "AAE="
    assert rec.attributes.MessageGroupId == extra.get("MessageGroupId")


# --- Kinesis Data Streams ----------------------------------------------------------------


@pytest.mark.parametrize(
    "data", [{"key": "K", "id": "1"}, "text", b"\x00\xff"], ids=["json", "text", "bytes"]
)
def test_kinesis_event_is_a_kinesis_data_stream_event(data: Any) -> None:
    event = kinesis_event(
        [
            kinesis_record(data, partition_key="K"),
            kinesis_record(data, partition_key="K", sequence_number="42", arrival_s=T0),
        ]
    )
    parsed = KinesisDataStreamModel.model_validate(event)
    assert parsed.Records[1].kinesis.sequenceNumber == "42"
    assert parsed.Records[0].eventSource == "aws:kinesis"


# --- EventBridge scheduled event ---------------------------------------------------------


def test_scheduled_event_is_an_eventbridge_event() -> None:
    at = datetime.fromtimestamp(T0, UTC)
    parsed = EventBridgeModel.model_validate(scheduled_event(at))
    assert parsed.detail_type == "Scheduled Event"
    assert parsed.source == "aws.events"
    assert parsed.time == at
    assert parsed.resources[0].endswith(":rule/dynashard-local-ScalerSweep")


# --- CloudWatch alarm action -------------------------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class _Metric(_Strict):
    namespace: str
    name: str
    dimensions: dict[str, str]


class _MetricStat(_Strict):
    metric: _Metric
    period: int
    stat: str
    unit: str | None = None


class _AlarmMetric(_Strict):
    id: str
    metricStat: _MetricStat
    returnData: bool
    label: str | None = None


class _Configuration(_Strict):
    description: str | None = None
    metrics: list[_AlarmMetric]


class _State(_Strict):
    value: Literal["OK", "ALARM", "INSUFFICIENT_DATA"]
    reason: str
    timestamp: str
    reasonData: str | None = None


class _AlarmData(_Strict):
    alarmName: str
    state: _State
    previousState: _State
    configuration: _Configuration


class CloudWatchAlarmActionEvent(_Strict):
    """Lambda's CloudWatch alarm-action event for a single-metric alarm (CloudWatch User
    Guide, "Using Amazon CloudWatch alarms", Lambda alarm actions)."""

    source: Literal["aws.cloudwatch"]
    alarmArn: str
    accountId: str
    time: str
    region: str
    alarmData: _AlarmData


def _read_every_property(event: CloudWatchAlarmEvent) -> None:
    """Read every property of Powertools' data class (a missing key raises KeyError)."""
    assert event.source == "aws.cloudwatch"
    assert event.alarm_arn.startswith("arn:aws:cloudwatch:")
    assert event.region and event.source_account_id and event.timestamp
    data = event.alarm_data
    assert data.alarm_name == event.alarm_arn.rsplit(":", 1)[1]
    for state in (data.state, data.previous_state):
        assert state.value in ("OK", "ALARM", "INSUFFICIENT_DATA")
        assert state.reason and state.timestamp
    assert json.loads(data.state.reason_data)["statistic"]
    (metric,) = data.configuration.metrics
    assert metric.metric_id and metric.return_data is True
    assert metric.metric_stat.period and metric.metric_stat.stat
    assert metric.metric_stat.metric["name"]


def _local_alarm_event(state: AlarmState) -> dict[str, Any]:
    alarm = LocalAlarm(SCALER_ALARMS[0], "dynashard-data", metrics=None, clock=lambda: T0)  # type: ignore[arg-type]
    reason_data = json.dumps(
        {"version": "1.0", "statistic": "Sum", "period": 60, "recentDatapoints": [412.0]}
    )
    return alarm.build_event(state, "Threshold Crossed: test", reason_data, T0 + 61)


@pytest.mark.parametrize("state", [AlarmState.ALARM, AlarmState.OK])
def test_alarm_action_event_is_lambdas_cloudwatch_alarm_event(state: AlarmState) -> None:
    event = _local_alarm_event(state)
    parsed = CloudWatchAlarmActionEvent.model_validate(event)
    assert parsed.alarmData.state.value == state.value
    _read_every_property(CloudWatchAlarmEvent(event))


# --- the recorded samples ----------------------------------------------------------------

SAMPLE_MODELS: dict[str, type[BaseModel]] = {
    "api_get_counter.json": APIGatewayProxyEventModel,
    "api_get_events.json": APIGatewayProxyEventModel,
    "api_get_shards.json": APIGatewayProxyEventModel,
    "api_post_counter.json": APIGatewayProxyEventModel,
    "api_post_events.json": APIGatewayProxyEventModel,
    "api_post_events_batch.json": APIGatewayProxyEventModel,
    "sqs_batch.json": SqsModel,
    "kinesis_batch.json": KinesisDataStreamModel,
    "eventbridge_scheduled_sweep.json": EventBridgeModel,
    "cloudwatch_alarm_lambda_action.json": CloudWatchAlarmActionEvent,
}


def test_every_sample_event_has_a_model() -> None:
    samples = {p.name for p in EVENTS_DIR.glob("*.json")}
    # cloudwatch_alarm_sns.json is an SNS notification of an alarm, not a Lambda event the
    # stack receives (its alarm action invokes the scaler directly).
    assert samples - {"cloudwatch_alarm_sns.json"} == set(SAMPLE_MODELS)


@pytest.mark.parametrize("name", sorted(SAMPLE_MODELS))
def test_sample_event_validates(name: str) -> None:
    event = json.loads((EVENTS_DIR / name).read_text())
    SAMPLE_MODELS[name].model_validate(event)
    if SAMPLE_MODELS[name] is CloudWatchAlarmActionEvent:
        _read_every_property(CloudWatchAlarmEvent(event))
