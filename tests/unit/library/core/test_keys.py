from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dynashard.core.buckets import TimeBucket, time_bucket
from dynashard.core.keys import (
    MAX_ITEM_BYTES,
    format_ts,
    gsi1_partition_key,
    item_size,
    parse_ts,
    physical_key,
    sort_key,
    split_gsi1_partition_key,
    split_physical_key,
    validate_item_size,
    validate_logical_key,
)
from dynashard.errors import InvalidInputError, KeyLimitExceededError


def test_physical_key_round_trip() -> None:
    assert physical_key("DEPARTURES#JFK", 3) == "DEPARTURES#JFK#3"
    assert split_physical_key("DEPARTURES#JFK#3") == ("DEPARTURES#JFK", 3)


@pytest.mark.parametrize("value", ["DEPARTURES#JFK", "DEPARTURES#JFK#\u00b2", "#3", "K#-1"])
def test_split_rejects_keys_without_shard(value: str) -> None:
    # "\u00b2" (superscript two) passes str.isdigit but not int()
    with pytest.raises(InvalidInputError, match="not a physical key"):
        split_physical_key(value)


def test_format_ts_is_fixed_width_utc() -> None:
    ts = datetime(2013, 1, 1, 5, 15, tzinfo=timezone(timedelta(hours=-5)))
    assert format_ts(ts) == "2013-01-01T10:15:00.000000Z"


@given(
    st.datetimes(min_value=datetime(1000, 1, 1), max_value=datetime(9999, 1, 1)),
    st.datetimes(min_value=datetime(1000, 1, 1), max_value=datetime(9999, 1, 1)),
)
def test_byte_order_of_timestamps_is_time_order(a: datetime, b: datetime) -> None:
    fa, fb = format_ts(a).encode(), format_ts(b).encode()
    assert (fa < fb) == (a < b)
    assert len(fa) == len(fb)


def test_parse_ts_accepts_iso_and_epoch_millis() -> None:
    expected = datetime(2013, 1, 1, 10, 0, tzinfo=UTC)
    assert parse_ts("2013-01-01T10:00:00Z") == expected
    assert parse_ts("2013-01-01T05:00:00-05:00") == expected
    assert parse_ts(1357034400000) == expected
    assert parse_ts("1357034400000") == expected


@pytest.mark.parametrize("bad", ["yesterday", "", None, True, [1], "2013-13-01T00:00:00Z"])
def test_parse_ts_names_the_field(bad: object) -> None:
    with pytest.raises(InvalidInputError, match=r"^ts: must be ISO-8601"):
        parse_ts(bad)


def test_partition_key_limit_counts_the_shard_suffix() -> None:
    validate_logical_key("k" * 2043)  # + "#999" = 2047 bytes
    with pytest.raises(KeyLimitExceededError, match="2048 bytes"):
        validate_logical_key("k" * 2045)
    with pytest.raises(KeyLimitExceededError, match="must not be empty"):
        validate_logical_key("")


def test_multibyte_keys_are_measured_in_utf8_bytes() -> None:
    with pytest.raises(KeyLimitExceededError):
        validate_logical_key("é" * 1023)  # 2046 bytes + suffix


def test_sort_key_limit() -> None:
    ts = datetime(2013, 1, 1, tzinfo=UTC)
    assert sort_key(ts, "e1") == "2013-01-01T00:00:00.000000Z#e1"
    sort_key(ts, "x" * (1024 - 28))
    with pytest.raises(KeyLimitExceededError, match="1024 bytes"):
        sort_key(ts, "x" * (1024 - 27))
    with pytest.raises(KeyLimitExceededError, match="must not be empty"):
        sort_key(ts, "")


def test_item_size_follows_the_developer_guide_rules() -> None:
    # name bytes + value bytes: "a"(1) + "bc"(2); "n"(1) + 12345 (3 digits pairs -> 3 + 1)
    assert item_size({"a": "bc"}) == 3
    assert item_size({"n": 12345}) == 1 + 4
    assert item_size({"m": {"x": "y"}}) == 1 + 3 + 1 + 1 + 1
    assert item_size({"b": True, "z": None}) == 4


def test_item_over_400kb_is_refused() -> None:
    validate_item_size({"data": "x" * (MAX_ITEM_BYTES - 10)})
    with pytest.raises(KeyLimitExceededError, match="409600 bytes"):
        validate_item_size({"data": "x" * MAX_ITEM_BYTES})


@given(
    logical=st.text(st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1),
    ts=st.datetimes(datetime(2000, 1, 1), datetime(2100, 1, 1), timezones=st.just(UTC)),
    bucket=st.sampled_from(list(TimeBucket)),
    shard=st.integers(0, 999),
)
def test_gsi1_partition_key_round_trip(
    logical: str, ts: datetime, bucket: TimeBucket, shard: int
) -> None:
    # Logical keys may hold "#" themselves (DEPARTURES#JFK): only the last two parts split
    assert split_gsi1_partition_key(gsi1_partition_key(logical, ts, bucket, shard)) == (
        logical,
        time_bucket(ts, bucket),
        shard,
    )


