"""A table brought by its owner: its own key schema, end to end on moto (issue 27)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from dynashard import Dynashard, DynashardConfig
from dynashard.core.buckets import TimeBucket
from dynashard.core.retry import Backoff
from dynashard.core.schema import (
    DEFAULT_SCHEMA,
    EPOCH_MS_NUMBER,
    ISO_TIME_THEN_ID,
    PLAIN_STRING,
    Payload,
    TableSchema,
)
from dynashard.core.strategies import shard_for
from dynashard.dynamodb.reader import order_function
from dynashard.dynamodb.table_check import check_table_schema
from dynashard.dynamodb.writer import ShardedWriter, build_item
from dynashard.errors import InvalidInputError, TableSchemaError
from dynashard.lambda_kit.settings import FunctionSettings
from dynashard.model import Event
from infra.table_specs import ALL_TABLES, DATA_TABLE, METADATA_TABLE, create_table_request

DEVICES = "devices"
#: A device-telemetry table as its owner made it: partition key ``device``, numeric sort
#: key ``at`` (epoch milliseconds), no GSI, each reading's fields on the item itself.
EPOCH_FLAT = TableSchema(
    partition_key="device",
    sort_key="at",
    sort_key_codec=EPOCH_MS_NUMBER,
    gsi_name=None,
    key_attr="stream",
    id_attr="reading_id",
    ts_attr="time",
    shard_attr="shard_no",
    payload=Payload.FLAT,
)
T0 = datetime(2013, 1, 1, 10, 0, tzinfo=UTC)


def create_table(
    client: Any,
    name: str,
    pk: tuple[str, str],
    sk: tuple[str, str],
    gsi: tuple[str, str, str, str, str] | None = None,
) -> None:
    types = {pk[0]: pk[1], sk[0]: sk[1]}
    request: dict[str, Any] = {
        "TableName": name,
        "KeySchema": [
            {"AttributeName": pk[0], "KeyType": "HASH"},
            {"AttributeName": sk[0], "KeyType": "RANGE"},
        ],
        "BillingMode": "PAY_PER_REQUEST",
    }
    if gsi is not None:
        index, gpk, gpk_type, gsk, gsk_type = gsi
        types.update({gpk: gpk_type, gsk: gsk_type})
        request["GlobalSecondaryIndexes"] = [
            {
                "IndexName": index,
                "KeySchema": [
                    {"AttributeName": gpk, "KeyType": "HASH"},
                    {"AttributeName": gsk, "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ]
    request["AttributeDefinitions"] = [
        {"AttributeName": n, "AttributeType": t} for n, t in types.items()
    ]
    client.create_table(**request)


@pytest.fixture
def client(atomic_calls: Callable[[Any], Any]) -> Iterator[Any]:
    with mock_aws():
        ddb = atomic_calls(boto3.client("dynamodb", region_name="us-east-1"))
        for spec in ALL_TABLES:
            ddb.create_table(**create_table_request(spec))
        create_table(ddb, DEVICES, ("device", "S"), ("at", "N"))
        yield ddb


def facade_for(
    client: Any, schema: TableSchema, table: str = DEVICES, shards: int = 4
) -> Dynashard:
    config = DynashardConfig(
        table,
        METADATA_TABLE.default_name,
        default_shards=shards,
        max_workers=4,
        schema=schema,
        check_schema=True,
    )
    return Dynashard(config, client=client)


def read_all(ds: Dynashard, key: str, limit: int, **options: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    cursor = None
    for _ in range(1000):
        page = ds.query_events(key, limit=limit, cursor=cursor, **options)
        assert len(page.items) <= limit
        items.extend(page.items)
        cursor = page.cursor
        if cursor is None:
            return items
    raise AssertionError("paging did not end")


def readings(n: int, key: str = "DEVICE#7") -> list[Event]:
    return [
        Event(
            key=key,
            id=f"r{i:03d}",
            ts=T0 + timedelta(milliseconds=37 * i),
            data={"temp": 20 + i / 4, "ok": i % 2 == 0, "tags": ["a", str(i)]},
        )
        for i in range(n)
    ]


@pytest.mark.parametrize("limit", [1, 3, 100])
@pytest.mark.parametrize("descending", [False, True])
def test_epoch_flat_table_reads_back_exactly_what_was_written(
    client: Any, limit: int, descending: bool
) -> None:
    # Given a table keyed by (device, at: N) with flat items, four shards
    ds = facade_for(client, EPOCH_FLAT)
    events = readings(20)
    # When the events are written and read back page by page
    outcomes = ds.put_events(events)
    assert all(o.ok for o in outcomes), outcomes
    items = read_all(ds, "DEVICE#7", limit, descending=descending)
    # Then every event comes back once, in time order, exactly as it went in
    expected = [e.to_json() for e in events]
    assert items == (expected[::-1] if descending else expected)
    assert {o.physical_key for o in outcomes} == {f"DEVICE#7#{s}" for s in range(4)}
    ds.close()


def test_epoch_flat_items_are_the_tables_own_shape(client: Any) -> None:
    ds = facade_for(client, EPOCH_FLAT)
    event = readings(1)[0]
    assert ds.put_events([event])[0].ok
    (item,) = client.scan(TableName=DEVICES)["Items"]
    assert item["at"] == {"N": "1357034400000"}
    assert item["reading_id"] == {"S": "r000"} and item["stream"] == {"S": "DEVICE#7"}
    assert item["time"] == {"S": "2013-01-01T10:00:00.000000Z"}
    assert item["temp"] == {"N": "20.0"} and item["ok"] == {"BOOL": True}
    assert set(item) == {
        "device",
        "at",
        "stream",
        "reading_id",
        "time",
        "shard_no",
        "temp",
        "ok",
        "tags",
    }
    ds.close()


def test_epoch_window_and_ties_across_shards_are_ordered_by_id(client: Any) -> None:
    # Given events in one millisecond spread over shards (one item per shard and ms)
    ds = facade_for(client, EPOCH_FLAT, shards=8)
    tied = [Event(key="K", id=f"t{i}", ts=T0, data={"i": i}) for i in range(12)]
    outcomes = ds.put_events(tied + readings(5, "K"))
    written = sorted(e.id for e, o in zip(tied, outcomes, strict=False) if o.ok)
    refused = [o for o in outcomes[: len(tied)] if not o.ok]
    # Then each tied event takes a shard whose millisecond is free, one per shard, and
    # the rest are refused, permanently, naming the events that hold the millisecond
    assert len(written) == 8
    assert len({o.physical_key for o in outcomes[: len(tied)] if o.ok}) == 8
    assert len(refused) == 4
    for o in refused:
        assert o.permanent and o.field == "ts" and o.physical_key is None
        assert "every shard tried holds another event at sort key 1357034400000" in (o.error or "")
        assert o.error is not None and all(f"K#{s}: 't" in o.error for s in range(8))
    # And a window's read pages through the tie one item at a time, ties by id
    window = {"start": T0, "end": T0 + timedelta(milliseconds=1)}
    assert [i["id"] for i in read_all(ds, "K", 1, **window)] == written
    assert [i["id"] for i in read_all(ds, "K", 1, descending=True, **window)] == written[::-1]
    later = read_all(
        ds, "K", 2, start=T0 + timedelta(milliseconds=37), end=T0 + timedelta(seconds=1)
    )
    assert [i["id"] for i in later] == ["r001", "r002", "r003", "r004"]
    ds.close()


class CountingClient:
    """Delegates to the moto client; counts the data table's writes by operation, and
    throttles the first ``throttle`` PutItem calls as DynamoDB does (key range)."""

    def __init__(self, inner: Any, throttle: int = 0) -> None:
        self.inner = inner
        self.throttle = throttle
        self.calls: dict[str, int] = {"batch_write_item": 0, "put_item": 0}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def batch_write_item(self, **kw: Any) -> Any:
        if DEVICES in kw["RequestItems"] or DATA_TABLE.default_name in kw["RequestItems"]:
            self.calls["batch_write_item"] += 1
        return self.inner.batch_write_item(**kw)

    def put_item(self, **kw: Any) -> Any:
        if kw["TableName"] in (DEVICES, DATA_TABLE.default_name):
            self.calls["put_item"] += 1
            if self.throttle > 0:
                self.throttle -= 1
                raise ClientError(
                    {
                        "Error": {
                            "Code": "ProvisionedThroughputExceededException",
                            "Message": "throttled",
                        },
                        "ThrottlingReasons": [
                            {
                                "reason": "TableWriteKeyRangeThroughputExceeded",
                                "resource": DEVICES,
                            }
                        ],
                    },
                    "PutItem",
                )
        return self.inner.put_item(**kw)


def test_only_a_sort_key_without_the_id_writes_with_conditional_puts(client: Any) -> None:
    # Given the default table and the epoch one, each written 30 events
    counting = CountingClient(client)
    for schema, table in ((DEFAULT_SCHEMA, DATA_TABLE.default_name), (EPOCH_FLAT, DEVICES)):
        ds = facade_for(counting, schema, table=table)
        assert all(o.ok for o in ds.put_events(readings(30)))
        ds.close()
        # Then the default table took BatchWriteItem only, the epoch one PutItem only
        if schema is DEFAULT_SCHEMA:
            assert counting.calls == {"batch_write_item": 2, "put_item": 0}
        else:
            assert counting.calls == {"batch_write_item": 2, "put_item": 30}


def test_a_throttled_conditional_put_is_retried_and_counted(client: Any) -> None:
    # Given an epoch table whose first two puts are throttled by key range
    counting: Any = CountingClient(client, throttle=2)
    ds = facade_for(client, EPOCH_FLAT, shards=1)
    writer = ShardedWriter(
        counting,
        DEVICES,
        ds.metadata,
        ds.executor,
        sleep=lambda _s: None,
        grow_on_key_range_throttle=False,
        schema=EPOCH_FLAT,
    )
    # When an event is written
    (outcome,) = writer.write(readings(1))
    # Then it is written after the retries, on its own shard, and the throttles counted
    assert outcome.ok and outcome.physical_key == "DEVICE#7#0"
    assert counting.calls["put_item"] == 3
    assert writer.throttles["TableWriteKeyRangeThroughputExceeded"] == 2
    ds.close()


@dataclass(frozen=True)
class CeilingBackoff(Backoff):
    """The back-off at the top of its jitter: each delay is its ceiling, known in advance."""

    def delay(self, attempt: int) -> float:
        return min(self.cap_s, self.base_s * 2**attempt)


def test_a_throttled_conditional_put_backs_off_from_the_first_delay(client: Any) -> None:
    # Given an epoch table whose first two puts are throttled, and a writer that records
    # its sleeps under a back-off of 10 ms doubling
    counting: Any = CountingClient(client, throttle=2)
    ds = facade_for(client, EPOCH_FLAT, shards=1)
    slept: list[float] = []
    writer = ShardedWriter(
        counting,
        DEVICES,
        ds.metadata,
        ds.executor,
        backoff=CeilingBackoff(base_s=0.01, cap_s=5.0, max_attempts=4),
        sleep=slept.append,
        grow_on_key_range_throttle=False,
        schema=EPOCH_FLAT,
    )
    # When an event is written
    (outcome,) = writer.write(readings(1))
    # Then it is written on the third put, after the first and second retries' delays
    # (retry 0: 10 ms, retry 1: 20 ms), not later ones
    assert outcome.ok
    assert counting.calls["put_item"] == 3
    assert slept == [0.01, 0.02]
    ds.close()


def test_a_calculated_keys_event_never_leaves_its_shard(client: Any) -> None:
    # Given a calculated key on four shards, and an event of sensor A at T0 stored
    ds = facade_for(client, EPOCH_FLAT, shards=4)
    ds.set_strategy("K", "calculated", attribute="sensor")
    first = Event(key="K", id="e1", ts=T0, data={"sensor": "A"})
    (stored,) = ds.put_events([first])
    assert stored.ok
    # When another event of sensor A comes at the same millisecond
    (outcome,) = ds.put_events([Event(key="K", id="e2", ts=T0, data={"sensor": "A"})])
    # Then it is refused, though other shards are free: a targeted read of sensor A
    # queries its shard only, so the event cannot go elsewhere; the first is intact
    assert not outcome.ok and outcome.permanent and outcome.field == "ts"
    assert f"{stored.physical_key}: 'e1'" in (outcome.error or "")
    assert [i["id"] for i in read_all(ds, "K", 10, attribute_value="A")] == ["e1"]
    assert len(client.scan(TableName=DEVICES)["Items"]) == 1
    ds.close()


class HeldOnShard9:
    """Delegates to a real client, but answers a put on ``DEVICE#7#9`` as DynamoDB would.

    Shard 9 holds another event, so DynamoDB refuses the put on its condition whatever
    the item's size. moto sizes a number by its text (13 bytes for epoch milliseconds,
    where DynamoDB counts 8) and refuses a 409,600-byte item for its size first.
    """

    def __init__(self, inner: Any, holder: str) -> None:
        self.inner = inner
        self.holder = holder

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def put_item(self, **kw: Any) -> Any:
        if kw["Item"].get("device") == {"S": "DEVICE#7#9"}:
            error = {"Code": "ConditionalCheckFailedException", "Message": "failed"}
            raise ClientError(
                {"Error": error, "Item": {"reading_id": {"S": self.holder}}},  # type: ignore[typeddict-unknown-key]
                "PutItem",
            )
        return self.inner.put_item(**kw)


def test_an_event_pushed_past_400_kb_by_the_next_shards_digits_fails_naming_the_limit(
    client: Any,
) -> None:
    # Given a random key on eleven shards, whose shard 9 holds an event at T0
    first, second = [i for i in (f"r{n}" for n in range(200)) if shard_for(i, 11) == 9][:2]
    ds = facade_for(HeldOnShard9(client, first), EPOCH_FLAT, shards=11)
    # and another event of T0 whose item on shard 9 is exactly 400 KB (409,600 bytes)
    bare = Event(key="DEVICE#7", id=second, ts=T0, data={"blob": ""})
    room = 409_600 - build_item(bare, 9, TimeBucket.DAY, schema=EPOCH_FLAT)[1]
    big = Event(key="DEVICE#7", id=second, ts=T0, data={"blob": "x" * room})
    # When it is written: shard 9 is taken, and on shard 10 the second digit of the
    # key and of the shard number takes the item one byte past the limit
    (outcome,) = ds.put_events([big])
    # Then it fails permanently, naming the field and the limit, and nothing is stored
    assert not outcome.ok and outcome.permanent, outcome
    assert outcome.field == "data"
    assert (outcome.error or "").startswith("KeyLimitExceededError: data: "), outcome.error
    assert "409601 bytes" in (outcome.error or "") and "409600" in (outcome.error or "")
    assert client.scan(TableName=DEVICES)["Items"] == []
    ds.close()


def test_adopted_foreign_items_with_a_number_for_their_id_read_in_order(client: Any) -> None:
    # Given another program's readings under a bare key, in its own shape: the sort key
    # holds no id, one item carries its id as a number, one carries none at all
    ds = facade_for(client, EPOCH_FLAT, shards=2)
    for at, extra in (("1357034400000", {"reading_id": {"N": "42"}}), ("1357034400001", {})):
        item = {"device": {"S": "OLD"}, "at": {"N": at}, "temp": {"N": "19"}, **extra}
        client.put_item(TableName=DEVICES, Item=item)
    ds.adopt("OLD")
    assert ds.put_events([Event(key="OLD", id="r1", ts=T0, data={"temp": 21})])[0].ok
    # When the adopted key is read, a page of one at a time and in one page
    # Then the number reads as its text (as the survey reads it), the other's id is its
    # sort key's digits, and the items are in (millisecond, id) order, not a KeyError
    expected = [
        ("42", "2013-01-01T10:00:00.000000Z", {"reading_id": 42, "temp": 19}),
        ("r1", "2013-01-01T10:00:00.000000Z", {"temp": 21}),
        ("1357034400001", "2013-01-01T10:00:00.001000Z", {"temp": 19}),
    ]
    for limit in (1, 100):
        items = read_all(ds, "OLD", limit)
        assert [(i["id"], i["ts"], i["data"]) for i in items] == expected
    ds.close()


def test_an_adopted_item_the_codec_cannot_order_fails_the_read_naming_it(client: Any) -> None:
    # Given another program's item whose number sort key is not whole milliseconds
    ds = facade_for(client, EPOCH_FLAT, shards=2)
    bad = {"device": {"S": "OLD"}, "at": {"N": "1357034400000.5"}, "temp": {"N": "19"}}
    client.put_item(TableName=DEVICES, Item=bad)
    # Then the survey counts it, and adopt refuses the key while it is there
    assert ds.survey_bare_key("OLD").unreadable_items == 1
    with pytest.raises(InvalidInputError) as refused:
        ds.adopt("OLD")
    assert refused.value.field == "key"
    # And once adopted regardless, a read fails naming the item: the table does not hold
    # what the schema says (TableSchemaError), not a bad request (InvalidInputError)
    ds.adopt("OLD", survey=False)
    assert ds.put_events([Event(key="OLD", id="r1", ts=T0, data={})])[0].ok
    with pytest.raises(TableSchemaError, match=r"item device='OLD' at='1357034400000\.5'"):
        read_all(ds, "OLD", 100)
    ds.close()


def test_the_order_function_names_an_item_it_cannot_order_by_both_keys() -> None:
    # Given an item of the epoch table whose number sort key is not whole milliseconds
    item = {"device": {"S": "OLD"}, "at": {"N": "1357034400000.5"}}
    # When the merge asks for its order key
    with pytest.raises(TableSchemaError) as info:
        order_function(EPOCH_FLAT)(item)
    # Then the error names the item by its partition key and sort key, and the codec
    assert info.value.mismatches == [
        "the item device='OLD' at='1357034400000.5' cannot be ordered under codec "
        "epoch_ms_number: sort_key: '1357034400000.5' is not whole epoch milliseconds "
        "(codec epoch_ms_number)"
    ]


def test_a_flat_field_named_like_the_schemas_attribute_is_refused(client: Any) -> None:
    ds = facade_for(client, EPOCH_FLAT)
    event = Event(key="K", id="e1", ts=T0, data={"device": "x"})
    (outcome,) = ds.put_events([event])
    assert not outcome.ok and outcome.permanent and outcome.field == "data.device"
    ds.close()


def test_plain_string_table_orders_by_id_and_refuses_a_window(client: Any) -> None:
    create_table(client, "catalog", ("pk", "S"), ("sk", "S"))
    schema = TableSchema(
        partition_key="pk", sort_key="sk", sort_key_codec=PLAIN_STRING, gsi_name=None
    )
    ds = facade_for(client, schema, table="catalog", shards=3)
    ids = ["zeta", "Alpha", "beta", "Émile", "10", "9"]
    events = [Event(key="CAT", id=i, ts=T0, data={"n": n}) for n, i in enumerate(ids)]
    assert all(o.ok for o in ds.put_events(events))
    items = read_all(ds, "CAT", 2)
    assert [i["id"] for i in items] == sorted(ids, key=lambda s: s.encode("utf-8"))
    assert items[0]["data"] == {"n": ids.index(items[0]["id"])}  # nested payload kept
    with pytest.raises(InvalidInputError, match="no time window can be read from it"):
        ds.query_events("CAT", start=T0)
    ds.close()


def test_renamed_iso_table_with_a_gsi_serves_both_paths(client: Any) -> None:
    create_table(client, "events2", ("p", "S"), ("s", "S"), gsi=("ByTime", "gp", "S", "gs", "S"))
    schema = TableSchema(
        partition_key="p",
        sort_key="s",
        sort_key_codec=ISO_TIME_THEN_ID,
        gsi_name="ByTime",
        gsi_partition_key="gp",
        gsi_sort_key="gs",
        data_attr="payload",
    )
    ds = facade_for(client, schema, table="events2")
    events = readings(9)
    assert all(o.ok for o in ds.put_events(events))
    window = {"start": T0, "end": T0 + timedelta(hours=1)}
    base = read_all(ds, "DEVICE#7", 4, **window)
    gsi = read_all(ds, "DEVICE#7", 4, consistent=False, path="gsi1", **window)
    assert base == gsi == [e.to_json() for e in events]
    ds.close()


def test_paths_that_need_the_default_layout_say_so(client: Any) -> None:
    ds = facade_for(client, EPOCH_FLAT)
    for call in (
        lambda: ds.increment_counter("c"),
        lambda: ds.count_events("K"),
        lambda: ds.compact("K"),
        lambda: ds.ordered_index("K"),
    ):
        with pytest.raises(InvalidInputError, match="dynashard's own table layout") as caught:
            call()
        assert caught.value.field == "schema"
    start, end = T0, T0 + timedelta(hours=1)
    with pytest.raises(InvalidInputError, match="the table has no GSI configured"):
        ds.query_events("K", start=start, end=end, consistent=False, path="gsi1")
    ds.close()


# --- the start-up check -------------------------------------------------------------


def test_the_default_tables_pass_and_a_missing_table_is_named(client: Any) -> None:
    from infra.table_specs import DATA_TABLE

    check_table_schema(client, DATA_TABLE.default_name, DEFAULT_SCHEMA)
    check_table_schema(client, DEVICES, EPOCH_FLAT)
    with pytest.raises(TableSchemaError, match="table 'nope' does not exist"):
        check_table_schema(client, "nope", DEFAULT_SCHEMA)


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        (
            TableSchema(
                partition_key="dev", sort_key="at", sort_key_codec=EPOCH_MS_NUMBER, gsi_name=None
            ),
            "table 'devices': partition key is 'device' (S), the schema says 'dev' (S)",
        ),
        (
            TableSchema(partition_key="device", sort_key="at", gsi_name=None),
            "table 'devices': sort key is 'at' (N), the schema says 'at' (S)",
        ),
        (
            TableSchema(
                partition_key="device",
                sort_key="when",
                sort_key_codec=EPOCH_MS_NUMBER,
                gsi_name=None,
            ),
            "table 'devices': sort key is 'at' (N), the schema says 'when' (N)",
        ),
        (
            TableSchema(partition_key="device", sort_key="at", sort_key_codec=EPOCH_MS_NUMBER),
            "table 'devices': has no GSI 'GSI1'",
        ),
    ],
)
def test_each_mismatch_is_named(client: Any, schema: TableSchema, message: str) -> None:
    with pytest.raises(TableSchemaError) as caught:
        check_table_schema(client, DEVICES, schema)
    assert caught.value.mismatches == [message]


def test_gsi_key_mismatches_are_named(client: Any) -> None:
    create_table(client, "g", ("PK", "S"), ("SK", "S"), gsi=("GSI1", "GSI1PK", "S", "sk2", "N"))
    with pytest.raises(TableSchemaError) as caught:
        check_table_schema(client, "g", DEFAULT_SCHEMA)
    assert caught.value.mismatches == [
        "table 'g' GSI 'GSI1': sort key is 'sk2' (N), the schema says 'GSI1SK' (S)"
    ]


def test_the_facade_checks_before_its_first_write_or_read(client: Any) -> None:
    wrong = TableSchema(partition_key="device", sort_key="at", gsi_name=None)  # S, not N
    ds = facade_for(client, wrong)
    with pytest.raises(TableSchemaError, match="sort key is 'at' \\(N\\)"):
        ds.put_events(readings(1))
    with pytest.raises(TableSchemaError):
        ds.query_events("DEVICE#7")
    assert client.scan(TableName=DEVICES)["Items"] == []
    ds.close()


def test_function_settings_name_the_schema_and_check_it_at_cold_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    base = {"DYNASHARD_DATA_TABLE": DEVICES, "DYNASHARD_METADATA_TABLE": "dynashard-shards"}
    for name, value in base.items():
        monkeypatch.setenv(name, value)
    default = FunctionSettings().to_config()  # type: ignore[call-arg]
    assert default.schema == DEFAULT_SCHEMA and not default.check_schema
    schema_env = {
        "DYNASHARD_PARTITION_KEY_ATTR": "device",
        "DYNASHARD_SORT_KEY_ATTR": "at",
        "DYNASHARD_SORT_KEY_CODEC": "epoch_ms_number",
        "DYNASHARD_GSI_NAME": "",
        "DYNASHARD_KEY_ATTR": "stream",
        "DYNASHARD_ID_ATTR": "reading_id",
        "DYNASHARD_TS_ATTR": "time",
        "DYNASHARD_SHARD_ATTR": "shard_no",
        "DYNASHARD_PAYLOAD": "flat",
    }
    for name, value in schema_env.items():
        monkeypatch.setenv(name, value)
    config = FunctionSettings().to_config()  # type: ignore[call-arg]
    assert config.schema == EPOCH_FLAT and config.check_schema
    monkeypatch.setenv("DYNASHARD_TS_ATTR", "at")
    with pytest.raises(ValueError, match="sort_key and ts_attr are both 'at'"):
        FunctionSettings()  # type: ignore[call-arg]
