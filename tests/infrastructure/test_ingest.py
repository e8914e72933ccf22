"""Event source mappings, DLQ wiring and the DLQ alarm."""

from __future__ import annotations

from typing import Any

import pytest

from tests.infrastructure.conftest import Synth

pytestmark = pytest.mark.infra


def _mapping_for(s: Synth, function: object) -> dict[str, Any]:
    fn_id = s.logical_id(function)
    (mapping,) = [
        m["Properties"]
        for m in s.of_type("AWS::Lambda::EventSourceMapping").values()
        if m["Properties"]["FunctionName"] == {"Ref": fn_id}
    ]
    return mapping


def test_sqs_mapping_reports_batch_item_failures(dev: Synth) -> None:
    ingest = dev.stack.ingest
    mapping = _mapping_for(dev, ingest.queue_function.function)
    assert mapping["EventSourceArn"] == {"Fn::GetAtt": [dev.logical_id(ingest.queue), "Arn"]}
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert mapping["BatchSize"] == 10


def test_kinesis_mapping_bisects_retries_bounded_and_has_on_failure(dev: Synth) -> None:
    ingest = dev.stack.ingest
    mapping = _mapping_for(dev, ingest.stream_function.function)
    assert mapping["EventSourceArn"] == {"Fn::GetAtt": [dev.logical_id(ingest.stream), "Arn"]}
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert mapping["BisectBatchOnFunctionError"] is True
    assert mapping["MaximumRetryAttempts"] == 8
    assert 0 < mapping["MaximumRecordAgeInSeconds"] <= 604_800
    assert mapping["StartingPosition"] == "TRIM_HORIZON"
    failure_queue = dev.logical_id(ingest.stream_failure_queue)
    assert mapping["DestinationConfig"] == {
        "OnFailure": {"Destination": {"Fn::GetAtt": [failure_queue, "Arn"]}}
    }


def test_retry_and_receive_counts_follow_context(prod: Synth) -> None:
    ingest = prod.stack.ingest
    assert _mapping_for(prod, ingest.stream_function.function)["MaximumRetryAttempts"] == 4
    queue = prod.resources[prod.logical_id(ingest.queue)]["Properties"]
    assert queue["RedrivePolicy"]["maxReceiveCount"] == 7


def test_api_function_has_no_event_source_mapping(dev: Synth) -> None:
    fn_id = dev.logical_id(dev.stack.ingest.api_function.function)
    assert all(
        m["Properties"]["FunctionName"] != {"Ref": fn_id}
        for m in dev.of_type("AWS::Lambda::EventSourceMapping").values()
    )
    assert len(dev.of_type("AWS::Lambda::EventSourceMapping")) == 2


def test_queue_redrives_to_dlq_and_outlives_retries(dev: Synth) -> None:
    ingest = dev.stack.ingest
    queue = dev.resources[dev.logical_id(ingest.queue)]["Properties"]
    assert queue["RedrivePolicy"] == {
        "deadLetterTargetArn": {"Fn::GetAtt": [dev.logical_id(ingest.dead_letter_queue), "Arn"]},
        "maxReceiveCount": 5,
    }
    # Lambda guidance: visibility timeout >= 6x the function timeout
    assert queue["VisibilityTimeout"] >= 6 * dev.stack.config.function_timeout_s
    for q in (ingest.queue, ingest.dead_letter_queue, ingest.stream_failure_queue):
        assert dev.resources[dev.logical_id(q)]["Properties"]["SqsManagedSseEnabled"] is True


def test_stream_is_on_demand_and_encrypted(dev: Synth) -> None:
    props = dev.resources[dev.logical_id(dev.stack.ingest.stream)]["Properties"]
    assert props["StreamModeDetails"] == {"StreamMode": "ON_DEMAND"}
    assert props["StreamEncryption"]["EncryptionType"] == "KMS"


@pytest.mark.parametrize("queue_attr", ["dead_letter_queue", "stream_failure_queue"])
def test_dead_letter_depth_alarm(dev: Synth, queue_attr: str) -> None:
    queue_id = dev.logical_id(getattr(dev.stack.ingest, queue_attr))
    alarms = [
        a["Properties"]
        for a in dev.of_type("AWS::CloudWatch::Alarm").values()
        if a["Properties"].get("Dimensions")
        == [{"Name": "QueueName", "Value": {"Fn::GetAtt": [queue_id, "QueueName"]}}]
    ]
    assert len(alarms) == 1
    (alarm,) = alarms
    assert alarm["MetricName"] == "ApproximateNumberOfMessagesVisible"
    assert alarm["Namespace"] == "AWS/SQS"
    assert alarm["Threshold"] == 1
    assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
