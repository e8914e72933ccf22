"""Ingest function: REST routes, SQS and Kinesis batches, against a fake facade."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from typing import Any

import pytest

from dynashard.core.families import parse_bucketed_keys, write_key
from dynashard.errors import ConfigurationError, InvalidInputError, MetadataError
from dynashard.lambda_kit.cache import reset_all
from dynashard.model import Event
from functions.ingest import app as ingest

from .support import FakeFacade, LambdaContext, load_event


def _body(response: dict[str, Any]) -> dict[str, Any]:
    return json.loads(response["body"])


def _with_body(name: str, body: Any) -> dict[str, Any]:
    event = load_event(name)
    event["body"] = body if isinstance(body, str) else json.dumps(body)
    return event


def _emf(captured: str) -> dict[str, list[float]]:
    """Merge the EMF blobs Powertools printed: metric name -> values."""
    values: dict[str, list[float]] = {}
    for line in captured.splitlines():
        if line.startswith("{") and '"_aws"' in line:
            blob = json.loads(line)
            for definition in blob["_aws"]["CloudWatchMetrics"][0]["Metrics"]:
                value = blob[definition["Name"]]
                values.setdefault(definition["Name"], []).extend(
                    value if isinstance(value, list) else [value]
                )
    return values


# --- POST /events -------------------------------------------------------------------------
def test_post_one_event_writes_it_and_answers_200(context: LambdaContext) -> None:
    # Given the sample request with one event
    facade = FakeFacade()
    # When it is handled
    response = ingest.api_handler(load_event("api_post_events"), context, facade=facade)
    # Then the event is written once and acknowledged
    assert response["statusCode"] == 200
    body = _body(response)
    assert body["written"] == 1 and body["failed"] == []
    assert body["results"] == [
        {"id": "2013-01-01-B6-725", "key": "DEPARTURES#JFK", "ok": True, "error": None}
    ]
    [[event]] = facade.put_calls
    assert event.ts == datetime(2013, 1, 1, 5, 40, tzinfo=UTC)
    assert event.data["flight"] == 725


def test_post_batch_is_one_bulk_write_and_accepts_epoch_millis(context: LambdaContext) -> None:
    # Given the sample batch of 3 events, one with an epoch-milliseconds ts
    facade = FakeFacade()
    # When it is handled
    response = ingest.api_handler(load_event("api_post_events_batch"), context, facade=facade)
    # Then all three go to the library in one call, in order
    assert response["statusCode"] == 200
    assert len(facade.put_calls) == 1
    assert [e.id for e in facade.put_calls[0]] == [
        "2013-01-01-B6-725",
        "2013-01-01-UA-1696",
        "2013-01-01-UA-1545",
    ]
    assert facade.put_calls[0][1].ts == datetime(2013, 1, 1, 5, 58, tzinfo=UTC)
    assert _body(response)["written"] == 3


def test_post_events_emits_written_and_failed_counts(
    context: LambdaContext, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a batch where one event cannot be written
    facade = FakeFacade(fail_ids=["2013-01-01-UA-1696"])
    # When it is handled
    ingest.api_handler(load_event("api_post_events_batch"), context, facade=facade)
    # Then the EMF output carries both counts
    metrics = _emf(capsys.readouterr().out)
    assert metrics["EventsWritten"] == [2.0]
    assert metrics["EventsFailed"] == [1.0]


def test_partial_write_failure_answers_503_naming_only_the_failed_event(
    context: LambdaContext,
) -> None:
    # Given a batch where the library could not write one event
    facade = FakeFacade(fail_ids=["2013-01-01-UA-1696"])
    # When it is handled
    response = ingest.api_handler(load_event("api_post_events_batch"), context, facade=facade)
    # Then the client is told to retry exactly that one, after a pause
    assert response["statusCode"] == 503
    assert response["multiValueHeaders"]["Retry-After"] == ["1"]
    body = _body(response)
    assert body["written"] == 2
    assert body["failed"] == [
        {
            "id": "2013-01-01-UA-1696",
            "key": "DEPARTURES#JFK",
            "error": "ProvisionedThroughputExceededException",
        }
    ]
    assert [r["ok"] for r in body["results"]] == [True, False, True]


def test_all_events_failing_is_503_listing_each(context: LambdaContext) -> None:
    ids = ["2013-01-01-B6-725", "2013-01-01-UA-1696", "2013-01-01-UA-1545"]
    facade = FakeFacade(fail_ids=ids)
    response = ingest.api_handler(load_event("api_post_events_batch"), context, facade=facade)
    assert response["statusCode"] == 503
    assert [f["id"] for f in _body(response)["failed"]] == ids
    assert _body(response)["written"] == 0


#: 2013-01-01T10:15:00Z in epoch milliseconds.
T = 1357035300000


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"key": "DEPARTURES#JFK", "id": "1", "ts": "yesterday"}, "ts"),
        ({"key": "DEPARTURES#JFK", "ts": "2013-01-01T05:40:00Z"}, "id"),
        ({"key": "", "id": "1", "ts": T}, "key"),
        ({"key": "K", "id": "1", "ts": T, "data": []}, "data"),
        ({"key": "K", "id": "1", "ts": T, "colour": "red"}, "colour"),
        ({"events": [{"key": "K", "id": "1", "ts": T}, {"key": "K", "ts": T}]}, "events[1].id"),
        ({"events": [{"key": "K", "id": "1", "ts": "13/01/2013"}]}, "events[0].ts"),
        # epoch seconds (2013-01-01T10:15Z), not stored in 1970 (issue 39)
        ({"key": "K", "id": "1", "ts": 1357035300}, "ts"),
        (
            {"events": [{"key": "K", "id": "1", "ts": T}, {"key": "K", "id": "2", "ts": 0}]},
            "events[1].ts",
        ),
        ({"events": []}, "events"),
        ({"events": [{"key": "K", "id": str(i), "ts": i} for i in range(101)]}, "events"),
        ("{not json", "body"),
    ],
)
def test_bad_post_events_body_is_400_naming_the_field_and_writes_nothing(
    context: LambdaContext, body: Any, field: str
) -> None:
    # Given a request body that breaks the event contract
    facade = FakeFacade()
    # When it is handled
    response = ingest.api_handler(_with_body("api_post_events", body), context, facade=facade)
    # Then nothing is written and the JSON answer names the field
    assert response["statusCode"] == 400
    answer = _body(response)
    assert answer["field"] == field
    assert answer["message"].startswith(f"{field}: ")
    assert any(e["field"] == field for e in answer["errors"])
    assert facade.put_calls == []


def test_batch_of_exactly_100_events_is_accepted(context: LambdaContext) -> None:
    events = [{"key": "K", "id": str(i), "ts": 1_357_000_000_000 + i} for i in range(100)]
    facade = FakeFacade()
    response = ingest.api_handler(
        _with_body("api_post_events", {"events": events}), context, facade=facade
    )
    assert response["statusCode"] == 200
    assert len(facade.put_calls[0]) == 100


def test_unknown_route_is_404(context: LambdaContext) -> None:
    event = load_event("api_post_events")
    event["path"] = "/nothing-here"
    response = ingest.api_handler(event, context, facade=FakeFacade())
    assert response["statusCode"] == 404


# --- POST /counters/{name} -----------------------------------------------------------------
def test_post_counter_decodes_the_name_and_passes_the_idempotency_key(
    context: LambdaContext,
) -> None:
    # Given the sample increment of CARRIER#UA (sent as CARRIER%23UA) with a key
    facade = FakeFacade()
    # When it is handled
    response = ingest.api_handler(load_event("api_post_counter"), context, facade=facade)
    # Then the library increments the decoded name once
    assert response["statusCode"] == 200
    assert _body(response) == {"name": "CARRIER#UA", "by": 5, "applied": True}
    assert facade.increments == [("CARRIER#UA", 5, "sqs-059f36b4-87a3-44ab-83d2-661975830a7d")]


def test_post_counter_retry_with_the_same_key_says_not_applied(context: LambdaContext) -> None:
    # Given an increment already applied under its Idempotency-Key
    facade = FakeFacade()
    ingest.api_handler(load_event("api_post_counter"), context, facade=facade)
    # When the client retries it
    response = ingest.api_handler(load_event("api_post_counter"), context, facade=facade)
    # Then the answer is still 200, and says this request added nothing
    assert response["statusCode"] == 200
    assert _body(response) == {"name": "CARRIER#UA", "by": 5, "applied": False}


def test_post_counter_without_idempotency_key(context: LambdaContext) -> None:
    event = load_event("api_post_counter")
    del event["headers"]["Idempotency-Key"]
    del event["multiValueHeaders"]["Idempotency-Key"]
    facade = FakeFacade()
    response = ingest.api_handler(event, context, facade=facade)
    assert response["statusCode"] == 200
    assert facade.increments == [("CARRIER#UA", 5, None)]


@pytest.mark.parametrize(
    ("body", "field"),
    [({"by": 0}, "by"), ({"by": "5"}, "by"), ({"by": 1.5}, "by"), ({"by": True}, "by"), ({}, "by")],
)
def test_bad_counter_body_is_400(context: LambdaContext, body: Any, field: str) -> None:
    facade = FakeFacade()
    response = ingest.api_handler(_with_body("api_post_counter", body), context, facade=facade)
    assert response["statusCode"] == 400
    assert _body(response)["field"] == field
    assert facade.increments == []


def test_library_validation_error_is_400_with_field(context: LambdaContext) -> None:
    facade = FakeFacade(raises=InvalidInputError("name", "longer than 2,048 bytes"))
    response = ingest.api_handler(load_event("api_post_counter"), context, facade=facade)
    assert response["statusCode"] == 400
    assert _body(response) == {"message": "name: longer than 2,048 bytes", "field": "name"}


def test_other_library_error_is_500_with_message(context: LambdaContext) -> None:
    facade = FakeFacade(raises=MetadataError())
    response = ingest.api_handler(load_event("api_post_counter"), context, facade=facade)
    assert response["statusCode"] == 500
    assert _body(response)["message"] == "shard metadata unavailable"


# --- SQS -------------------------------------------------------------------------------------
SQS_INVALID_ID = "9d6e3b8a-1c2f-4e5d-8a7b-3f0e1d2c4b5a"


def test_sqs_invalid_record_is_the_only_failure_and_valid_ones_are_one_write(
    context: LambdaContext,
) -> None:
    # Given the sample batch: 4 messages, the third with an unparseable ts
    facade = FakeFacade()
    # When it is handled
    result = ingest.sqs_handler(load_event("sqs_batch"), context, facade=facade)
    # Then exactly that message is reported, and the 3 others were written in one call
    assert result == {"batchItemFailures": [{"itemIdentifier": SQS_INVALID_ID}]}
    assert len(facade.put_calls) == 1
    assert [e.id for e in facade.put_calls[0]] == [
        "2013-01-01-B6-725",
        "2013-01-01-UA-1696",
        "2013-01-01-UA-1545",
    ]


def test_sqs_invalid_record_reason_is_logged(
    context: LambdaContext, caplog: pytest.LogCaptureFixture
) -> None:
    ingest.sqs_handler(load_event("sqs_batch"), context, facade=FakeFacade())
    rejected = [r for r in caplog.records if r.getMessage() == "record rejected"]
    assert [getattr(r, "item_id", None) for r in rejected] == [SQS_INVALID_ID]
    assert getattr(rejected[0], "reason", "").startswith("invalid event: ts: must be ISO-8601")


def test_sqs_write_failure_of_one_event_reports_its_message(context: LambdaContext) -> None:
    # Given the library fails the event of the last message
    facade = FakeFacade(fail_ids=["2013-01-01-UA-1545"])
    # When the batch is handled
    result = ingest.sqs_handler(load_event("sqs_batch"), context, facade=facade)
    # Then that message and the invalid one are reported, in batch order
    assert result == {
        "batchItemFailures": [
            {"itemIdentifier": SQS_INVALID_ID},
            {"itemIdentifier": "c80e8021-a70a-42c7-a470-796e1186f753"},
        ]
    }


def test_sqs_all_failed_is_still_a_partial_response_listing_every_message(
    context: LambdaContext,
) -> None:
    # Given a library whose bulk write fails as a whole
    facade = FakeFacade(raises=MetadataError())
    event = load_event("sqs_batch")
    # When the batch is handled
    result = ingest.sqs_handler(event, context, facade=facade)
    # Then no exception escapes and every message goes back to the queue
    assert result == {
        "batchItemFailures": [{"itemIdentifier": r["messageId"]} for r in event["Records"]]
    }


def test_sqs_batch_of_only_invalid_records_writes_nothing(context: LambdaContext) -> None:
    event = load_event("sqs_batch")
    for record in event["Records"]:
        record["body"] = "not json"
    facade = FakeFacade()
    result = ingest.sqs_handler(event, context, facade=facade)
    assert len(result["batchItemFailures"]) == 4
    assert facade.put_calls == []


def test_sqs_clean_batch_reports_nothing(context: LambdaContext) -> None:
    event = load_event("sqs_batch")
    del event["Records"][2]
    assert ingest.sqs_handler(event, context, facade=FakeFacade()) == {"batchItemFailures": []}


# --- Kinesis --------------------------------------------------------------------------------
def test_kinesis_batch_is_written_in_one_call(context: LambdaContext) -> None:
    facade = FakeFacade()
    result = ingest.kinesis_handler(load_event("kinesis_batch"), context, facade=facade)
    assert result == {"batchItemFailures": []}
    assert len(facade.put_calls) == 1
    assert [e.key for e in facade.put_calls[0]] == [
        "DEPARTURES#JFK",
        "DEPARTURES#JFK",
        "DEPARTURES#EWR",
    ]


def test_kinesis_failures_are_reported_by_sequence_number(context: LambdaContext) -> None:
    # Given one record whose data is not base64 JSON and one event the library fails
    event = load_event("kinesis_batch")
    event["Records"][0]["kinesis"]["data"] = base64.b64encode(b"{oops").decode()
    facade = FakeFacade(fail_ids=["2013-01-01-UA-1545"])
    # When the batch is handled
    result = ingest.kinesis_handler(event, context, facade=facade)
    # Then both are reported by their sequence numbers
    assert result == {
        "batchItemFailures": [
            {"itemIdentifier": "49590338271490256608559692538361571095921575989136588898"},
            {"itemIdentifier": "49590338271490256608559692541807423115452743591278227490"},
        ]
    }
    assert len(facade.put_calls[0]) == 2


def test_kinesis_data_that_is_not_base64_is_a_failure(context: LambdaContext) -> None:
    event = load_event("kinesis_batch")
    event["Records"][1]["kinesis"]["data"] = "%%% not base64 %%%"
    result = ingest.kinesis_handler(event, context, facade=FakeFacade())
    assert result == {
        "batchItemFailures": [
            {"itemIdentifier": "49590338271490256608559692540925702759324208523137515618"}
        ]
    }


# --- configuration ---------------------------------------------------------------------------
def test_settings_are_read_at_first_use_and_cached(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DYNASHARD_DEFAULT_SHARDS", "4")
    first = ingest.get_settings()
    monkeypatch.setenv("DYNASHARD_DEFAULT_SHARDS", "8")
    assert ingest.get_settings() is first
    assert first.default_shards == 4
    config = first.to_config()
    assert config.default_shards == 4
    assert config.data_table == "dynashard-data"
    assert config.in_band_growth is True


def test_in_band_growth_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DYNASHARD_IN_BAND_GROWTH", "false")
    assert ingest.get_settings().to_config().in_band_growth is False


def test_write_attempts_setting_is_the_writers_retry_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import pydantic

    # The scaler reads the same setting to tell the writers' retries from new load
    assert ingest.get_settings().to_config().write_backoff.max_attempts == 8
    reset_all()
    monkeypatch.setenv("DYNASHARD_WRITE_MAX_ATTEMPTS", "3")
    assert ingest.get_settings().to_config().write_backoff.max_attempts == 3
    reset_all()
    monkeypatch.setenv("DYNASHARD_WRITE_MAX_ATTEMPTS", "0")
    with pytest.raises(ConfigurationError, match="DYNASHARD_WRITE_MAX_ATTEMPTS") as raised:
        ingest.get_settings()
    assert isinstance(raised.value.__cause__, pydantic.ValidationError)


def test_missing_table_setting_fails_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    import pydantic

    monkeypatch.delenv("DYNASHARD_DATA_TABLE")
    with pytest.raises(ConfigurationError, match="DYNASHARD_DATA_TABLE") as raised:
        ingest.get_settings()
    assert isinstance(raised.value.__cause__, pydantic.ValidationError)


def test_sqs_write_load_lines_go_through_the_functions_logger(
    context: LambdaContext, caplog: pytest.LogCaptureFixture
) -> None:
    # Given the sample batch with its second JFK message delivered before, and the EWR
    # event refused by the library (the figures are dynashard.lambda_kit.ingest's, tested there)
    event = load_event("sqs_batch")
    event["Records"][1]["attributes"]["ApproximateReceiveCount"] = "3"
    facade = FakeFacade(fail_ids=["2013-01-01-UA-1545"])
    # When it is handled
    ingest.sqs_handler(event, context, facade=facade)
    # Then the function's own logger carries the write-load lines, the redelivery apart
    loads = {r.logical_key: r for r in caplog.records if r.getMessage() == "write load"}
    assert {r.name for r in caplog.records if r.getMessage() == "write load"} == {
        ingest.logger.name
    }
    assert set(loads) == {"DEPARTURES#JFK", "DEPARTURES#EWR"}  # the LGA record is invalid
    assert loads["DEPARTURES#JFK"].redelivered_wcu == 1
    refused = [r for r in caplog.records if r.getMessage() == "write refused"]
    assert [r.logical_key for r in refused] == ["DEPARTURES#EWR"]


def test_write_load_lines_carry_each_keys_part_of_the_stacks_rule(
    context: LambdaContext, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a stack whose write-load rule is split in 8 parts of the key space
    from dynashard.core.load import write_load_part

    monkeypatch.setenv("DYNASHARD_WRITE_LOAD_PARTS", "8")
    # When the API and the queue write
    ingest.api_handler(load_event("api_post_events"), context, facade=FakeFacade())
    ingest.sqs_handler(load_event("sqs_batch"), context, facade=FakeFacade())
    # Then every line carries its key's part, which only that part's rule counts
    lines = [r for r in caplog.records if r.getMessage() == "write load"]
    assert len(lines) >= 3
    assert all(r.part == write_load_part(r.logical_key, 8) for r in lines)
    assert len({r.part for r in lines}) > 1


def test_post_events_logs_the_write_load_of_the_request(
    context: LambdaContext, caplog: pytest.LogCaptureFixture
) -> None:
    ingest.api_handler(load_event("api_post_events"), context, facade=FakeFacade())
    lines = [r for r in caplog.records if r.getMessage() == "write load"]
    assert lines and all(r.offered_wcu == r.events for r in lines)
    assert not [r for r in caplog.records if r.getMessage() == "write refused"]


def test_write_load_is_sized_with_the_functions_table_schema(
    context: LambdaContext, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a function configured for a table of another layout (epoch sort key, no GSI,
    # a flat payload), and events whose items cross 1 KB in dynashard's own layout only
    from dynashard import names
    from dynashard.core.buckets import TimeBucket
    from dynashard.dynamodb.writer import event_write_units

    for name, value in {
        names.ENV_PARTITION_KEY_ATTR: "device",
        names.ENV_SORT_KEY_ATTR: "at",
        names.ENV_SORT_KEY_CODEC: "epoch_ms_number",
        names.ENV_GSI_NAME: "",
        names.ENV_ID_ATTR: "reading_id",
        names.ENV_PAYLOAD: "flat",
    }.items():
        monkeypatch.setenv(name, value)
    schema = ingest.get_settings().table_schema
    ts = "2013-01-01T05:40:00Z"

    def event(pad: int) -> Event:
        return Event.model_validate({"key": "K", "id": "e1", "ts": ts, "data": {"n": "x" * pad}})

    pad = next(
        p
        for p in range(600, 1100)
        if event_write_units(event(p), TimeBucket.DAY)
        != event_write_units(event(p), TimeBucket.DAY, schema)
    )
    body = {"key": "K", "id": "e1", "ts": ts, "data": {"n": "x" * pad}}
    # When the API and the queue each bring one
    ingest.api_handler(_with_body("api_post_events", body), context, facade=FakeFacade())
    sqs = load_event("sqs_batch")
    sqs["Records"] = sqs["Records"][:1]
    sqs["Records"][0]["body"] = json.dumps(body)
    ingest.sqs_handler(sqs, context, facade=FakeFacade())
    # Then both write-load lines offer the units of the schema's item, not the default's
    lines = [r for r in caplog.records if r.getMessage() == "write load"]
    units = event_write_units(event(pad), TimeBucket.DAY, schema)
    assert units < event_write_units(event(pad), TimeBucket.DAY)
    assert [r.offered_wcu for r in lines] == [units, units]


def test_write_load_of_a_bucketed_family_names_its_bucket_keys(
    context: LambdaContext, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a facade with OPS_LOG bucketed by day, and a request with events on two days
    families = parse_bucketed_keys("OPS_LOG=day")

    class BucketingFacade(FakeFacade):
        def write_key(self, event: Event) -> str:
            return write_key(event.key, event.ts, families)

    events = [
        {"key": "OPS_LOG", "id": "a", "ts": "2026-06-22T01:00:00Z"},
        {"key": "OPS_LOG", "id": "b", "ts": "2026-06-23T01:00:00Z"},
        {"key": "OPS_LOG", "id": "c", "ts": "2026-06-23T02:00:00Z"},
    ]
    ingest.api_handler(
        _with_body("api_post_events_batch", {"events": events}), context, facade=BucketingFacade()
    )
    # Then the write-load lines name the bucket keys, the logical keys the scaler grows
    loads = {r.logical_key: r.events for r in caplog.records if r.getMessage() == "write load"}
    assert loads == {"OPS_LOG#2026-06-22": 1, "OPS_LOG#2026-06-23": 2}
