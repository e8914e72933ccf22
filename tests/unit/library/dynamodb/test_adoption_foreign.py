"""Adopted keys holding another program's items: every read sees exactly them (issue 38).

Each test reproduces one of issue 38's adoption defects on moto: a targeted read that
missed the foreign items (1), a bucketed family adopted and never read under its bare
key (2), foreign items with an attribute named like the schema's ``key`` (4), and sort
keys outside the codec's range written after adoption (5).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws

from dynashard import Dynashard, DynashardConfig, Event, TimeBucket
from dynashard.core.families import BucketFamily
from dynashard.core.schema import EPOCH_MS_NUMBER, ISO_MS_THEN_ID, Payload, TableSchema
from dynashard.dynamodb.writer import build_item
from dynashard.errors import InvalidInputError, TableSchemaError
from infra.table_specs import ALL_TABLES, DATA_TABLE, METADATA_TABLE, create_table_request

TABLE = DATA_TABLE.default_name
T0 = datetime(2013, 1, 1, 10, 0, tzinfo=UTC)
DEVICES = "devices"
#: Another program's device table: ``device`` / ``at`` (epoch milliseconds), flat.
EPOCH_FLAT = TableSchema(
    partition_key="device",
    sort_key="at",
    sort_key_codec=EPOCH_MS_NUMBER,
    gsi_name=None,
    payload=Payload.FLAT,
)


@pytest.fixture
def client(atomic_calls: Callable[[Any], Any]) -> Iterator[Any]:
    with mock_aws():
        ddb = atomic_calls(boto3.client("dynamodb", region_name="us-east-1"))
        for spec in ALL_TABLES:
            ddb.create_table(**create_table_request(spec))
        ddb.create_table(
            TableName=DEVICES,
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
        yield ddb


def make(client: Any, schema: TableSchema | None = None, **overrides: Any) -> Dynashard:
    table = TABLE if schema is None else DEVICES
    extra = {} if schema is None else {"schema": schema}
    config = DynashardConfig(
        table, METADATA_TABLE.default_name, max_workers=4, **extra, **overrides
    )
    return Dynashard(config, client=client)


def read_all(ds: Dynashard, key: str, limit: int = 100, **options: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    cursor = None
    for _ in range(1000):
        page = ds.query_events(key, limit=limit, cursor=cursor, **options)
        items.extend(page.items)
        cursor = page.cursor
        if cursor is None:
            return items
    raise AssertionError("paging did not end")


def put(client: Any, item: dict[str, Any], table: str = TABLE) -> None:
    client.put_item(TableName=table, Item=item)


def foreign(pk: str, sk: str, /, **attrs: Any) -> dict[str, Any]:
    """Another program's item under the bare key ``pk``: its own attributes."""
    return {"PK": {"S": pk}, "SK": {"S": sk}, **attrs}


# --- 1: a targeted read of an adopted key --------------------------------------------


@pytest.mark.parametrize("limit", [1, 100])
def test_a_targeted_read_of_an_adopted_calculated_key_returns_the_old_programs_items(
    client: Any, limit: int
) -> None:
    # Given the old program's items under the bare key, their carrier at the top level
    # (one a number, one holding a map named like dynashard's nested payload)
    ds = make(client)
    put(client, foreign("C", "2013-01-01T09:00:00.000000Z#old-ua", carrier={"S": "UA"}))
    put(client, foreign("C", "2013-01-01T09:00:01.000000Z#old-aa", carrier={"S": "AA"}))
    put(client, foreign("C", "2013-01-01T09:00:02.000000Z#old-7", carrier={"N": "7"}))
    put(
        client,
        foreign("C", "2013-01-01T09:00:03.000000Z#old-map", data={"M": {"carrier": {"S": "UA"}}}),
    )
    # When the key is adopted as a calculated key and dynashard writes its own events
    ds.set_strategy("C", "calculated", attribute="carrier", initial_shards=3)
    ds.adopt("C")
    events = [
        Event(key="C", id=f"new-{c}", ts=T0 + timedelta(seconds=i), data={"carrier": c})
        for i, c in enumerate(("UA", "AA", "UA"))
    ]
    assert all(o.ok for o in ds.put_events(events))
    every = read_all(ds, "C")
    # Then each targeted read is exactly the plain read filtered by the attribute
    for value, expected_ids in (
        ("UA", ["old-ua", "new-UA", "new-UA"]),
        ("AA", ["old-aa", "new-AA"]),
        (7, ["old-7"]),
        ("7", ["old-7"]),
    ):
        text = str(value)
        plain = [i for i in every if str(i["data"].get("carrier")) == text]
        got = read_all(ds, "C", limit, attribute_value=value)
        assert got == plain
        assert [i["id"] for i in got] == expected_ids
    ds.close()


