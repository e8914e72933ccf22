"""A redelivery of a stored ``epoch_ms_number`` event is acknowledged (issue 38, bug 8).

The sort key is the millisecond alone, so each item is a conditional put and an event
whose millisecond is taken moves to another shard. After a shrink, or at a writer
whose cached count is older, a redelivery's shards (those of the count it sees) may
not include the one its event went to: when they all held other events of that
millisecond, the event already stored was refused as permanent ("the event was not
written"), sent to the DLQ or answered 400, although every read returned it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from moto import mock_aws

from dynashard import Dynashard, DynashardConfig
from dynashard.core.strategies import Strategy, shard_for
from dynashard.model import Event
from infra.table_specs import METADATA_TABLE, create_table_request
from tests.unit.library.core.test_exact_times import SCHEMA

T0 = datetime(2013, 1, 1, 10, 0, 0, 250_000, tzinfo=UTC)
KEY = "DEVICE#7"


@pytest.fixture
def client(atomic_calls: Callable[[Any], Any]) -> Iterator[Any]:
    with mock_aws():
        ddb = atomic_calls(boto3.client("dynamodb", region_name="us-east-1"))
        ddb.create_table(**create_table_request(METADATA_TABLE))
        ddb.create_table(
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
        yield ddb


def facade(client: Any, **options: Any) -> Dynashard:
    config = DynashardConfig(
        "devices", METADATA_TABLE.default_name, schema=SCHEMA, cooldown_s=0.0, **options
    )
    return Dynashard(config, client=client)


def reading(event_id: str, **data: Any) -> Event:
    return Event(key=KEY, id=event_id, ts=T0, data={"temp": 21, **data})


def stored_ids(client: Any) -> list[str]:
    items = client.scan(TableName="devices", ConsistentRead=True)["Items"]
    return sorted(item["reading_id"]["S"] for item in items)


def test_a_random_key_s_redelivery_after_a_shrink_is_acknowledged(client: Any) -> None:
    # Given four shards each holding an event of one millisecond
    ds = facade(client, default_shards=4)
    first = ds.put_events([reading(f"e{i}") for i in range(4)])
    assert all(o.ok for o in first), first
    far = next(o for o in first if o.physical_key in (f"{KEY}#2", f"{KEY}#3"))
    # When the key shrinks to two shards, and an event stored on shard 2 or 3 comes again
    assert ds.set_shard_count(KEY, 2).changed
    (again,) = ds.put_events([reading(far.event_id)])
    # Then it is acknowledged where it is stored, and nothing is stored twice
    assert again.ok and not again.permanent, again
    assert again.physical_key == far.physical_key
    assert stored_ids(client) == ["e0", "e1", "e2", "e3"]
    # And a new event of that millisecond is still refused: every shard tried is taken
    (new,) = ds.put_events([reading("e4")])
    assert not new.ok and new.permanent and new.field == "ts"


def test_a_calculated_key_s_redelivery_after_a_shrink_is_acknowledged(client: Any) -> None:
    # Given a calculated key of four shards, x on a shard the count of 2 does not have,
    # and y on the shard the count of 2 gives x, at the same millisecond
    ds = facade(client, default_shards=4)
    ds.set_strategy(KEY, Strategy.CALCULATED, attribute="site")
    sites = [f"s{i}" for i in range(200)]
    x = next(s for s in sites if shard_for(s, 4) >= 2)
    y = next(s for s in sites if shard_for(s, 4) == shard_for(x, 2))
    written = ds.put_events([reading("x", site=x), reading("y", site=y)])
    assert all(o.ok for o in written), written
    # When the key shrinks to 2 and x comes again
    assert ds.set_shard_count(KEY, 2).changed
    (again,) = ds.put_events([reading("x", site=x)])
    # Then it is acknowledged on the shard it was written to
    assert again.ok, again
    assert again.physical_key == written[0].physical_key == f"{KEY}#{shard_for(x, 4)}"
    assert stored_ids(client) == ["x", "y"]


def test_a_redelivery_at_a_writer_with_an_older_cached_count_is_acknowledged(
    client: Any,
) -> None:
    # Given a writer that cached the key at two shards (both holding an event of T0)
    old = facade(client, default_shards=2, metadata_cache_ttl_s=3600.0)
    assert all(o.ok for o in old.put_events([reading("a"), reading("b")]))
    # and another that grew the key to four and wrote c on shard 2 or 3
    new = facade(client, default_shards=2)
    new.set_shard_count(KEY, 4)
    (c,) = new.put_events([reading("c")])
    assert c.ok and c.physical_key in (f"{KEY}#2", f"{KEY}#3"), c
    # When c is redelivered to the writer with the older count
    (again,) = old.put_events([reading("c")])
    # Then it is acknowledged where it is stored
    assert again.ok, again
    assert again.physical_key == c.physical_key
    assert stored_ids(client) == ["a", "b", "c"]
