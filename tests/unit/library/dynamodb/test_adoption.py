"""Adoption without migration: items under a key's bare partition key (written before
the application used dynashard) stay there, and every read includes them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from dynashard import Dynashard, Event, counter_key
from dynashard.core.buckets import TimeBucket
from dynashard.core.keys import split_physical_key
from dynashard.dynamodb.counters import COUNTER_SORT_KEY
from dynashard.dynamodb.metadata_store import DynamoDBMetadataStore
from dynashard.dynamodb.shard_metadata import ShardMetadata
from dynashard.dynamodb.writer import build_item
from dynashard.errors import InvalidInputError
from infra.table_specs import DATA_TABLE, METADATA_TABLE

T0 = datetime(2013, 1, 1, tzinfo=UTC)


def legacy_events(n: int, key: str = "K") -> list[Event]:
    return [Event(key=key, id=f"old{i:04d}", ts=T0 + timedelta(seconds=7 * i)) for i in range(n)]


def write_bare(client: Any, events: list[Event]) -> None:
    """Write items as an application did before dynashard: PK = the logical key."""
    for event in events:
        item, _ = build_item(event, 0, TimeBucket.DAY)
        item["PK"] = {"S": event.key}
        client.put_item(TableName=DATA_TABLE.default_name, Item=item)


def read_ids(ds: Dynashard, key: str = "K", **kw: Any) -> list[str]:
    ids: list[str] = []
    cursor = None
    while True:
        page = ds.query_events(key, cursor=cursor, **kw)
        ids.extend(i["id"] for i in page.items)
        cursor = page.cursor
        if cursor is None:
            return ids


def sorted_ids(events: list[Event], descending: bool = False) -> list[str]:
    return [e.id for e in sorted(events, key=lambda e: e.sort_key, reverse=descending)]


@pytest.mark.parametrize("descending", [False, True])
def test_adopted_key_reads_its_bare_items_with_the_sharded_ones(
    facade: Dynashard, ddb_client: Any, descending: bool
) -> None:
    # Given 120 items under the bare key, unknown to dynashard
    old = legacy_events(120)
    write_bare(ddb_client, old)
    assert read_ids(facade) == []
    # When the key is adopted, grows, and new events are written
    info = facade.adopt("K")
    assert (info.adopted, info.number_of_shards) == (True, 1)
    facade.set_shard_count("K", 4)
    new = [
        Event(key="K", id=f"new{i:04d}", ts=T0 + timedelta(seconds=7 * i + 3)) for i in range(80)
    ]
    outcomes = facade.put_events(new)
    # Then no write went to the bare key, and every read has both, in exact order
    assert {o.physical_key for o in outcomes} == {f"K#{s}" for s in range(4)}
    assert read_ids(facade, limit=13, descending=descending) == sorted_ids(old + new, descending)
    assert facade.shard_info("K").adopted


def test_keys_never_adopted_do_not_query_a_bare_key(facade: Dynashard, ddb_client: Any) -> None:
    write_bare(ddb_client, legacy_events(5, key="OTHER"))
    facade.set_shard_count("OTHER", 2)
    page = facade.query_events("OTHER")
    assert (page.items, page.shards_queried) == ([], 2)


def test_adoption_keeps_count_history_and_cooldown_clock(ddb_client: Any) -> None:
    store = DynamoDBMetadataStore(METADATA_TABLE.default_name, ddb_client)
    now = [1_357_000_000.0]
    meta = ShardMetadata(store, cooldown_s=60, clock=lambda: now[0])
    assert meta.grow("K", 3).changed
    before = meta.for_reader("K")
    now[0] += 5
    adopted = meta.adopt("K")
    assert adopted.adopted and not before.adopted
    assert (adopted.number_of_shards, adopted.last_updated, adopted.history) == (
        before.number_of_shards,
        before.last_updated,
        before.history,
    )
    assert meta.adopt("K") == adopted  # idempotent
    now[0] += 120
    assert meta.grow("K", 8).changed
    assert meta.for_reader("K").adopted  # a later change of N keeps the flag


def test_a_key_never_seen_is_created_adopted(ddb_client: Any) -> None:
    store = DynamoDBMetadataStore(METADATA_TABLE.default_name, ddb_client)
    info = ShardMetadata(store, default_shards=2).adopt("NEW")
    stored = store.get("NEW")
    assert stored is not None and stored.adopted and stored.number_of_shards == 2
    assert info == stored


def test_adopted_counter_adds_its_bare_item(facade: Dynashard, ddb_client: Any) -> None:
    logical = counter_key("UA")
    ddb_client.put_item(
        TableName=DATA_TABLE.default_name,
        Item={"PK": {"S": logical}, "SK": {"S": COUNTER_SORT_KEY}, "count": {"N": "1000"}},
    )
    facade.set_shard_count(logical, 3)
    for _ in range(6):
        facade.increment_counter("UA", 5)
    assert facade.get_counter("UA").value == 30
    facade.adopt(logical)
    assert facade.get_counter("UA").value == 1030


def test_a_bare_key_is_still_not_a_physical_key() -> None:
    # Contributor Insights may report an adopted key's bare key: it maps to no shard.
    with pytest.raises(InvalidInputError):
        split_physical_key("DEPARTURES#JFK")


def test_the_old_programs_write_to_an_adopted_bare_key_between_pages_is_read(
    facade: Dynashard, ddb_client: Any
) -> None:
    # Given an adopted key, its events on its shard, and a read whose first page found
    # the bare key empty (it ran out on page 1)
    facade.adopt("K")
    events = [Event(key="K", id=f"e{i}", ts=T0 + timedelta(seconds=2 * i)) for i in range(3)]
    assert all(o.ok for o in facade.put_events(events))
    page = facade.query_events("K", limit=1)
    assert [i["id"] for i in page.items] == ["e0"]
    # When the program that wrote the bare key before dynashard goes on writing it during
    # the cut-over, in its own shape, after the page's last event
    item = {
        "PK": {"S": "K"},
        "SK": {"S": "2013-01-01T00:00:01.000000Z#threat_detector"},
        "latencyMs": {"N": "340"},
    }
    ddb_client.put_item(TableName=DATA_TABLE.default_name, Item=item)
    # Then the read's next pages hold its item, in order, as they would a shard's
    ids = []
    while page.cursor is not None:
        page = facade.query_events("K", limit=1, cursor=page.cursor)
        ids.extend(i["id"] for i in page.items)
    assert ids == ["threat_detector", "e1", "e2"]