# --- 2: adopting a bucketed family key ------------------------------------------------


def test_adopting_a_bucketed_family_key_is_refused_naming_why(client: Any) -> None:
    family = (BucketFamily("OPS", TimeBucket.DAY),)
    ds = make(client, bucketed_keys=family)
    put(client, foreign("OPS", "2013-01-01T09:00:00.000000Z#old", agent={"S": "x"}))
    with pytest.raises(InvalidInputError) as refused:
        ds.adopt("OPS")
    assert refused.value.field == "key"
    assert "bucket" in refused.value.message
    assert not ds.shard_info("OPS").adopted
    ds.close()


def test_a_family_configured_on_an_adopted_key_refuses_its_reads_and_writes(client: Any) -> None:
    # Given a key adopted by a facade that has no family of that name
    put(client, foreign("OPS", "2013-01-01T09:00:00.000000Z#old", agent={"S": "x"}))
    plain = make(client)
    plain.adopt("OPS")
    assert [i["id"] for i in read_all(plain, "OPS")] == ["old"]
    plain.close()
    # When a facade configures a time-bucketed family of that key
    ds = make(client, bucketed_keys=(BucketFamily("OPS", TimeBucket.DAY),))
    # Then a read of the family fails naming why (its reads never read the bare key)
    with pytest.raises(InvalidInputError) as refused:
        ds.query_events("OPS", start=T0 - timedelta(days=1), end=T0 + timedelta(days=1))
    assert refused.value.field == "bucketed_keys"
    assert "adopted" in refused.value.message
    # And so is a write of it, permanently, naming the field
    (outcome,) = ds.put_events([Event(key="OPS", id="e1", ts=T0)])
    assert not outcome.ok and outcome.permanent and outcome.field == "bucketed_keys"
    ds.close()


# --- 4: foreign items with an attribute named like the schema's key ------------------


def test_foreign_items_with_a_key_attribute_are_read_in_their_own_shape(client: Any) -> None:
    # Given the old program's items under the bare key, each with an attribute "key":
    # another value, another type, the logical key itself without dynashard's id and ts,
    # and the logical key with an id and ts whose sort key is not theirs
    ds = make(client)
    items = [
        foreign("K", "2013-01-01T09:00:00.000000Z#other", key={"S": "SOMEWHERE"}),
        foreign("K", "2013-01-01T09:00:01.000000Z#number", key={"N": "5"}),
        foreign("K", "2013-01-01T09:00:02.000000Z#same", key={"S": "K"}),
        foreign(
            "K",
            "2013-01-01T09:00:03.000000Z#shaped",
            key={"S": "K"},
            id={"S": "x"},
            ts={"S": "2013-01-01T09:00:09.000000Z"},
        ),
    ]
    for item in items:
        put(client, item)
    legacy, _ = build_item(Event(key="K", id="mine", ts=T0), 0, TimeBucket.DAY)
    legacy["PK"] = {"S": "K"}
    put(client, legacy)
    # When the key is surveyed and adopted
    survey = ds.survey_bare_key("K")
    assert (survey.dynashard_items, survey.foreign_items, survey.unreadable_items) == (1, 4, 0)
    assert survey.key_attribute_items == 4
    ds.adopt("K", survey=survey)
    # Then every read returns each of them once, in its own shape (never skipped, never
    # a KeyError), and dynashard's own legacy item as dynashard's
    expected = [
        ("other", {"key": "SOMEWHERE"}),
        ("number", {"key": 5}),
        ("same", {"key": "K"}),
        ("shaped", {"key": "K", "id": "x", "ts": "2013-01-01T09:00:09.000000Z"}),
        ("mine", {}),
    ]
    for limit in (1, 100):
        got = read_all(ds, "K", limit)
        assert [(i["id"], i["data"]) for i in got] == expected
        assert {i["key"] for i in got} == {"K"}
    ds.close()


