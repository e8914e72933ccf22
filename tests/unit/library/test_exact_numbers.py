"""Numbers are kept exactly, as DynamoDB keeps them: 38 significant digits (issue 38, bug 6).

A ``Decimal`` written through the library read back as a float, the ingest handlers
parsed JSON decimals as floats (``12345678901234567.89`` was acknowledged and stored as
``12345678901234568``), and a 38-digit value under an adopted key read back rounded.
Now: ``Decimal`` in, ``Decimal`` out (integers as int), an exact JSON number on the
wire; what DynamoDB cannot keep exactly is refused naming its field.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from pydantic import ValidationError

from dynashard import Dynashard, Event
from dynashard.core.buckets import TimeBucket
from dynashard.dynamodb.writer import build_item
from dynashard.lambda_kit.ingest import parse_event
from dynashard.model import dumps, from_dynamodb_numbers, plain_value, to_dynamodb_numbers
from infra.table_specs import DATA_TABLE

T0 = datetime(2013, 1, 1, 10, 15, tzinfo=UTC)

#: Numbers a float cannot hold, each within DynamoDB's range and precision.
EXACT: dict[str, Any] = {
    "price": Decimal("12345678901234567.89"),
    "tenth": Decimal("0.1"),
    "digits38": Decimal("1.2345678901234567890123456789012345678"),
    "huge": Decimal("-9.9999999999999999999999999999999999999E+125"),
    "tiny": Decimal("1E-130"),
    "int38": 10**38 - 1,
    "nested": {"list": [Decimal("0.3"), Decimal("-2.5E-7")]},
}


def test_plain_value_returns_every_digit_dynamodb_sent() -> None:
    # The one-pass Query parser: integers stay int, the others are exact Decimals
    assert plain_value({"N": "12345678901234567.89"}) == Decimal("12345678901234567.89")
    assert type(plain_value({"N": "0.1"})) is Decimal
    assert plain_value({"N": "1E+1"}) == 10 and type(plain_value({"N": "1E+1"})) is int
    assert plain_value({"NS": ["0.3", "1E-130", "2"]}) == [Decimal("1E-130"), Decimal("0.3"), 2]
    digits = "9" * 38
    assert plain_value({"N": f"0.{digits}"}) == Decimal(f"0.{digits}")


def test_a_decimal_written_through_the_library_reads_back_exactly(facade: Dynashard) -> None:
    # Given an event whose payload holds numbers a float cannot hold
    event = Event(key="K", id="e1", ts=T0, data=EXACT)
    # When it is written and read back
    assert facade.put_events([event])[0].ok
    (item,) = facade.query_events("K").items
    # Then every number is the one written, digit for digit, as Decimal (ints as int)
    assert item["data"] == EXACT
    assert type(item["data"]["tenth"]) is Decimal
    assert type(item["data"]["int38"]) is int
    assert item == event.to_json()


def test_a_38_digit_number_under_an_adopted_key_reads_back_exactly(
    facade: Dynashard, ddb_client: Any
) -> None:
    # Given another program's item under the bare key, holding a 38-digit number
    digits = "1234567890123456789012345678901234.5678"
    item, _ = build_item(Event(key="OLD", id="x", ts=T0), 0, TimeBucket.DAY)
    item["PK"] = {"S": "OLD"}
    item["data"] = {"M": {"amount": {"N": digits}}}
    ddb_client.put_item(TableName=DATA_TABLE.default_name, Item=item)  # type: ignore[attr-defined]
    # When the key is adopted and read
    facade.adopt("OLD")
    (read,) = facade.query_events("OLD").items
    # Then the number is the one stored
    assert read["data"]["amount"] == Decimal(digits)


def test_json_output_is_an_exact_json_number() -> None:
    text = dumps({"price": Decimal("12345678901234567.89"), "n": Decimal("180"), "s": "x"})
    assert text == '{"price":12345678901234567.89,"n":180,"s":"x"}'
    assert json.loads(text, parse_float=Decimal)["price"] == Decimal("12345678901234567.89")
    assert dumps(EXACT) and json.loads(dumps(EXACT), parse_float=Decimal) == EXACT
    # Decimal in, Decimal out: integral ones become int
    assert from_dynamodb_numbers({"a": Decimal("2.50"), "b": Decimal("3")}) == {
        "a": Decimal("2.5"),
        "b": 3,
    }


def test_queue_and_stream_bodies_keep_every_digit() -> None:
    body = '{"key": "K", "id": "e1", "ts": 1357035300000, "data": {"price": 12345678901234567.89}}'
    event = parse_event(body)
    assert event.data["price"] == Decimal("12345678901234567.89")
    assert type(event.data["price"]) is Decimal


@pytest.mark.parametrize(
    ("number", "field"),
    [
        ("1.23456789012345678901234567890123456789", "data.x"),  # 39 significant digits
        ("1E+126", "data.x"),
        ("1E-131", "data.x"),
        ("NaN", "data.x"),
        ("-Infinity", "data.x"),
    ],
)
def test_a_number_dynamodb_cannot_keep_exactly_is_refused_naming_its_field(
    number: str, field: str
) -> None:
    body = f'{{"key": "K", "id": "e1", "ts": 1357035300000, "data": {{"x": {number}}}}}'
    with pytest.raises(ValidationError) as raised:
        parse_event(body)
    assert f"{field}:" in str(raised.value)
    with pytest.raises(ValueError, match=f"^{field}: "):
        to_dynamodb_numbers({"x": Decimal(number)}, "data")


def test_trailing_zeros_past_38_digits_are_not_significant() -> None:
    # 1.5 written with 41 digits is 1.5: kept, not refused (nor rounded)
    body = '{"key": "K", "id": "e1", "ts": 1357035300000, "data": {"x": 1.5' + "0" * 40 + "}}"
    assert parse_event(body).data["x"] == Decimal("1.5")
    assert to_dynamodb_numbers({"x": 10**40})["x"] == 10**40


def test_floats_from_python_callers_are_taken_by_their_repr() -> None:
    # 0.1 is 0.1000000000000000055511151231257827... in binary: the caller wrote 0.1
    assert Event(key="K", id="e", ts=1357035300000, data={"x": 0.1}).data["x"] == Decimal("0.1")


def test_a_record_nested_too_deep_to_parse_fails_alone_naming_the_limit() -> None:
    deep = (
        '{"key": "K", "id": "e1", "ts": 1357035300000, "data": '
        + '{"a": ' * 5000
        + "1"
        + "}" * 5001
    )
    with pytest.raises(ValueError, match="32 levels"):
        parse_event(deep)


def test_a_number_boto3_cannot_send_exactly_is_refused_naming_its_path() -> None:
    # Given 38 digits at 1E-130 (DynamoDB holds them; boto3's number context, Emin -128
    # and precision 38, would round the last digits) and the smallest ones boto3 sends
    from dynashard.model import dynamodb_number

    finest = Decimal("2.2747355290306614055199706930099519488E-128")
    assert dynamodb_number(finest) == finest
    assert dynamodb_number(Decimal("1E-130")) == Decimal("1E-130")
    # When the finer one is checked, then it is refused naming its path, never rounded
    with pytest.raises(ValueError, match=r"^data\.v: .*none finer than 1E-165"):
        dynamodb_number(Decimal("2.2747355290306614055199706930099519488E-130"), "data.v")
