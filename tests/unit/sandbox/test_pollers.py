"""The pollers' and the chaos run's pure parts: partial responses, records, poison, exit."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from sandbox.local_aws.aws_events import sqs_message_record
from sandbox.local_aws.pollers import (
    InvalidPartialResponseError,
    SqsPoller,
    kinesis_on_failure_record,
    partial_failures,
    wait_settled,
)
from sandbox.scenarios.chaos import cli as chaos_cli
from sandbox.scenarios.chaos.ledger import Ledger, tracked
from sandbox.scenarios.chaos.poison import make_poison, refusal_reason


@pytest.mark.parametrize("response", [None, {}, {"batchItemFailures": []}, {"other": 1}])
def test_an_empty_answer_is_a_whole_success(response: Any) -> None:
    assert partial_failures(response, ["a", "b"]) == []


def test_failures_come_back_in_batch_order() -> None:
    response = {"batchItemFailures": [{"itemIdentifier": "c"}, {"itemIdentifier": "a"}]}
    assert partial_failures(response, ["a", "b", "c"]) == ["a", "c"]


@pytest.mark.parametrize(
    "entry",
    [{"itemIdentifier": ""}, {"itemIdentifier": None}, {"itemId": "a"}, {"itemIdentifier": "z"}],
)
def test_a_malformed_or_unknown_identifier_fails_the_whole_batch(entry: dict[str, Any]) -> None:
    with pytest.raises(InvalidPartialResponseError):
        partial_failures({"batchItemFailures": [entry]}, ["a", "b"])


def test_a_received_message_becomes_lambdas_record() -> None:
    message = {
        "MessageId": "m1",
        "ReceiptHandle": "rh",
        "Body": '{"k": 1}',
        "MD5OfBody": "md5",
        "Attributes": {"ApproximateReceiveCount": "3", "MessageGroupId": "g"},
        "MessageAttributes": {"a": {"StringValue": "v", "DataType": "String"}},
    }
    record = sqs_message_record(message, "arn:aws:sqs:eu-west-1:123456789012:q.fifo")
    assert record["messageId"] == "m1" and record["receiptHandle"] == "rh"
    assert record["attributes"]["ApproximateReceiveCount"] == "3"
    assert record["attributes"]["MessageGroupId"] == "g"
    assert record["messageAttributes"]["a"]["stringValue"] == "v"
    assert record["eventSource"] == "aws:sqs" and record["awsRegion"] == "eu-west-1"


def test_on_failure_record_names_the_batch_not_its_data() -> None:
    at = datetime(2026, 1, 1, tzinfo=UTC)
    batch = [
        {"SequenceNumber": "7", "ApproximateArrivalTimestamp": at, "Data": b"payload-one"},
        {"SequenceNumber": "9", "ApproximateArrivalTimestamp": at, "Data": b"payload-two"},
    ]
    record = kinesis_on_failure_record(
        batch,
        shard_id="shardId-000000000001",
        stream_arn="arn:aws:kinesis:us-east-1:123456789012:stream/s",
        function_name="f",
        invocations=4,
        function_error="Unhandled",
    )
    info = record["KinesisBatchInfo"]
    assert (info["startSequenceNumber"], info["endSequenceNumber"], info["batchSize"]) == (
        "7",
        "9",
        2,
    )
    assert record["requestContext"]["condition"] == "RetryAttemptsExhausted"
    assert record["requestContext"]["approximateInvokeCount"] == 4
    assert record["responseContext"]["functionError"] == "Unhandled"
    assert "payload" not in json.dumps(record)


@pytest.mark.parametrize("n", range(4))
def test_every_kind_of_poison_is_refused_with_a_reason(n: int) -> None:
    poison = make_poison(n, "DEPARTURES#EWR")
    assert poison.tag in poison.payload
    assert refusal_reason(poison.payload)


def test_a_good_event_has_no_refusal_reason() -> None:
    event = {"key": "K", "id": "e1", "ts": "2013-01-01T00:00:00Z", "data": {}}
    assert refusal_reason(json.dumps(event)) is None


def test_tracked_acknowledges_only_what_the_handler_did_not_report() -> None:
    ledger = Ledger()
    records = [
        {"messageId": "m1", "body": json.dumps({"id": "e1"})},
        {"messageId": "m2", "body": json.dumps({"id": "e2"})},
        {"messageId": "m3", "body": "not json"},
        {
            "kinesis": {
                "sequenceNumber": "5",
                "data": base64.b64encode(json.dumps({"id": "e3"}).encode()).decode(),
            }
        },
    ]
    call = tracked(lambda event: {"batchItemFailures": [{"itemIdentifier": "m2"}]}, ledger)
    call({"Records": records})
    assert sorted(ledger.snapshot()) == ["e1", "e3"]


def test_tracked_acknowledges_nothing_when_the_handler_raises() -> None:
    ledger = Ledger()

    def boom(event: dict[str, Any]) -> Any:
        raise RuntimeError("down")

    with pytest.raises(RuntimeError):
        tracked(boom, ledger)({"Records": [{"messageId": "m", "body": '{"id": "e"}'}]})
    assert ledger.count() == 0


def test_main_exits_1_and_writes_the_report_when_a_check_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    failing = {"ok": False, "checks": {"no_event_lost": False}, "events_lost": 1}
    monkeypatch.setattr(chaos_cli, "run", lambda events, seed: failing)
    path = tmp_path / "r.json"
    assert chaos_cli.main(["--events", "10", "--report", str(path)]) == 1
    assert json.loads(path.read_text())["events_lost"] == 1
    monkeypatch.setattr(chaos_cli, "run", lambda events, seed: {"ok": True, "checks": {"a": True}})
    assert chaos_cli.main(["--report", str(path)]) == 0


class DeleteAnswers:
    """An SQS client whose DeleteMessageBatch refuses the entries it is told to."""

    def __init__(self, refused: dict[str, str]) -> None:
        self.refused = refused

    def delete_message_batch(self, QueueUrl: str, Entries: list[dict[str, str]]) -> Any:
        return {
            "Successful": [{"Id": e["Id"]} for e in Entries if e["Id"] not in self.refused],
            "Failed": [
                {"Id": e["Id"], "SenderFault": True, "Code": self.refused[e["Id"]]}
                for e in Entries
                if e["Id"] in self.refused
            ],
        }


def test_a_stale_receipt_handle_is_a_redelivery_and_other_refusals_are_errors() -> None:
    # Given three processed messages; SQS refuses the first's delete because its
    # visibility timeout ran out and it was handed out again, and the third's for
    # another reason
    client = DeleteAnswers({"0": "ReceiptHandleIsInvalid", "2": "InternalError"})
    poller = SqsPoller(client, "url", lambda event: None)
    messages = [{"MessageId": f"m{i}", "ReceiptHandle": f"rh{i}"} for i in range(3)]
    # When the poller deletes them
    poller._delete(messages)
    # Then only the second is acknowledged; the stale handle is counted (its later
    # delivery deletes the message), the other refusal is an error
    assert poller.stats.records_acknowledged == 1
    assert poller.stats.stale_receipt_handles == 1
    assert len(poller.stats.errors) == 1
    assert "InternalError" in poller.stats.errors[0]


def test_wait_settled_needs_the_condition_to_hold_for_the_settle_time() -> None:
    # Given a condition that holds, breaks once, then holds for good
    answers = iter([True, False] + [True] * 1000)
    asked: list[bool] = []

    def condition() -> bool:
        asked.append(next(answers))
        return asked[-1]

    # When waited on with a settle time of 3 polls, it settles only after the break
    assert wait_settled(condition, timeout_s=5, settle_s=0.03, poll_s=0.01)
    assert asked[:2] == [True, False] and len(asked) >= 5
    # And a condition that never holds times out
    assert not wait_settled(lambda: False, timeout_s=0.05, settle_s=0, poll_s=0.01)


class QueueCounts:
    """An SQS client whose ``GetQueueAttributes`` counts follow a script, then stay 0."""

    def __init__(self, backlogs: list[int]) -> None:
        self.backlogs = iter(backlogs)
        self.asked = 0

    def get_queue_attributes(self, **_: Any) -> dict[str, Any]:
        self.asked += 1
        n = next(self.backlogs, 0)
        return {
            "Attributes": {
                "ApproximateNumberOfMessages": str(n),
                "ApproximateNumberOfMessagesNotVisible": "0",
                "ApproximateNumberOfMessagesDelayed": "0",
            }
        }


def test_one_empty_reading_of_a_redelivered_message_is_not_a_drained_queue() -> None:
    # Given a queue whose only message reads as absent once (its visibility timeout
    # ended between the two counts), then is counted again until it moves to its DLQ
    client = QueueCounts([1, 0, 1, 1])
    poller = SqsPoller(client, "url", lambda event: None)
    # When waited on with the default settle time
    assert poller.wait_drained(timeout_s=10)
    # Then the false empty reading did not end the wait: it read past the recount
    # and the empty readings after it
    assert client.asked > 4