def test_a_foreign_item_with_the_keys_name_and_an_unreadable_sort_key_fails_the_read(
    client: Any,
) -> None:
    ds = make(client)
    ds.adopt("K")
    put(client, foreign("K", "2013-01-01T09:00:00Z#bad", key={"S": "K"}))  # seconds only
    with pytest.raises(TableSchemaError, match=r"2013-01-01T09:00:00Z#bad"):
        read_all(ds, "K")
    assert ds.survey_bare_key("K").unreadable_items == 1
    ds.close()


# --- 5: sort keys outside the codec's range, written after adoption ------------------


@pytest.mark.parametrize("sk", ["ALERT#2013-01-01T09:00:00Z", "#meta", "~"])
def test_an_iso_sort_key_outside_the_codecs_range_fails_a_full_read(client: Any, sk: str) -> None:
    # Given an adopted key, its events, and the old writer's item outside the ISO range
    ds = make(client)
    ds.adopt("K")
    assert ds.put_events([Event(key="K", id="e1", ts=T0)])[0].ok
    put(client, foreign("K", sk, level={"S": "high"}))
    # Then a full read fails naming the item's sort key, in either order, any page size
    for descending in (False, True):
        for limit in (1, 100):
            with pytest.raises(TableSchemaError, match=sk):
                read_all(ds, "K", limit, descending=descending)
    # And so does a read with one side of the window open on its side
    side = {"end": T0 + timedelta(days=1)} if sk == "#meta" else {"start": T0}
    with pytest.raises(TableSchemaError, match=sk):
        read_all(ds, "K", **side)
    # A closed window holds no time the item could have: it reads the window's events
    window = {"start": T0, "end": T0 + timedelta(seconds=1)}
    assert [i["id"] for i in read_all(ds, "K", **window)] == ["e1"]
    ds.close()


def test_an_iso_ms_sort_key_outside_the_range_fails_a_full_read(client: Any) -> None:
    schema = TableSchema(sort_key_codec=ISO_MS_THEN_ID, gsi_name=None)
    config = DynashardConfig(TABLE, METADATA_TABLE.default_name, max_workers=4, schema=schema)
    ds = Dynashard(config, client=client)
    ds.adopt("OPS_LOG")
    put(client, foreign("OPS_LOG", "2026-06-22T01:00:00.123Z#agent", latencyMs={"N": "3"}))
    put(client, foreign("OPS_LOG", "ALERT#2026-06-22T01:00:00.124Z", level={"S": "high"}))
    with pytest.raises(TableSchemaError, match="ALERT#"):
        read_all(ds, "OPS_LOG")
    ds.close()


def test_epoch_microseconds_under_epoch_ms_number_fail_a_full_read(client: Any) -> None:
    # Given an adopted device key, a reading in milliseconds and one in microseconds
    ds = make(client, schema=EPOCH_FLAT, default_shards=2)
    ds.adopt("DEV")
    put(client, {"device": {"S": "DEV"}, "at": {"N": "1357034400000"}, "t": {"N": "1"}}, DEVICES)
    put(client, {"device": {"S": "DEV"}, "at": {"N": "1357034400000000"}}, DEVICES)
    # Then a full read fails naming the microseconds, in either order
    for descending in (False, True):
        with pytest.raises(TableSchemaError, match="1357034400000000"):
            read_all(ds, "DEV", 1, descending=descending)
    # And a window of 2013 reads the reading in it
    window = {"start": T0, "end": T0 + timedelta(days=1)}
    assert [i["id"] for i in read_all(ds, "DEV", **window)] == ["1357034400000"]
    ds.close()


def test_a_bare_key_that_is_another_keys_shard_counts_that_keys_items_apart(client: Any) -> None:
    # Given K's event on K's shard 7 (the bare key "K#7") and another program's item there
    ds = make(client)
    item, _ = build_item(Event(key="K", id="k-event", ts=T0), 7, TimeBucket.DAY)
    assert item["PK"] == {"S": "K#7"}
    put(client, item)
    put(client, foreign("K#7", "2013-01-01T09:00:00.000000Z#theirs", key={"S": "K"}))
    # When the bare key K#7 is surveyed
    survey = ds.survey_bare_key("K#7")
    # Then K's item is K's (shard_items), not a foreign item of K#7; the other program's
    # item, not in dynashard's full shape, is foreign with a key attribute
    assert (survey.shard_items, survey.dynashard_items, survey.foreign_items) == (1, 0, 1)
    assert survey.key_attribute_items == 1
    assert survey.to_json()["shard_items"] == 1
