"""Hostile input through the real handlers and a moto-backed Dynashard: 4xx, never 5xx.

Each test pins one defect found by trying the API as a new user would: an input that can
never be stored must be refused with a 4xx that names the field and the DynamoDB limit,
never answered 503 (which a client retries forever) or failed with a 5xx.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from dynashard import Dynashard, DynashardConfig
from functions.ingest import app as ingest
from infra.table_specs import ALL_TABLES, DATA_TABLE, METADATA_TABLE, create_table_request

from .support import LambdaContext, load_event


@pytest.fixture
def facade() -> Iterator[Dynashard]:
    """A real Dynashard over moto tables created from the infra specs."""
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        for spec in ALL_TABLES:
            client.create_table(**create_table_request(spec))
        ds = Dynashard(
            DynashardConfig(
                DATA_TABLE.default_name, METADATA_TABLE.default_name, cooldown_s=0.0, max_workers=2
            ),
            client=client,
        )
        yield ds
        ds.close()


def _post_events(body: Any) -> dict[str, Any]:
    event = load_event("api_post_events")
    event["body"] = body if isinstance(body, str) else json.dumps(body)
    return event


def _event(data: Any, event_id: str = "e1", key: str = "DEPARTURES#JFK") -> dict[str, Any]:
    return {"key": key, "id": event_id, "ts": "2013-01-01T05:40:00Z", "data": data}


def _sqs(*bodies: str) -> dict[str, Any]:
    template = load_event("sqs_batch")["Records"][0]
    records = [dict(template, messageId=f"m{i}", body=body) for i, body in enumerate(bodies)]
    return {"Records": records}


# --- the 400 KB item limit -----------------------------------------------------------------
def test_event_over_400_kb_is_a_400_naming_the_limit_not_a_503(
    facade: Dynashard, context: LambdaContext
) -> None:
    # Given an event whose item would be over DynamoDB's 400 KB item limit
    body = _event({"blob": "x" * (400 * 1024)})
    # When it is posted
    response = ingest.api_handler(_post_events(body), context, facade=facade)
    # Then it is refused for good (no Retry-After), naming the field and the limit
    assert response["statusCode"] == 400, response["body"]
    assert "Retry-After" not in (response.get("multiValueHeaders") or {})
    answer = json.loads(response["body"])
    assert answer["field"] == "data"
    assert "400 KB" in answer["message"]
    assert answer["failed"] == []
    assert [r["id"] for r in answer["rejected"]] == ["e1"]


def test_a_batch_with_one_oversized_event_writes_the_others_and_rejects_it(
    facade: Dynashard, context: LambdaContext
) -> None:
    body = {"events": [_event({"n": 1}, "ok"), _event({"blob": "x" * 409_600}, "big")]}
    response = ingest.api_handler(_post_events(body), context, facade=facade)
    assert response["statusCode"] == 400, response["body"]
    answer = json.loads(response["body"])
    assert answer["written"] == 1
    assert answer["field"] == "events[1].data"
    assert [r["id"] for r in answer["rejected"]] == ["big"]
    assert facade.query_events("DEPARTURES#JFK").items[0]["id"] == "ok"


def test_event_missing_its_calculated_attribute_is_a_400_naming_it(
    facade: Dynashard, context: LambdaContext
) -> None:
    # Given a key whose events are sharded by data.carrier
    facade.set_strategy("DEPARTURES#JFK", "calculated", attribute="carrier")
    # When an event without a carrier is posted
    response = ingest.api_handler(_post_events(_event({"flight": 1})), context, facade=facade)
    # Then it is a 400 naming the attribute, not a 503 to retry
    assert response["statusCode"] == 400, response["body"]
    answer = json.loads(response["body"])
    assert answer["field"] == "data.carrier"
    assert "carrier" in answer["message"]


def test_oversized_record_in_an_sqs_batch_is_reported_as_permanent(
    facade: Dynashard, context: LambdaContext, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a batch with one good record and one whose item is over 400 KB
    good = json.dumps(_event({"n": 1}, "ok"))
    big = json.dumps(_event({"blob": "x" * 409_600}, "big"))
    # When the SQS handler processes it
    response = ingest.sqs_handler(_sqs(good, big), context, facade=facade)
    # Then the oversized one goes back (to reach the DLQ after maxReceiveCount) and is
    # logged as permanent with its reason and message id, not as a throttled write
    assert response == {"batchItemFailures": [{"itemIdentifier": "m1"}]}
    rejected = [r.__dict__ for r in caplog.records if r.getMessage() == "record rejected"]
    assert len(rejected) == 1
    assert rejected[0]["item_id"] == "m1"
    assert rejected[0]["permanent"] is True
    assert rejected[0]["reason"].startswith("invalid event: ")
    assert "400 KB" in rejected[0]["reason"]
    # and it is not counted as load the table refused (which would grow shards)
    assert not [r for r in caplog.records if r.getMessage() == "write refused"]
