"""Numbers and epoch-millisecond times kept exactly, on DynamoDB Local (issue 38, bugs 6, 7).

Both were silent: a decimal a float cannot hold was acknowledged and stored rounded (or
read back rounded), and an epoch-millisecond time far from 1970 was stored microseconds
off, under the millisecond codecs in another millisecond.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest

from dynashard import Dynashard, DynashardConfig, Event
from dynashard.core.buckets import TimeBucket
from dynashard.core.schema import EPOCH_MS_NUMBER, TableSchema
from dynashard.dynamodb.writer import build_item
from dynashard.lambda_kit.ingest import parse_event
from dynashard.model import dumps, loads
from infra.table_specs import METADATA_TABLE
from sandbox.tables import create_tables, data_and_metadata, delete_tables, wait_active

pytestmark = pytest.mark.integration

PRICE = "12345678901234567.89"
DIGITS38 = "-1234567890123456789012345678901234.5678"


@pytest.fixture
def tables(dynamodb_local: Any) -> Iterator[tuple[str, str]]:
    client = dynamodb_local.client()
    created = create_tables(client, suffix=f"-{uuid.uuid4().hex[:8]}")
    yield data_and_metadata(created)
    delete_tables(client, created.values())


def facade(dynamodb_local: Any, data: str, meta: str, **options: Any) -> Dynashard:
    config = DynashardConfig(data, meta, endpoint_url=dynamodb_local.endpoint_url, **options)
    return Dynashard(config, client=dynamodb_local.client())


def test_a_queue_record_s_decimals_are_stored_and_read_back_digit_for_digit(
    dynamodb_local: Any, tables: tuple[str, str]
) -> None:
    data, meta = tables
    ds = facade(dynamodb_local, data, meta)
    # Given a record as SQS or Kinesis brings it, and an event built in Python
    record = f'{{"key": "K", "id": "q", "ts": 1357035300000, "data": {{"price": {PRICE}}}}}'
    library = Event(
        key="K", id="p", ts=1357035300001, data={"d38": Decimal(DIGITS38), "tenth": 0.1}
    )
    # When both are written and read back
    assert all(o.ok for o in ds.put_events([parse_event(record), library]))
    items = dynamodb_local.client().scan(TableName=data, ConsistentRead=True)["Items"]
    by_id = {item["id"]["S"]: item["data"]["M"] for item in items}
    page = ds.query_events("K").items
    # Then DynamoDB holds each number as sent, and reads give it back exactly
    assert by_id["q"]["price"] == {"N": PRICE}
    assert by_id["p"]["d38"] == {"N": DIGITS38} and by_id["p"]["tenth"] == {"N": "0.1"}
    assert [i["data"] for i in page] == [
        {"price": Decimal(PRICE)},
        {"d38": Decimal(DIGITS38), "tenth": Decimal("0.1")},
    ]
    assert loads(dumps(page))[0]["data"]["price"] == Decimal(PRICE)
    ds.close()


def test_an_adopted_key_s_38_digit_number_reads_back_exactly(
    dynamodb_local: Any, tables: tuple[str, str]
) -> None:
    data, meta = tables
    ds = facade(dynamodb_local, data, meta)
    # Given another program's item under the bare key, holding a 38-digit number
    item, _ = build_item(Event(key="OLD", id="x", ts=1357035300000), 0, TimeBucket.DAY)
    item["PK"] = {"S": "OLD"}
    item["data"] = {"M": {"amount": {"N": DIGITS38}}}
    dynamodb_local.client().put_item(TableName=data, Item=item)
    # When the key is adopted and read
    ds.adopt("OLD")
    (read,) = ds.query_events("OLD").items
    # Then the number is the one stored
    assert read["data"]["amount"] == Decimal(DIGITS38)
    ds.close()


@pytest.fixture
def epoch_table(dynamodb_local: Any) -> Iterator[tuple[str, str]]:
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


@pytest.mark.parametrize(
    "millis", [253_402_300_799_993, -62_135_596_799_999, -8_000_000_000_001, 7_258_118_400_001]
)
def test_events_1_ms_apart_far_from_1970_are_stored_at_their_own_millisecond(
    dynamodb_local: Any, epoch_table: tuple[str, str], millis: int
) -> None:
    data, meta = epoch_table
    schema = TableSchema(
        partition_key="device",
        sort_key="at",
        sort_key_codec=EPOCH_MS_NUMBER,
        gsi_name=None,
        id_attr="reading_id",
    )
    ds = facade(dynamodb_local, data, meta, schema=schema, default_shards=1)
    # Given two events 1 ms apart, sent as JSON epoch milliseconds, on one shard
    events = [
        parse_event(f'{{"key": "D", "id": "{name}", "ts": {millis + step}}}')
        for step, name in enumerate(("a", "b"))
    ]
    # When both are written
    outcomes = ds.put_events(events)
    # Then both are acknowledged, each stored at its own millisecond, and read back so
    assert [o.ok for o in outcomes] == [True, True], outcomes
    items = dynamodb_local.client().scan(TableName=data, ConsistentRead=True)["Items"]
    assert sorted(int(i["at"]["N"]) for i in items) == [millis, millis + 1]
    assert [i["id"] for i in ds.query_events("D").items] == ["a", "b"]
    ds.close()
