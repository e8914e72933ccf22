"""The writer's item building: the fast serializer and sizing equal boto3's and capacity's.

``serialize_value`` takes JSON's types by their exact type and hands everything else to
boto3's ``TypeSerializer``; ``build_item`` sums an item's size from its parts instead of
walking a second copy. Both are pinned here against the reference they replace, on
generated values (hypothesis) and on the edges (ints past 38 digits, sets, bytes,
subclasses, non-ASCII keys).
"""

from __future__ import annotations

from collections import OrderedDict
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from boto3.dynamodb.types import Binary, TypeSerializer
from hypothesis import given, settings
from hypothesis import strategies as st

from dynashard import names
from dynashard.capacity import item_size, write_units
from dynashard.errors import KeyLimitExceededError
from dynashard.keys import format_ts, gsi1_partition_key, physical_key
from dynashard.model import Event
from dynashard.strategies import TimeBucket
from dynashard.writer import build_item, event_write_units, serialize_value

_boto3 = TypeSerializer()

_scalars = st.one_of(
    st.text(max_size=20),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.decimals(allow_nan=False, allow_infinity=False, places=3, min_value=-1e6, max_value=1e6),
    st.booleans(),
    st.none(),
)
_json = st.recursive(
    _scalars,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text(min_size=1, max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


def _reference(value: Any) -> Any:
    """boto3's result, or the type of its error."""
    try:
        return _boto3.serialize(value)
    except Exception as exc:  # the error type is the expectation
        return type(exc)


def _ours(value: Any) -> Any:
    try:
        return serialize_value(value)
    except Exception as exc:
        return type(exc)


@settings(max_examples=300, deadline=None)
@given(_json)
def test_serialize_value_equals_boto3_on_json_values(value: Any) -> None:
    # Given any JSON-like value (ints past 38 digits included)
    # When it is serialized by the writer's fast path
    # Then the attribute value, or the error, is boto3's
    assert _ours(value) == _reference(value)


@pytest.mark.parametrize(
    "value",
    [
        10**38 - 1,
        -(10**38) + 1,
        10**38,
        10**40,
        Decimal("1.50"),
        Decimal("NaN"),
        1.5,
        {"a", "b"},
        {1, 2},
        b"\x00\x01",
        Binary(b"xy"),
        OrderedDict(a=1),
        (1, 2),
        True,
        {"nested": [{"deep": [None, False, "x"]}]},
    ],
)
def test_serialize_value_equals_boto3_on_edges(value: Any) -> None:
    # Given a value off the fast path (or right at its bounds)
    # Then the result or the error is boto3's own
    assert _ours(value) == _reference(value)


def _plain_item(event: Event, shard: int, bucket: TimeBucket) -> dict[str, Any]:
    """The item as the writer built it before (Python values), for the reference size."""
    return {
        names.ATTR_PK: physical_key(event.key, shard),
        names.ATTR_SK: event.sort_key,
        names.ATTR_GSI1PK: gsi1_partition_key(event.key, event.ts, bucket, shard),
        names.ATTR_GSI1SK: event.sort_key,
        names.ATTR_KEY: event.key,
        names.ATTR_ID: event.id,
        names.ATTR_TS: format_ts(event.ts),
        names.ATTR_SHARD: shard,
        names.ATTR_DATA: event.data,
    }


_stored_scalars = st.one_of(
    st.text(max_size=20),
    st.integers(min_value=-(10**37), max_value=10**37),
    st.decimals(allow_nan=False, allow_infinity=False, places=3, min_value=-1e6, max_value=1e6),
    st.booleans(),
    st.none(),
)
_events = st.builds(
    Event,
    key=st.text(min_size=1, max_size=12).filter(lambda k: k.strip() == k and k[-1] != "#"),
    id=st.text(min_size=1, max_size=12),
    ts=st.datetimes(
        min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(UTC)
    ),
    data=st.dictionaries(
        st.text(min_size=1, max_size=8),
        st.recursive(
            _stored_scalars,
            lambda children: (
                st.lists(children, max_size=4)
                | st.dictionaries(st.text(min_size=1, max_size=8), children, max_size=4)
            ),
            max_leaves=20,
        ),
        max_size=5,
    ),
)


@settings(max_examples=200, deadline=None)
@given(_events, st.integers(min_value=0, max_value=999), st.sampled_from(list(TimeBucket)))
def test_build_item_equals_boto3_and_item_size(
    event: Event, shard: int, bucket: TimeBucket
) -> None:
    # Given any event (non-ASCII keys and ids, nested data), shard and bucket
    plain = _plain_item(event, shard, bucket)
    reference = {name: _boto3.serialize(v) for name, v in plain.items()}
    # When the writer builds the item
    item, size = build_item(event, shard, bucket)
    # Then the item is boto3's serialization of the same attributes, its size theirs,
    assert item == reference
    assert size == item_size(plain)
    # and the units logged before the write are those of the item on shard 0
    assert event_write_units(event, bucket) == write_units(item_size(_plain_item(event, 0, bucket)))


def test_build_item_refuses_an_item_over_400_kb_naming_data() -> None:
    # Given an event whose payload alone is 400 KB
    event = Event(key="K", id="e1", ts=0, data={"blob": "x" * 409_600})
    # Then the item is refused before any request, naming the field
    with pytest.raises(KeyLimitExceededError, match="over DynamoDB's limit of 409600") as err:
        build_item(event, 0, TimeBucket.DAY)
    assert err.value.field == "data"
    with pytest.raises(KeyLimitExceededError):
        event_write_units(event)


def test_build_item_takes_the_callers_bucket_label() -> None:
    # Given an event and its day label computed by the caller
    event = Event(key="DEPARTURES#JFK", id="f1", ts="2013-01-01T10:15:00Z", data={})
    # Then the GSI1 key is built from it, as from the bucket
    item, _ = build_item(event, 3, TimeBucket.DAY, label="2013-01-01")
    assert item[names.ATTR_GSI1PK] == {"S": "DEPARTURES#JFK#2013-01-01#3"}
    assert item == build_item(event, 3, TimeBucket.DAY)[0]
