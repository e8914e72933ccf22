"""Hostile input through the real handlers and a moto-backed Dynashard: 4xx, never 5xx.

Each test pins one defect found by trying the API as a new user would: an input that can
never be stored must be refused with a 4xx that names the field and the DynamoDB limit,
never answered 503 (which a client retries forever) or failed with a 5xx.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from dynashard import Dynashard
from dynashard.core.ordered import OrderedLayout
from functions.ingest import app as ingest

from .support import LambdaContext, load_event


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


# --- nesting depth -------------------------------------------------------------------------
def _nested(levels: int) -> str:
    """JSON of ``data`` whose deepest value sits ``levels`` maps down (data itself included)."""
    return '{"a": ' * levels + '"leaf"' + "}" * levels


def _raw_event(data_json: str) -> str:
    return '{"key": "DEPARTURES#JFK", "id": "e1", "ts": "2013-01-01T05:40:00Z", "data": ' + (
        data_json + "}"
    )


@pytest.mark.parametrize("levels", [32, 300, 5000])
def test_data_nested_deeper_than_dynamodb_allows_is_a_4xx_naming_the_limit(
    facade: Dynashard, context: LambdaContext, levels: int
) -> None:
    # Given data nested deeper than DynamoDB's 32 levels (a few hundred, a few thousand)
    body = _raw_event(_nested(levels))
    # When it is posted
    response = ingest.api_handler(_post_events(body), context, facade=facade)
    # Then it is refused with a 4xx naming the field and the limit, never a 5xx
    assert 400 <= response["statusCode"] < 500, response["body"][:300]
    answer = json.loads(response["body"])
    assert answer["field"] in ("data", "body")
    assert "32 levels" in answer["message"]


def test_data_nested_31_maps_deep_is_written(facade: Dynashard, context: LambdaContext) -> None:
    # DynamoDB accepts 31 map levels (the attribute is level 1, its scalar level 32)
    response = ingest.api_handler(_post_events(_raw_event(_nested(31))), context, facade=facade)
    assert response["statusCode"] == 200, response["body"][:300]


# --- numbers DynamoDB cannot store -----------------------------------------------------------
@pytest.mark.parametrize(
    ("raw", "path"),
    [
        ('{"x": {"y": [1, 1e-151]}}', "data.x.y[1]"),
        ('{"big": 1e126}', "data.big"),
        ('{"n": 123456789012345678901234567890123456789}', "data.n"),
        ('{"neg": -1e-131}', "data.neg"),
    ],
)
def test_number_outside_dynamodb_range_is_a_4xx_naming_its_path(
    facade: Dynashard, context: LambdaContext, raw: str, path: str
) -> None:
    body = _raw_event(raw)
    response = ingest.api_handler(_post_events(body), context, facade=facade)
    assert 400 <= response["statusCode"] < 500, response["body"][:300]
    answer = json.loads(response["body"])
    assert path in answer["message"]
    assert "38" in answer["message"] and "1E-130" in answer["message"]


def test_numbers_at_dynamodb_bounds_are_written(facade: Dynashard, context: LambdaContext) -> None:
    raw = '{"small": 1e-130, "large": 9.9e125, "digits": 12345678901234567890123456789012345678}'
    body = _raw_event(raw)
    response = ingest.api_handler(_post_events(body), context, facade=facade)
    assert response["statusCode"] == 200, response["body"][:300]


@pytest.mark.parametrize("data_json", [_nested(40), _nested(5000), '{"x": 1e-151}'])
def test_sqs_record_nested_too_deep_or_with_a_bad_number_is_a_permanent_failure(
    facade: Dynashard, context: LambdaContext, caplog: pytest.LogCaptureFixture, data_json: str
) -> None:
    response = ingest.sqs_handler(_sqs(_raw_event(data_json)), context, facade=facade)
    assert response == {"batchItemFailures": [{"itemIdentifier": "m0"}]}
    [line] = [r.__dict__ for r in caplog.records if r.getMessage() == "record rejected"]
    assert line["permanent"] is True and line["reason"].startswith("invalid event: ")


def test_ordered_index_entry_with_a_bad_number_is_a_400_naming_it(
    facade: Dynashard, context: LambdaContext
) -> None:
    facade.ordered_index("TAILS").configure(OrderedLayout.uniform(["m"]))
    event = load_event("api_post_events")
    event.update(path="/index/TAILS", resource="/index/{key}")
    event["body"] = '{"items": [{"id": "a", "value": "N1", "data": {"x": [1e-151]}}]}'
    response = ingest.api_handler(event, context, facade=facade)
    assert response["statusCode"] == 400, response["body"]
    assert json.loads(response["body"])["field"] == "items[0].data"
    assert "data.x[0]" in json.loads(response["body"])["message"]


# --- counters: by and the sum within 38 digits ------------------------------------------------
def _post_counter(by: Any, key: str | None = None) -> dict[str, Any]:
    event = load_event("api_post_counter")
    event["body"] = '{"by": ' + str(by) + "}"
    if key is not None:
        event["headers"]["Idempotency-Key"] = key
        event["multiValueHeaders"]["Idempotency-Key"] = [key]
    return event


@pytest.mark.parametrize("by", [10**38, -(10**38), 10**60])
def test_counter_increment_beyond_38_digits_is_a_4xx_naming_by(
    facade: Dynashard, context: LambdaContext, by: int
) -> None:
    response = ingest.api_handler(_post_counter(by), context, facade=facade)
    assert 400 <= response["statusCode"] < 500, response["body"]
    assert json.loads(response["body"])["field"] == "by"
    assert facade.get_counter("CARRIER#UA").value == 0


@pytest.mark.parametrize("idempotency_key", [None, "k"])
def test_increment_whose_sum_would_pass_38_digits_is_a_4xx_and_the_counter_still_counts(
    facade: Dynashard, context: LambdaContext, idempotency_key: str | None
) -> None:
    # Given a counter (one shard) holding the largest 38-digit number
    largest = 10**38 - 1
    first = ingest.api_handler(_post_counter(largest), context, facade=facade)
    assert first["statusCode"] == 200, first["body"]
    # When one more is added (a fresh increment: without the template's Idempotency-Key,
    # the first request's, whose redelivery is "already applied", not an overflow)
    more = _post_counter(1, idempotency_key)
    if idempotency_key is None:
        del more["headers"]["Idempotency-Key"], more["multiValueHeaders"]["Idempotency-Key"]
    response = ingest.api_handler(more, context, facade=facade)
    # Then it is refused naming by (not a 500: a 409, what is stored makes the sum
    # unrepresentable), and the counter still takes a decrement
    assert response["statusCode"] == 409, response["body"]
    assert json.loads(response["body"])["field"] == "by"
    assert "38" in json.loads(response["body"])["message"]
    assert facade.get_counter("CARRIER#UA").value == largest
    # (moto adds with 28 digits of precision, so the decrement's sum is not checked here)
    # (a new Idempotency-Key: the template's was applied with another by, a 422)
    again = ingest.api_handler(_post_counter(-1, "decrement-1"), context, facade=facade)
    assert again["statusCode"] == 200, again["body"]


# --- the router matches every name the document allows -------------------------------------
@pytest.mark.parametrize("raw", ['a"b', "a`b", "a\\\\b", "caf%C3%A9", "x%2Fy", "é#1"])
def test_a_counter_name_with_any_character_reaches_its_route(
    facade: Dynashard, context: LambdaContext, raw: str
) -> None:
    # Given a counter name sent with characters Powertools' router does not match
    event = _post_counter(3)
    event["path"] = f"/counters/{raw}"
    event["pathParameters"] = {"name": raw}
    # When it is posted, it is counted under its decoded name (not a plain-text 404)
    response = ingest.api_handler(event, context, facade=facade)
    assert response["statusCode"] == 200, response
    assert json.loads(response["body"])["name"] == __import__("urllib.parse").parse.unquote(raw)


def test_an_unknown_route_inside_the_function_is_a_json_404(context: LambdaContext) -> None:
    event = _post_counter(3)
    event["path"] = "/counters/a/b/c"
    response = ingest.api_handler(event, context)
    assert response["statusCode"] == 404
    assert json.loads(response["body"])["field"] == "path"


def test_a_redelivered_increment_to_a_counter_at_38_digits_is_already_applied(
    facade: Dynashard, context: LambdaContext
) -> None:
    # Given a counter taken to the largest 38-digit number by one keyed request
    first = ingest.api_handler(_post_counter(10**38 - 1, "msg-1"), context, facade=facade)
    assert first["statusCode"] == 200, first["body"]
    # When the same request is delivered again
    again = ingest.api_handler(_post_counter(10**38 - 1, "msg-1"), context, facade=facade)
    # Then it answers "already applied" (200), not a 409 overflow
    assert again["statusCode"] == 200, again["body"]
    assert json.loads(again["body"])["applied"] is False


def test_an_idempotency_key_reused_with_another_body_is_422_naming_the_header(
    facade: Dynashard, context: LambdaContext
) -> None:
    # Given an increment applied under an Idempotency-Key
    first = ingest.api_handler(_post_counter(5, "msg-1"), context, facade=facade)
    assert first["statusCode"] == 200, first["body"]
    # When the key is reused with another by
    reused = ingest.api_handler(_post_counter(3, "msg-1"), context, facade=facade)
    # Then it is refused (IETF Idempotency-Key draft: 422), naming the header, not a
    # 200 "applied: false" echoing a by that was never applied; the counter keeps 5
    assert reused["statusCode"] == 422, reused["body"]
    body = json.loads(reused["body"])
    assert body["field"] == "Idempotency-Key"
    assert body["message"].startswith("Idempotency-Key: 'msg-1' was applied")
    assert facade.get_counter("CARRIER#UA").value == 5
