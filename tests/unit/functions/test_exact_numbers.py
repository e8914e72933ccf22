"""Numbers through the functions: every digit in, every digit out (issue 38, bug 6).

``POST /events`` and the queues parsed JSON decimals as floats (``12345678901234567.89``
was acknowledged and stored as ``12345678901234568``), and ``GET /events`` answered
floats. Now bodies are parsed with ``parse_float=Decimal`` and answers carry exact JSON
numbers; a number DynamoDB cannot keep exactly is refused naming its field.
"""

from __future__ import annotations

import base64
import json
from decimal import Decimal
from typing import Any

import pytest

from dynashard import Dynashard
from functions.ingest import app as ingest
from functions.query import app as query

from .support import LambdaContext, load_event

PRICE = "12345678901234567.89"
DIGITS38 = "1.2345678901234567890123456789012345678"


def _post(body: str) -> dict[str, Any]:
    event = load_event("api_post_events")
    event["body"] = body
    return event


def _event_json(event_id: str, data: str) -> str:
    return f'{{"key": "K", "id": "{event_id}", "ts": 1357035300000, "data": {data}}}'


def _get_body(facade: Dynashard, context: LambdaContext) -> str:
    event = load_event("api_get_events")
    event["queryStringParameters"] = {"key": "K"}
    event["multiValueQueryStringParameters"] = {"key": ["K"]}
    response = query.handler(event, context, facade=facade)
    assert response["statusCode"] == 200, response
    return str(response["body"])


def test_an_api_event_is_stored_and_answered_with_every_digit(
    facade: Dynashard,
    context: LambdaContext,
) -> None:
    # Given POST /events with numbers a float cannot hold
    data = f'{{"price": {PRICE}, "tenth": 0.1, "d38": {DIGITS38}, "n": 3, "tiny": 1E-130}}'
    response = ingest.api_handler(_post(_event_json("a", data)), context, facade=facade)
    assert response["statusCode"] == 200, response
    # Then the table holds the number as sent
    (item,) = facade.client.scan(TableName="dynashard-data")["Items"]
    assert item["data"]["M"]["price"] == {"N": PRICE}
    assert item["data"]["M"]["d38"] == {"N": DIGITS38}
    # And GET /events answers exact JSON numbers (not strings, not floats)
    body = _get_body(facade, context)
    assert f'"price":{PRICE}' in body and '"tenth":0.1' in body and '"tiny":1E-130' in body
    (read,) = json.loads(body, parse_float=Decimal)["items"]
    assert read["data"] == {
        "price": Decimal(PRICE),
        "tenth": Decimal("0.1"),
        "d38": Decimal(DIGITS38),
        "n": 3,
        "tiny": Decimal("1E-130"),
    }


@pytest.mark.parametrize(
    "number", ["1.23456789012345678901234567890123456789", "1E+126", "1E-131", "NaN"]
)
def test_an_api_number_that_cannot_be_kept_exactly_is_refused_naming_it(
    facade: Dynashard, context: LambdaContext, number: str
) -> None:
    body = _event_json("a", f'{{"deep": {{"x": [1, {number}]}}}}')
    response = ingest.api_handler(_post(body), context, facade=facade)
    assert response["statusCode"] == 400, response
    assert "data.deep.x[1]" in response["body"]
    assert facade.client.scan(TableName="dynashard-data")["Items"] == []


def test_sqs_and_kinesis_records_keep_every_digit(
    facade: Dynashard,
    context: LambdaContext,
) -> None:
    # Given the same event by SQS, and another by Kinesis
    sqs = load_event("sqs_batch")
    sqs["Records"] = sqs["Records"][:1]
    sqs["Records"][0]["body"] = _event_json("s", f'{{"price": {PRICE}}}')
    kinesis = load_event("kinesis_batch")
    kinesis["Records"] = kinesis["Records"][:1]
    data = _event_json("k", f'{{"price": {PRICE}, "bad": 1.{"1" * 40}}}')
    kinesis["Records"][0]["kinesis"]["data"] = base64.b64encode(data.encode()).decode()
    # When they are handled
    assert ingest.sqs_handler(sqs, context, facade=facade) == {"batchItemFailures": []}
    failures = ingest.kinesis_handler(kinesis, context, facade=facade)["batchItemFailures"]
    # Then the SQS event is stored exactly, the Kinesis one (41 digits) refused
    assert len(failures) == 1
    (item,) = facade.client.scan(TableName="dynashard-data")["Items"]
    assert item["data"]["M"]["price"] == {"N": PRICE}
