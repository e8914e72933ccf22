"""Charging rules, with the figures of the DynamoDB Developer Guide."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dynashard.core.capacity import (
    batch_read_units,
    number_size,
    query_read_units,
    read_units,
    write_units,
)
from dynashard.core.capacity import wire_attribute_value_size as attribute_value_size
from dynashard.core.capacity import wire_item_size as item_size


def test_string_is_utf8_length_and_name_counts() -> None:
    # Given an item with a string attribute ("Item sizes and formats": UTF-8 bytes)
    item = {"PK": {"S": "héllo"}}
    # Then its size is the name (2) plus the UTF-8 length of the value (6)
    assert item_size(item) == 2 + 6


@pytest.mark.parametrize(
    ("text", "size"),
    [("0", 2), ("1", 2), ("12", 2), ("123", 3), ("1234.5", 4), ("000120", 2), ("-1e10", 2)],
)
def test_number_is_one_byte_per_two_significant_digits_plus_one(text: str, size: int) -> None:
    assert number_size(text) == size


def test_binary_counts_decoded_bytes_and_containers_have_overhead() -> None:
    raw = base64.b64encode(b"\x00" * 10).decode()
    assert attribute_value_size({"B": raw}) == 10
    assert attribute_value_size({"BOOL": True}) == 1
    assert attribute_value_size({"NULL": True}) == 1
    assert attribute_value_size({"SS": ["ab", "c"]}) == 3
    # list: 3 bytes + 1 per element + contents
    assert attribute_value_size({"L": [{"S": "ab"}, {"N": "1"}]}) == 3 + (1 + 2) + (1 + 2)
    # map: 3 bytes + per entry 1 + name + value
    assert attribute_value_size({"M": {"k": {"S": "v"}}}) == 3 + 1 + 1 + 1


@pytest.mark.parametrize(
    ("size", "wcu"), [(0, 1), (1, 1), (1024, 1), (1025, 2), (1536, 2), (400 * 1024, 400)]
)
def test_write_units_round_up_per_kilobyte(size: int, wcu: float) -> None:
    # "1 WCU = one write per second of an item up to 1 KB"; a 1.5 KB item costs 2 WCU
    assert write_units(size) == wcu


def test_transactional_write_costs_double() -> None:
    assert write_units(1536, transactional=True) == 4


def test_read_units_sc_ec_and_transactional() -> None:
    # A 4.5 KB strongly consistent read rounds up to 8 KB: 2 RCU; EC is half: 1 RCU
    size = 4608
    assert read_units(size, consistent=True) == 2
    assert read_units(size, consistent=False) == 1
    assert read_units(size, consistent=True, transactional=True) == 4
    # 3,500 bytes costs the same as 4 KB
    assert read_units(3500, consistent=True) == 1
    # a missing item still costs the minimum
    assert read_units(0, consistent=False) == 0.5


def test_query_rounds_the_sum_once_but_batch_get_rounds_each_item() -> None:
    # FACTS / pricing page: 1.5 KB + 6.5 KB in BatchGetItem is billed as 4 KB + 8 KB
    sizes = [1536, 6656]
    assert batch_read_units(sizes, consistent=True) == 3
    # Query: the sum (8 KB) rounded up once
    assert query_read_units(sum(sizes), consistent=True) == 2
    assert query_read_units(sum(sizes), consistent=False) == 1
    assert query_read_units(0, consistent=False) == 0.5


def test_twenty_kilobyte_item_costs_five_rcu_per_sc_read() -> None:
    # bp-partition-key-design: "a 20 KB item costs 5 RCU per strongly consistent read"
    assert read_units(20 * 1024, consistent=True) == 5


def test_the_emulator_charges_by_the_library_rules() -> None:
    # One implementation: the emulator's modules use dynashard.core.capacity's functions.
    import dynashard.core.capacity as capacity
    from sandbox.emulator import core, operations

    assert operations.write_units is capacity.write_units
    assert operations.item_size is capacity.wire_item_size
    assert core.query_read_units is capacity.query_read_units
    assert core.read_units is capacity.read_units


def test_python_and_wire_spellings_of_an_item_have_the_same_size() -> None:
    from decimal import Decimal

    from boto3.dynamodb.types import TypeSerializer

    from dynashard.core.capacity import item_size as python_item_size

    item = {
        "PK": "DEPARTURES#JFK#3",
        "n": Decimal("1200.50"),
        "big": 10**20,
        "flag": True,
        "none": None,
        "data": {"carrier": "UA", "delays": [1, 2, 30]},
        "tags": {"a", "bc"},
    }
    wire = {k: TypeSerializer().serialize(v) for k, v in item.items()}
    assert python_item_size(item) == item_size(wire)


_JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**38) + 1, max_value=10**38 - 1)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(value=_JSON_VALUES)
def test_python_sizes_of_json_values_are_their_wire_sizes(value: object) -> None:
    # Given a value as an event's data holds it (the sizing's fast path: exact str, int,
    # dict), non-ASCII text, signs and trailing zeros included
    from boto3.dynamodb.types import TypeSerializer

    from dynashard.core.capacity import attribute_value_size as python_size

    # Then its size is that of its DynamoDB JSON, as DynamoDB counts it
    assert python_size(value) == attribute_value_size(TypeSerializer().serialize(value))


def test_lambda_code_paths_do_not_import_the_cli_dependencies() -> None:
    import subprocess
    import sys

    code = (
        "import sys; import functions.ingest.app, functions.query.app, functions.scaler.app; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('typer', 'rich', 'click', 'matplotlib') or m.startswith('dynashard.cli')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    # (the functions build at import: without their environment they log that first)
    assert out.strip().splitlines()[-1] == "[]"