@pytest.mark.parametrize(
    "value",
    [
        "DEPARTURES#JFK#3",
        "DEPARTURES#JFK#2013-01-01",
        "#2013-01-01#3",
        "K#2013-1-1#3",
        "K#x#1",
        "K#2013-01-01#\u00b2",
    ],
)
def test_split_gsi1_partition_key_names_what_is_wrong(value: str) -> None:
    with pytest.raises(InvalidInputError, match=r"GSI1PK: .*\{logical\}#\{bucket\}#\{shard\}"):
        split_gsi1_partition_key(value)


# --- the errors name the field, the limit and the value (mutation testing, issue 38) -----


@pytest.fixture
def local_zone_tokyo(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Run the test with the process's local time zone at UTC+9 (POSIX ``TZ``)."""
    monkeypatch.setenv("TZ", "JST-9")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.mark.usefixtures("local_zone_tokyo")
def test_format_ts_is_utc_whatever_the_local_zone() -> None:
    # Given a process whose local zone is UTC+9, and times in three zones
    aware = datetime(2013, 1, 1, 5, 15, tzinfo=timezone(timedelta(hours=-5)))
    naive = datetime(2013, 1, 1, 10, 15)
    # When they are formatted
    # Then each is the UTC instant, never the local wall clock (19:15)
    assert format_ts(aware) == "2013-01-01T10:15:00.000000Z"
    assert format_ts(naive) == "2013-01-01T10:15:00.000000Z"
    assert format_ts(aware.astimezone(UTC)) == "2013-01-01T10:15:00.000000Z"


def test_a_negative_shard_is_refused_naming_the_value() -> None:
    # Given a negative shard number
    # When its physical key is asked for
    with pytest.raises(InvalidInputError) as info:
        physical_key("DEPARTURES#JFK", -1)
    # Then the error names the field and the value
    assert info.value.field == "shard"
    assert str(info.value) == "shard: must be >= 0, got -1"


def test_an_empty_event_id_is_refused_as_field_id() -> None:
    # Given an empty event id
    # When its sort key is asked for
    with pytest.raises(KeyLimitExceededError) as info:
        sort_key(datetime(2013, 1, 1, tzinfo=UTC), "")
    # Then the field is the event's own ``id``, lower case as the API spells it
    assert info.value.field == "id"
    assert str(info.value) == "id: must not be empty"


def test_an_item_over_400kb_is_reported_as_field_data_by_default() -> None:
    # Given an item over DynamoDB's 400 KB item limit
    item = {"data": "x" * MAX_ITEM_BYTES}
    # When its size is checked without naming a field
    with pytest.raises(KeyLimitExceededError) as info:
        validate_item_size(item)
    # Then the error names ``data`` (the event's payload), or the field given
    assert info.value.field == "data"
    assert str(info.value).startswith("data: makes an item of 409604 bytes")
    with pytest.raises(KeyLimitExceededError) as info:
        validate_item_size(item, "events[2].data")
    assert info.value.field == "events[2].data"


# --- survivors of make mutate's seed-39 sample (issue 38) ---------------------------------


def test_a_logical_key_whose_widest_physical_key_is_2048_bytes_is_accepted() -> None:
    # Given a logical key of 2044 bytes: with "#999", the widest shard suffix, its
    # partition key is exactly DynamoDB's 2,048-byte limit (the limit is inclusive)
    logical = "k" * 2044
    assert len(physical_key(logical, 999).encode()) == 2048
    # When it is validated, it is accepted; one byte more is refused, naming both sizes
    validate_logical_key(logical)
    with pytest.raises(KeyLimitExceededError) as info:
        validate_logical_key(logical + "k")
    assert str(info.value) == (
        "key: is 2045 bytes; with the shard suffix the partition key would be 2049 bytes, "
        "over DynamoDB's limit of 2048 bytes"
    )


def test_an_empty_logical_key_is_refused_naming_dynamodb_s_minimum() -> None:
    # Given an empty logical key
    # When it is validated
    with pytest.raises(KeyLimitExceededError) as info:
        validate_logical_key("", "events[0].key")
    # Then the error names the field and DynamoDB's 1-byte minimum for key values
    assert info.value.field == "events[0].key"
    assert str(info.value) == (
        "events[0].key: must not be empty (DynamoDB key values are 1+ bytes)"
    )


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        # text that is no time: the value alone, no parser's detail after it
        ("yesterday", "got 'yesterday'"),
        ("2013-13-01T00:00:00Z", "got '2013-13-01T00:00:00Z'"),
        # a value of another type: its type is named
        ([1], "got [1] (list is not a time)"),
        (True, "got True (bool is not a time)"),
    ],
)
def test_parse_ts_names_a_type_error_only(bad: object, message: str) -> None:
    # When a value that is not a time is parsed
    with pytest.raises(InvalidInputError) as info:
        parse_ts(bad)
    # Then the message ends with the value; only a wrong type adds why
    assert str(info.value) == (
        "ts: must be ISO-8601 (e.g. 2013-01-01T10:15:00Z) or epoch milliseconds, " + message
    )
