"""The read path's one-pass AttributeValue decoder against boto3's TypeDeserializer."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from boto3.dynamodb.types import Binary, TypeDeserializer, TypeSerializer
from hypothesis import given, settings
from hypothesis import strategies as st

from dynashard.dynamodb.reader import item_to_event
from dynashard.model import from_dynamodb_numbers, plain_value


def boto3_way(value: dict[str, Any]) -> Any:
    return from_dynamodb_numbers(TypeDeserializer().deserialize(value))


# Numbers as DynamoDB stores them: up to 38 significant digits, exponents -130..125.
numbers = st.decimals(allow_nan=False, allow_infinity=False, places=None).filter(
    lambda d: d == 0 or (len(d.as_tuple().digits) <= 38 and -130 <= d.adjusted() <= 125)
)
number_texts = st.one_of(
    numbers.map(str),
    st.integers(-(10**37), 10**37).map(str),
    st.sampled_from(["0", "-0", "1E+2", "2.50", "1.0", "-3.000", "1E-130", "9.9E+125"]),
)
scalars = st.one_of(
    st.text(max_size=8).map(lambda s: {"S": s}),
    number_texts.map(lambda n: {"N": n}),
    st.booleans().map(lambda b: {"BOOL": b}),
    st.just({"NULL": True}),
    st.sets(st.text(min_size=1, max_size=5), min_size=1, max_size=4).map(lambda s: {"SS": list(s)}),
    st.sets(st.integers(-1000, 1000), min_size=1, max_size=4).map(
        lambda s: {"NS": [str(n) for n in s]}
    ),
)
attribute_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4).map(lambda items: {"L": items}),
        st.dictionaries(st.text(min_size=1, max_size=6), inner, max_size=4).map(lambda m: {"M": m}),
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(attribute_values)
def test_plain_value_equals_typedeserializer_then_from_dynamodb_numbers(value: Any) -> None:
    got, want = plain_value(value), boto3_way(value)
    assert got == want
    # int stays int and Decimal stays Decimal, every digit kept (issue 38)
    assert repr(got) == repr(want)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("7", 7),
        ("-12", -12),
        ("2.50", Decimal("2.50")),
        ("1E+2", 100),
        ("-0", 0),
        ("1E-130", Decimal("1E-130")),
        ("12345678901234567.89", Decimal("12345678901234567.89")),
    ],
)
def test_numbers_become_int_when_integral_else_an_exact_decimal(text: str, expected: Any) -> None:
    got = plain_value({"N": text})
    assert got == expected and type(got) is type(expected)


def test_binary_values_are_decoded_as_boto3_does() -> None:
    assert plain_value({"B": b"\x00\x01"}) == Binary(b"\x00\x01")
    # Binary values do not sort: boto3's path fails on a set of two; plain_value sorts
    # them by their bytes, from either form, so another program's item reads back
    with pytest.raises(TypeError):
        boto3_way({"BS": [b"b", b"a"]})
    want = [Binary(b"a"), Binary(b"b")]
    assert plain_value({"BS": [b"b", b"a"]}) == want
    assert plain_value({"BS": ["Yg==", "YQ=="]}) == want


def test_an_unknown_type_descriptor_is_refused() -> None:
    with pytest.raises(TypeError):
        plain_value({"X": "1"})


def test_item_to_event_decodes_only_the_event_attributes() -> None:
    data = {"delay": Decimal("2.5"), "seats": 180, "tags": ["a", None, True]}
    item = {
        "key": {"S": "K#3"},
        "id": {"S": "e1"},
        "ts": {"S": "2013-01-01T05:15:00Z"},
        "data": TypeSerializer().serialize(data),
        "sk": {"S": "2013-01-01T05:15:00Z#e1"},
        "unknown": {"X": "not decoded"},
    }
    assert item_to_event(item) == {
        "key": "K#3",
        "id": "e1",
        "ts": "2013-01-01T05:15:00Z",
        "data": {"delay": 2.5, "seats": 180, "tags": ["a", None, True]},
    }
    del item["data"]
    assert item_to_event(item)["data"] == {}
    with pytest.raises(KeyError):
        item_to_event({"key": {"S": "K"}, "ts": {"S": "t"}})


def test_an_item_of_another_program_that_cannot_be_read_is_named_once() -> None:
    from dynashard.core.schema import ISO_MS_THEN_ID, TableSchema
    from dynashard.errors import TableSchemaError

    # An item without dynashard's key attribute (another program's, under an adopted key),
    # whose sort key is not in the codec's form: the read fails naming it and why
    ops = TableSchema(sort_key_codec=ISO_MS_THEN_ID, gsi_name=None)
    item = {"PK": {"S": "OPS_LOG"}, "SK": {"S": "ALERT#geo"}, "agent": {"S": "scan"}}
    with pytest.raises(TableSchemaError) as raised:
        item_to_event(item, ops)
    assert (
        "the item PK='OPS_LOG' SK='ALERT#geo' under an adopted key's bare partition key "
        "cannot be read as an event: sort_key: 'ALERT#geo' is not in the form of codec "
        "iso_ms_then_id"
    ) in str(raised.value)
