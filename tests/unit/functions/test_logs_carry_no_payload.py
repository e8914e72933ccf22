"""At the default log level, no line any handler writes carries payload data.

Events' ``data`` is the users' (flight records here, anything elsewhere): logs go to
CloudWatch Logs, read by more people and kept longer than the table. Every path a
payload takes is driven with a marker inside ``data`` (written, refused for good,
throttled, malformed, read back), and every log record and everything printed is
searched for it.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from dynashard import Dynashard
from functions.ingest import app as ingest
from functions.query import app as query

from .support import FakeFacade, LambdaContext, load_event

SECRET = "s3cr3t-PAYLOAD-4f1c"


def _events() -> list[dict[str, Any]]:
    ok = {"key": "K", "id": "ok", "ts": "2013-01-01T05:40:00Z", "data": {"note": SECRET}}
    return [
        ok,
        {**ok, "id": "big", "data": {"note": SECRET, "blob": "x" * 409_600}},
        {**ok, "id": "num", "data": {"note": SECRET, "n": 1e-151}},
        {**ok, "id": "bad-ts", "ts": "not a time", "data": {"note": SECRET}},
        {**ok, "key": "CALC", "id": "no-attr", "data": {"note": SECRET}},
    ]


def _post(body: Any) -> dict[str, Any]:
    event = load_event("api_post_events")
    event["body"] = json.dumps(body)
    return event


def test_no_log_line_carries_payload_data(
    facade: Dynashard,
    context: LambdaContext,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    facade.set_strategy("CALC", "calculated", attribute="carrier")
    events = _events()
    # the API: one at a time (written, rejected, refused as invalid) and as a batch
    for event in events:
        ingest.api_handler(_post(event), context, facade=facade)
    ingest.api_handler(_post({"events": [events[0], events[1], events[4]]}), context, facade=facade)
    # a throttled write (503 with the failed events)
    ingest.api_handler(_post(events[0]), context, facade=FakeFacade(fail_ids=["ok"]))
    # SQS and Kinesis batches with the same records
    template = load_event("sqs_batch")["Records"][0]
    sqs = {
        "Records": [
            dict(template, messageId=f"m{i}", body=json.dumps(e)) for i, e in enumerate(events)
        ]
    }
    ingest.sqs_handler(sqs, context, facade=facade)
    stream = load_event("kinesis_batch")["Records"][0]
    records = []
    for i, e in enumerate(events):
        record = json.loads(json.dumps(stream))
        record["kinesis"]["sequenceNumber"] = str(i)
        record["kinesis"]["data"] = base64.b64encode(json.dumps(e).encode()).decode()
        records.append(record)
    ingest.kinesis_handler({"Records": records}, context, facade=facade)
    # read back
    get = load_event("api_get_events")
    get["queryStringParameters"] = {"key": "K"}
    get["multiValueQueryStringParameters"] = {"key": ["K"]}
    answer = query.handler(get, context, facade=facade)
    assert SECRET in answer["body"]  # the payload was there to leak
    # Then no record and nothing printed holds it
    for record in caplog.records:
        assert SECRET not in record.getMessage()
        assert SECRET not in json.dumps(record.__dict__, default=str), record.getMessage()
    printed = capsys.readouterr()
    assert SECRET not in printed.out and SECRET not in printed.err
    assert any(r.getMessage() == "record rejected" for r in caplog.records)
