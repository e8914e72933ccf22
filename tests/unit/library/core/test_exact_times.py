"""Epoch-millisecond event times are kept exactly, in integers (issue 38, bug 7).

``parse_ts`` turned epoch milliseconds into a datetime through a float (seconds): outside
about 1698..2242 the float cannot hold the millisecond, so the stored time was
microseconds off, and under the millisecond codecs (``epoch_ms_number``,
``iso_ms_then_id``) that is another millisecond: two events sent 1 ms apart then
shared one, and the second was refused. Issue 39: a number below 10**11 in magnitude
(epoch seconds) given as an input time is refused, naming the field.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import boto3
import pytest
from moto import mock_aws

from dynashard import Dynashard, DynashardConfig
from dynashard.core.keys import MIN_EPOCH_MS_MAGNITUDE, format_ts, parse_ts
from dynashard.core.schema import EPOCH, EPOCH_MS_NUMBER, MAX_EPOCH_MS, MIN_EPOCH_MS, TableSchema
from dynashard.core.schema import epoch_ms as epoch_ms_of
from dynashard.errors import InvalidInputError
from dynashard.model import Event
from infra.table_specs import METADATA_TABLE, create_table_request

#: Epoch milliseconds at the edges of the range and far outside 1698..2242, where a
#: float of seconds holds no exact millisecond.
EDGES = [
    MIN_EPOCH_MS,
    MIN_EPOCH_MS + 1,
    -8_000_000_000_001,
    -1,
    0,
    1_357_035_300_001,
    7_258_118_400_001,
    253_402_300_799_993,
    253_402_300_799_994,
    MAX_EPOCH_MS,
]


@pytest.mark.parametrize("millis", EDGES)
def test_epoch_milliseconds_parse_to_that_millisecond_exactly(millis: int) -> None:
    expected = EPOCH + timedelta(milliseconds=millis)
    # Given the millisecond as an int, as digits, as a Decimal and as an integral float
    for value in (millis, str(millis), Decimal(millis), float(millis)):
        # When parsed (as a stored time: any magnitude; an input's is bounded, below)
        parsed = parse_ts(value, min_epoch_ms=None)
        # Then it is that millisecond, to the microsecond
        assert parsed == expected, (value, format_ts(parsed))
        assert epoch_ms_of(parsed) == millis


def test_fractional_milliseconds_are_kept_to_the_microsecond() -> None:
    assert format_ts(parse_ts(Decimal("253402300799998.5"))) == "9999-12-31T23:59:59.998500Z"
    assert format_ts(parse_ts(Decimal("-1.25"), min_epoch_ms=None)) == (
        "1969-12-31T23:59:59.998750Z"
    )
    # half a microsecond rounds half to even, as datetime.fromtimestamp did
    assert format_ts(parse_ts(Decimal("0.0005"), min_epoch_ms=None)) == (
        "1970-01-01T00:00:00.000000Z"
    )
    assert format_ts(parse_ts(Decimal("0.0015"), min_epoch_ms=None)) == (
        "1970-01-01T00:00:00.000002Z"
    )


@pytest.mark.parametrize(
    "value",
    [
        1_357_035_300,  # 2013-01-01T10:15:00Z in epoch seconds
        "1357035300",
        Decimal("1357035300.5"),
        1357035300.25,
        0,
        -1,
        -1_000_000_000,  # 1938 in epoch seconds
        99_999_999_999,
        -99_999_999_999,
    ],
)
def test_epoch_seconds_are_refused_naming_the_field(value: object) -> None:
    # Given a number below 10**11 in magnitude (epoch seconds of any year 1..5138)
    # When it is given as an event's time or a read's bound
    for field in ("ts", "from"):
        with pytest.raises(InvalidInputError) as raised:
            parse_ts(value, field)
        # Then it is refused naming the field, and says what it would have been
        assert raised.value.field == field
        assert "what epoch seconds look like (it would be 19" in raised.value.message
        # and what to send instead, as the API's documents name it
        assert raised.value.message.endswith(
            "send epoch milliseconds, or ISO-8601 (e.g. 2013-01-01T10:15:00Z) for a time "
            "that close to 1970"
        )
    with pytest.raises(ValueError, match=r"ts\n.*what epoch seconds look like"):
        Event(key="K", id="e1", ts=value)


@pytest.mark.parametrize(
    "millis", [MIN_EPOCH_MS_MAGNITUDE, -MIN_EPOCH_MS_MAGNITUDE, 946_684_800_000]
)
def test_epoch_milliseconds_from_the_bound_are_taken(millis: int) -> None:
    # 10**11 ms is 1973-03-03T09:46:40Z; -10**11 ms 1966-10-31T14:13:20Z
    assert epoch_ms_of(parse_ts(millis)) == millis
    assert epoch_ms_of(Event(key="K", id="e1", ts=millis).ts) == millis
    assert format_ts(parse_ts(MIN_EPOCH_MS_MAGNITUDE)) == "1973-03-03T09:46:40.000000Z"


def test_a_stored_time_of_any_magnitude_is_read() -> None:
    # another program's epoch attribute near 1970 is data already stored, not input
    assert format_ts(parse_ts(1_000, min_epoch_ms=None)) == "1970-01-01T00:00:01.000000Z"


@pytest.mark.parametrize(
    "value", [MAX_EPOCH_MS + 1, MIN_EPOCH_MS - 1, Decimal("1E+400"), "NaN", float("inf")]
)
def test_epoch_milliseconds_outside_the_years_1_to_9999_are_refused(value: object) -> None:
    with pytest.raises(InvalidInputError) as raised:
        parse_ts(value)
    assert raised.value.field == "ts"


@pytest.mark.parametrize(
    "value", [MAX_EPOCH_MS + 10**15, -(10**15) - 1, Decimal("1E+400"), Decimal("-2E+15")]
)
def test_an_out_of_range_time_is_refused_saying_so_not_as_unparseable(value: object) -> None:
    # Given epoch milliseconds past the years 1..9999, as an int or as a Decimal
    # When they are parsed
    with pytest.raises(InvalidInputError) as raised:
        parse_ts(value)
    # Then the error says the time is out of range, not that it is not a time
    assert str(raised.value) == f"ts: is outside the years 1..9999 in UTC, got {value!r}"


@pytest.mark.parametrize(("value", "kind"), [([1], "list"), (None, "NoneType"), (True, "bool")])
def test_a_value_of_another_type_is_refused_naming_its_type(value: object, kind: str) -> None:
    with pytest.raises(InvalidInputError) as raised:
        parse_ts(value, field="from")
    assert raised.value.field == "from"
    assert str(raised.value).endswith(f"got {value!r} ({kind} is not a time)")


def test_a_lowercase_z_is_utc_as_rfc_3339_allows() -> None:
    # RFC 3339 section 5.6 (note): "Z" may be written lowercase; fromisoformat refuses it
    assert parse_ts("2013-01-01T10:15:00z") == parse_ts("2013-01-01T10:15:00Z")


SCHEMA = TableSchema(
    partition_key="device",
    sort_key="at",
    sort_key_codec=EPOCH_MS_NUMBER,
    gsi_name=None,
    id_attr="reading_id",
)


@pytest.fixture
def devices(atomic_calls: Callable[[Any], Any]) -> Iterator[Dynashard]:
    with mock_aws():
        client = atomic_calls(boto3.client("dynamodb", region_name="us-east-1"))
        client.create_table(**create_table_request(METADATA_TABLE))
        client.create_table(
            TableName="devices",
            KeySchema=[
                {"AttributeName": "device", "KeyType": "HASH"},
                {"AttributeName": "at", "KeyType": "RANGE"},
            ],
            AttributeDefinitions=[
                {"AttributeName": "device", "AttributeType": "S"},
                {"AttributeName": "at", "AttributeType": "N"},
            ],
            BillingMode="PAY_PER_REQUEST",
        )
        config = DynashardConfig(
            "devices", METADATA_TABLE.default_name, default_shards=1, schema=SCHEMA
        )
        ds = Dynashard(config, client=client)
        yield ds
        ds.close()


def test_two_events_1_ms_apart_in_year_9999_are_both_stored_at_their_millisecond(
    devices: Dynashard,
) -> None:
    # Given one shard of an epoch_ms_number table, and two events 1 ms apart in 9999
    # (the float of seconds put both in ...993)
    first = Event(key="DEVICE#7", id="a", ts=253_402_300_799_993, data={"n": 1})
    second = Event(key="DEVICE#7", id="b", ts=253_402_300_799_994, data={"n": 2})
    # When both are written
    outcomes = devices.put_events([first, second])
    # Then both are acknowledged, and read back at their own millisecond
    assert [o.ok for o in outcomes] == [True, True], outcomes
    items = devices.query_events("DEVICE#7").items
    assert [(i["id"], i["ts"]) for i in items] == [
        ("a", "9999-12-31T23:59:59.993000Z"),
        ("b", "9999-12-31T23:59:59.994000Z"),
    ]


def test_a_window_bound_given_in_epoch_ms_is_that_millisecond() -> None:
    # the read API's from/to take epoch ms through the same parser
    start = parse_ts(253_402_300_799_994, "from")
    assert start == datetime(9999, 12, 31, 23, 59, 59, 994_000, tzinfo=UTC)
