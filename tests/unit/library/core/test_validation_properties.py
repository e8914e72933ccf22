"""Property tests of key and item validation against DynamoDB's limits (hypothesis).

The limits (Developer Guide, "Quotas in Amazon DynamoDB" and "Data types"): partition
key 1..2,048 bytes and sort key 1..1,024 bytes of UTF-8, both counted with what dynashard
adds (the shard suffix ``#{shard}``, the timestamp and ``#``); item at most 400 KB
(409,600 bytes); numbers of magnitude 1E-130 .. 9.99..E+125 with 38 significant digits;
documents nested at most 32 levels. Every value the validators accept must be one
DynamoDB (and boto3's serializer) stores; every one they refuse must break a limit.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from boto3.dynamodb.types import TypeSerializer
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from dynashard.core.buckets import TimeBucket
from dynashard.core.keys import (
    MAX_ITEM_BYTES,
    MAX_PARTITION_KEY_BYTES,
    MAX_SHARD_COUNT,
    MAX_SORT_KEY_BYTES,
    TS_WIDTH,
    physical_key,
    sort_key,
    split_physical_key,
    utf8_len,
    validate_logical_key,
)
from dynashard.dynamodb.writer import build_item
from dynashard.errors import InvalidInputError, KeyLimitExceededError
from dynashard.model import (
    MAX_NESTING_LEVELS,
    Event,
    dynamodb_number,
    nesting_depth,
    to_dynamodb_document,
)

TS = datetime(2013, 1, 1, 10, 15, tzinfo=UTC)
#: Text with multi-byte characters, '#' and the separator's neighbours.
TEXT = st.text(
    alphabet=st.one_of(
        st.sampled_from("#ab0:~é€😀\x00 "), st.characters(blacklist_categories=("Cs",))
    ),
    max_size=40,
)
SERIALIZER = TypeSerializer()


def _long(unit: str, size_bytes: int) -> str:
    """A string of ``unit`` repeated to about ``size_bytes`` bytes of UTF-8."""
    return unit * (size_bytes // utf8_len(unit))


# --- partition key: the shard suffix counts --------------------------------------------------
@given(unit=st.sampled_from(["K", "é", "€", "😀", "#"]), size=st.integers(2000, 2100))
def test_a_logical_key_is_accepted_iff_its_largest_physical_key_fits(unit: str, size: int) -> None:
    logical = _long(unit, size)
    largest = physical_key(logical, MAX_SHARD_COUNT - 1)
    try:
        validate_logical_key(logical)
    except KeyLimitExceededError as exc:
        assert utf8_len(largest) > MAX_PARTITION_KEY_BYTES
        assert exc.field == "key" and "2048" in exc.message
    else:
        assert all(
            utf8_len(physical_key(logical, s)) <= MAX_PARTITION_KEY_BYTES
            for s in (0, 9, 99, MAX_SHARD_COUNT - 1)
        )


@given(logical=TEXT.filter(bool), shard=st.integers(0, MAX_SHARD_COUNT - 1))
def test_a_physical_key_splits_back_whatever_the_logical_key_holds(
    logical: str, shard: int
) -> None:
    # '#' in the logical key, digits after it, unicode: the shard is the last suffix
    assert split_physical_key(physical_key(logical, shard)) == (logical, shard)


def test_an_empty_key_or_id_is_refused_naming_it() -> None:
    with pytest.raises(ValidationError, match="key"):
        Event(key="", id="e", ts=TS)
    with pytest.raises(ValidationError, match="id"):
        Event(key="K", id="", ts=TS)


# --- sort key: the timestamp and '#' count ---------------------------------------------------
@given(unit=st.sampled_from(["i", "ß", "€", "😀", "#"]), size=st.integers(980, 1010))
def test_an_event_id_is_accepted_iff_its_sort_key_fits(unit: str, size: int) -> None:
    event_id = _long(unit, size)
    fits = TS_WIDTH + 1 + utf8_len(event_id) <= MAX_SORT_KEY_BYTES
    try:
        sk = sort_key(TS, event_id)
    except KeyLimitExceededError as exc:
        assert not fits and exc.field == "id" and "1024" in exc.message
    else:
        assert fits and utf8_len(sk) <= MAX_SORT_KEY_BYTES
        assert sk.startswith("2013-01-01T10:15:00.000000Z#")


@given(event_id=TEXT.filter(bool), key=TEXT.filter(bool))
def test_any_short_unicode_key_and_id_make_an_item_dynamodb_can_serialize(
    event_id: str, key: str
) -> None:
    event = Event(key=key, id=event_id, ts=TS, data={"k": key})
    item, size = build_item(event, 7, TimeBucket.DAY)
    assert item["PK"] == {"S": f"{key}#7"}
    assert size <= MAX_ITEM_BYTES


# --- the 400 KB item --------------------------------------------------------------------------
@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=40)
@given(unit=st.sampled_from(["x", "é", "😀"]), slack=st.integers(-40, 40))
def test_an_item_is_accepted_iff_it_is_within_400_kb(unit: str, slack: int) -> None:
    # Given data that brings the item to within a few bytes of 409,600
    probe = Event(key="K", id="e", ts=TS, data={"blob": ""})
    overhead = build_item(probe, 0, TimeBucket.DAY)[1]
    blob = unit * ((MAX_ITEM_BYTES - overhead + slack) // utf8_len(unit))
    event = Event(key="K", id="e", ts=TS, data={"blob": blob})
    expected = overhead + utf8_len(blob)
    # Then the writer accepts it exactly when DynamoDB's limit allows
    try:
        _, size = build_item(event, 0, TimeBucket.DAY)
    except KeyLimitExceededError as exc:
        assert expected > MAX_ITEM_BYTES
        assert exc.field == "data" and "400 KB" in exc.message
    else:
        assert size == expected <= MAX_ITEM_BYTES


# --- numbers ------------------------------------------------------------------------------------
def _storable(value: Decimal) -> bool:
    digits = len(value.normalize().as_tuple().digits)
    return value == 0 or (
        Decimal("1E-130") <= abs(value) <= Decimal("9.9999999999999999999999999999999999999E+125")
        and digits <= 38
    )


@given(
    st.one_of(
        st.integers(min_value=-(10**45), max_value=10**45),
        st.floats(allow_nan=False, allow_infinity=False),
        st.decimals(allow_nan=False, allow_infinity=False, places=None).filter(
            lambda d: d.is_finite() and abs(d.adjusted()) < 400
        ),
    )
)
def test_a_number_is_accepted_iff_dynamodb_and_boto3_can_store_it(value: Any) -> None:
    number = Decimal(str(value)) if isinstance(value, float) else Decimal(value)
    try:
        stored = dynamodb_number(value, "data.n")
    except ValueError as exc:
        assert "data.n" in str(exc)
        # refused: outside the range, or more digits than boto3 keeps exactly
        assert not _storable(number) or len(number.as_tuple().digits) > 38
    else:
        assert _storable(number)
        SERIALIZER.serialize(stored)  # boto3 neither rounds nor underflows it


# --- nesting --------------------------------------------------------------------------------
def _documents() -> st.SearchStrategy[Any]:
    leaves = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=3))
    return st.recursive(
        leaves,
        lambda inner: st.one_of(
            st.lists(inner, max_size=2),
            st.dictionaries(st.text(min_size=1, max_size=2), inner, max_size=2),
        ),
        max_leaves=60,
    )


@given(depth=st.integers(1, 80), document=_documents())
def test_a_document_is_accepted_iff_it_nests_within_32_levels(depth: int, document: Any) -> None:
    data: Any = document
    for _ in range(depth):
        data = {"a": data}
    levels = nesting_depth(data)
    assume(levels >= 1)
    try:
        converted = to_dynamodb_document(data, "data")
    except ValueError as exc:
        assert levels >= MAX_NESTING_LEVELS and "32 levels" in str(exc)
    else:
        assert levels < MAX_NESTING_LEVELS
        SERIALIZER.serialize(converted)


def test_a_payload_nested_thousands_deep_is_refused_without_recursion() -> None:
    data: Any = 1
    for _ in range(50_000):
        data = [data]
    with pytest.raises(ValueError, match="32 levels"):
        to_dynamodb_document({"x": data}, "data")


def test_invalid_input_errors_name_a_field() -> None:
    with pytest.raises(InvalidInputError) as info:
        validate_logical_key("")
    assert info.value.field == "key"


@pytest.mark.parametrize("text", ["0001-01-01T00:04:00+01:00", "9999-12-31T23:59:00-01:00"])
def test_a_time_that_leaves_years_1_to_9999_in_utc_is_refused_naming_ts(text: str) -> None:
    # found by the API fuzzer: OverflowError out of the handler (a 502)
    from dynashard.core.keys import parse_ts

    with pytest.raises(InvalidInputError) as info:
        parse_ts(text)
    assert info.value.field == "ts"
    with pytest.raises(ValidationError, match="ts"):
        Event(key="K", id="e", ts=text)
