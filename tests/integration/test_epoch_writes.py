"""A sort key without the event id (``epoch_ms_number``) on DynamoDB Local: no acknowledged
event is overwritten by another of the same key, shard and millisecond (invariant 1),
whichever batch or writer brings it, and a redelivery stays idempotent (invariant 2)."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from dynashard import Dynashard, DynashardConfig, Event
from dynashard.core.schema import EPOCH_MS_NUMBER, Payload, TableSchema
from dynashard.dynamodb.writer import WriteOutcome
from infra.table_specs import METADATA_TABLE
from sandbox.tables import create_tables, delete_tables, wait_active

pytestmark = pytest.mark.integration

#: A device-telemetry table as its owner made it: partition key ``device``, numeric sort
#: key ``at`` (epoch milliseconds, no id), no GSI, each reading's fields on the item.
SCHEMA = TableSchema(
    partition_key="device",
    sort_key="at",
    sort_key_codec=EPOCH_MS_NUMBER,
    gsi_name=None,
    id_attr="reading_id",
    payload=Payload.FLAT,
)
KEY = "DEVICE#7"
T0 = datetime(2013, 1, 1, 10, 0, 0, 250_000, tzinfo=UTC)


@pytest.fixture
def tables(dynamodb_local: Any) -> Iterator[tuple[str, str]]:
    client = dynamodb_local.client()
    suffix = f"-{uuid.uuid4().hex[:8]}"
    metadata = create_tables(client, suffix=suffix, specs=[METADATA_TABLE])
    data = f"devices{suffix}"
    client.create_table(
        TableName=data,
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
    wait_active(client, data)
    yield data, metadata[METADATA_TABLE.logical_id]
    delete_tables(client, [data, *metadata.values()])


def facade(dynamodb_local: Any, tables: tuple[str, str], shards: int) -> Dynashard:
    data, meta = tables
    config = DynashardConfig(
        data,
        meta,
        endpoint_url=dynamodb_local.endpoint_url,
        default_shards=shards,
        schema=SCHEMA,
        check_schema=True,
    )
    return Dynashard(config, client=dynamodb_local.client(max_pool_connections=16))


def reading(event_id: str, temp: int) -> Event:
    return Event(key=KEY, id=event_id, ts=T0, data={"temp": temp, "unit": "C"})


def stored(dynamodb_local: Any, table: str) -> dict[str, dict[str, Any]]:
    """Every item of the table by its event id."""
    items = dynamodb_local.client().scan(TableName=table, ConsistentRead=True)["Items"]
    return {item["reading_id"]["S"]: item for item in items}


def test_a_second_event_of_the_millisecond_never_overwrites_the_first(
    dynamodb_local: Any, tables: tuple[str, str]
) -> None:
    # Given one shard, and event a acknowledged at T0
    ds = facade(dynamodb_local, tables, shards=1)
    (first,) = ds.put_events([reading("a", 21)])
    assert first.ok and first.physical_key == f"{KEY}#0"
    # When event b of the same key and millisecond comes in another batch
    (second,) = ds.put_events([reading("b", 99)])
    # Then b fails for good, naming the event that holds the millisecond
    assert not second.ok and second.permanent and second.field == "ts"
    assert f"{KEY}#0: 'a'" in (second.error or "")
    assert "1357034400250" in (second.error or "")
    # And a reads back intact: the table holds it, and only it
    (item,) = ds.query_events(KEY).items
    assert item == reading("a", 21).to_json()
    assert set(stored(dynamodb_local, tables[0])) == {"a"}
    ds.close()


def test_with_two_shards_both_events_are_stored(
    dynamodb_local: Any, tables: tuple[str, str]
) -> None:
    # Given two shards, and event a acknowledged at T0
    ds = facade(dynamodb_local, tables, shards=2)
    (first,) = ds.put_events([reading("a", 21)])
    # When event b of the same millisecond comes in another batch, and c after it
    (second,) = ds.put_events([reading("b", 22)])
    (third,) = ds.put_events([reading("c", 23)])
    # Then b takes the other shard, and c, with both shards' millisecond taken, fails
    assert first.ok and second.ok
    assert {first.physical_key, second.physical_key} == {f"{KEY}#0", f"{KEY}#1"}
    assert not third.ok and third.permanent and third.field == "ts"
    assert "'a'" in (third.error or "") and "'b'" in (third.error or "")
    # And a read returns a and b, each as written, tied by id
    assert ds.query_events(KEY).items == [reading("a", 21).to_json(), reading("b", 22).to_json()]
    ds.close()


def test_a_redelivery_is_idempotent_even_after_moving_shard(
    dynamodb_local: Any, tables: tuple[str, str]
) -> None:
    # Given two shards holding a, and b moved to a's other shard
    ds = facade(dynamodb_local, tables, shards=2)
    (a,) = ds.put_events([reading("a", 21)])
    (b,) = ds.put_events([reading("b", 22)])
    assert a.ok and b.ok and a.physical_key != b.physical_key
    # When both are delivered again, together and then one by one
    again = ds.put_events([reading("b", 22), reading("a", 21)]) + ds.put_events([reading("b", 22)])
    # Then each lands on its own item again: written, nothing stored twice or lost
    assert all(o.ok for o in again), again
    assert [o.physical_key for o in again] == [b.physical_key, a.physical_key, b.physical_key]
    items = stored(dynamodb_local, tables[0])
    assert set(items) == {"a", "b"}
    assert items["a"]["device"]["S"] == a.physical_key and items["a"]["temp"] == {"N": "21"}
    assert items["b"]["device"]["S"] == b.physical_key and items["b"]["temp"] == {"N": "22"}
    ds.close()


def test_two_writers_racing_for_one_millisecond_keep_the_acknowledged_event(
    dynamodb_local: Any, tables: tuple[str, str]
) -> None:
    # Given two writers (two containers) and one shard
    writers = [facade(dynamodb_local, tables, shards=1) for _ in range(2)]
    for ds in writers:
        ds.metadata.for_writer(KEY)  # warm: the race is the put, not the metadata
    start = threading.Barrier(2)
    outcomes: dict[str, WriteOutcome] = {}

    def write(ds: Dynashard, event_id: str, temp: int) -> None:
        start.wait()
        (outcomes[event_id],) = ds.put_events([reading(event_id, temp)])

    # When each writes its own event of the same key and millisecond at once
    threads = [
        threading.Thread(target=write, args=(ds, event_id, temp))
        for ds, (event_id, temp) in zip(writers, [("x", 1), ("y", 2)], strict=True)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # Then exactly one is acknowledged, and it is the one the table holds
    acknowledged = [event_id for event_id, o in outcomes.items() if o.ok]
    assert len(acknowledged) == 1, outcomes
    (loser,) = (o for o in outcomes.values() if not o.ok)
    assert loser.permanent and loser.field == "ts"
    assert f"'{acknowledged[0]}'" in (loser.error or "")
    assert set(stored(dynamodb_local, tables[0])) == set(acknowledged)
    for ds in writers:
        ds.close()


def test_a_redelivery_after_a_shrink_is_acknowledged_where_it_is_stored(
    dynamodb_local: Any, tables: tuple[str, str]
) -> None:
    # Given four shards each holding an event of one millisecond (issue 38, bug 8)
    ds = facade(dynamodb_local, tables, shards=4)
    first = ds.put_events([reading(f"e{i}", i) for i in range(4)])
    assert all(o.ok for o in first), first
    far = next(o for o in first if o.physical_key in (f"{KEY}#2", f"{KEY}#3"))
    # When the key shrinks to two shards and that event is delivered again
    assert ds.set_shard_count(KEY, 2).changed
    (again,) = ds.put_events([reading(far.event_id, int(far.event_id[1:]))])
    # Then it is acknowledged where it is stored (not refused: every read returns it)
    assert again.ok and again.physical_key == far.physical_key, again
    assert set(stored(dynamodb_local, tables[0])) == {"e0", "e1", "e2", "e3"}
    # And a new event of that millisecond is still refused, for good
    (new,) = ds.put_events([reading("e4", 4)])
    assert not new.ok and new.permanent and new.field == "ts"
    ds.close()
