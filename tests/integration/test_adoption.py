"""Adoption without migration, live, on DynamoDB Local: a key populated under its bare
partition key goes from unsharded to 8 shards while writers write and readers read, and
nothing is lost, duplicated or read out of order (invariants 1, 3 and 4)."""

from __future__ import annotations

import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from dynashard import Dynashard, DynashardConfig, Event
from dynashard.core.buckets import TimeBucket
from dynashard.dynamodb.writer import BATCH_WRITE_MAX_ITEMS, build_item

pytestmark = pytest.mark.integration

KEY = "DEPARTURES#EWR"
T0 = datetime(2013, 3, 1, tzinfo=UTC)
LEGACY_ITEMS = 3000
#: Event times of legacy and new events share one window, so every page interleaves them.
WINDOW_S = 86_400


def facade(dynamodb_local: Any, tables: tuple[str, str], **overrides: Any) -> Dynashard:
    data, meta = tables
    config = DynashardConfig(data, meta, endpoint_url=dynamodb_local.endpoint_url, **overrides)
    return Dynashard(config, client=dynamodb_local.client(max_pool_connections=32))


def sk(item: dict[str, Any]) -> str:
    return f"{item['ts']}#{item['id']}"


def write_bare(client: Any, table: str, events: list[Event]) -> None:
    """Write the house item shape under PK = the logical key, as a pre-dynashard app did."""
    items = []
    for event in events:
        item, _ = build_item(event, 0, TimeBucket.DAY)
        item["PK"] = {"S": event.key}
        items.append({"PutRequest": {"Item": item}})
    for start in range(0, len(items), BATCH_WRITE_MAX_ITEMS):
        pending = {table: items[start : start + BATCH_WRITE_MAX_ITEMS]}
        while pending:
            pending = client.batch_write_item(RequestItems=pending).get("UnprocessedItems") or {}


@dataclass
class Ledger:
    """Acknowledged event ids, in acknowledgement order, shared by the threads."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    acknowledged: list[str] = field(default_factory=list)
    physical_keys: set[str] = field(default_factory=set)

    def snapshot(self) -> set[str]:
        with self.lock:
            return set(self.acknowledged)


@dataclass
class Read:
    count_at_start: int
    must_contain: set[str]
    seen: list[str]
    in_order: bool


def test_adopting_a_populated_key_and_growing_it_live_loses_nothing(
    dynamodb_local: Any, sandbox_tables: tuple[str, str]
) -> None:
    data_table, _ = sandbox_tables
    rng = random.Random(14)
    # Given a key with 3,000 items under its bare partition key, unknown to dynashard
    legacy = [
        Event(key=KEY, id=f"legacy{i:05d}", ts=T0 + timedelta(seconds=rng.uniform(0, WINDOW_S)))
        for i in range(LEGACY_ITEMS)
    ]
    write_bare(dynamodb_local.client(), data_table, legacy)
    grower = facade(dynamodb_local, sandbox_tables, cooldown_s=0)
    # Writers: two refresh their shard count often, one keeps it for an hour (stale)
    writers = [
        facade(dynamodb_local, sandbox_tables, metadata_cache_ttl_s=ttl) for ttl in (0.2, 0.2, 3600)
    ]
    readers = [facade(dynamodb_local, sandbox_tables) for _ in range(2)]
    ledger = Ledger()
    ledger.acknowledged.extend(e.id for e in legacy)  # durable before the run began
    reads: list[Read] = []
    reads_lock = threading.Lock()
    stop = threading.Event()

    # When the key is adopted (N = 1) and then grown 1 -> 4 -> 8 while writers write
    info = grower.adopt(KEY)
    assert (info.adopted, info.number_of_shards) == (True, 1)

    def write(index: int, ds: Dynashard) -> int:
        batch = 0
        while not stop.is_set() and batch < 400:
            events = [
                Event(
                    key=KEY,
                    id=f"w{index}-{batch:03d}-{j:02d}",
                    ts=T0 + timedelta(seconds=rng.uniform(0, WINDOW_S)),
                )
                for j in range(20)
            ]
            outcomes = ds.put_events(events)
            assert all(o.ok for o in outcomes), [o.error for o in outcomes if not o.ok]
            with ledger.lock:
                ledger.acknowledged.extend(o.event_id for o in outcomes)
                ledger.physical_keys.update(o.physical_key or "" for o in outcomes)
            batch += 1
        return batch

    def read(ds: Dynashard) -> None:
        while not stop.is_set():
            count = grower.shard_info(KEY).number_of_shards
            must = ledger.snapshot()  # every write acknowledged before this read began
            seen: list[str] = []
            last = ""
            in_order = True
            cursor = None
            while True:
                page = ds.query_events(KEY, limit=400, cursor=cursor)
                for item in page.items:
                    in_order = in_order and sk(item) > last
                    last = sk(item)
                    seen.append(item["id"])
                cursor = page.cursor
                if cursor is None:
                    break
            with reads_lock:
                reads.append(Read(count, must, seen, in_order))

    def reads_done() -> int:
        with reads_lock:
            return len(reads)

    def wait_for_reads(n: int, timeout_s: float = 120.0) -> None:
        deadline = time.monotonic() + timeout_s
        while reads_done() < n:
            assert time.monotonic() < deadline, f"only {reads_done()} reads in {timeout_s} s"
            time.sleep(0.05)

    with ThreadPoolExecutor(len(writers) + len(readers)) as pool:
        writing = [pool.submit(write, i, w) for i, w in enumerate(writers)]
        reading = [pool.submit(read, r) for r in readers]
        try:
            wait_for_reads(2)
            assert grower.grow(KEY, 4).changed
            wait_for_reads(reads_done() + 4)
            assert grower.grow(KEY, 8).changed
            wait_for_reads(reads_done() + 4)
        finally:
            stop.set()
        batches = [f.result() for f in writing]
        for f in reading:
            f.result()

    # Then every read taken during the run was in exact order, held each item once,
    # and held every item acknowledged before it began (invariant 3)
    assert all(b > 0 for b in batches)
    assert {r.count_at_start for r in reads} >= {1, 4, 8}
    for r in reads:
        assert r.in_order
        assert len(r.seen) == len(set(r.seen))
        missing = r.must_contain - set(r.seen)
        assert not missing, f"a read under N={r.count_at_start} missed {sorted(missing)[:5]}"
    # Writes went to shards only, and grown shards were used
    assert KEY not in ledger.physical_keys
    assert {f"{KEY}#{s}" for s in range(8)} <= ledger.physical_keys
    # And at the end one read returns every item exactly once, in order
    items = _read_all(readers[0])
    assert [sk(i) for i in items] == sorted(sk(i) for i in items)
    final = [i["id"] for i in items]
    assert sorted(final) == sorted(ledger.acknowledged)
    assert len(final) == len(set(final)) == LEGACY_ITEMS + 20 * sum(batches)
    bare = dynamodb_local.client().query(
        TableName=data_table,
        KeyConditionExpression="PK = :pk",
        ExpressionAttributeValues={":pk": {"S": KEY}},
        Select="COUNT",
    )
    assert bare["Count"] == LEGACY_ITEMS  # the writer never wrote to the bare key


def _read_all(ds: Dynashard) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    cursor = None
    while True:
        page = ds.query_events(KEY, limit=1000, cursor=cursor)
        items.extend(page.items)
        cursor = page.cursor
        if cursor is None:
            return items


# --- issue 38: another program's items under an adopted key, on DynamoDB Local ----------


def _put_raw(client: Any, table: str, pk: str, sk: str, **attrs: Any) -> None:
    client.put_item(TableName=table, Item={"PK": {"S": pk}, "SK": {"S": sk}, **attrs})


def test_a_targeted_read_of_an_adopted_key_is_the_plain_read_filtered(
    dynamodb_local: Any, sandbox_tables: tuple[str, str]
) -> None:
    # Given the old program's items under the bare key, the attribute at the top level
    data_table, _ = sandbox_tables
    ds = facade(dynamodb_local, sandbox_tables)
    raw = dynamodb_local.client()
    for i, carrier in enumerate(("UA", "AA", "UA")):
        sk = f"2013-03-01T00:00:0{i}.000000Z#old{i}"
        _put_raw(raw, data_table, "TARGET", sk, carrier={"S": carrier})
    ds.set_strategy("TARGET", "calculated", attribute="carrier", initial_shards=3)
    ds.adopt("TARGET")
    new = [Event(key="TARGET", id=f"new{i}", ts=T0 + timedelta(hours=i), data={"carrier": c})
           for i, c in enumerate(("UA", "DL"))]  # fmt: skip
    assert all(o.ok for o in ds.put_events(new))
    # Then the targeted read returns the old program's UA items with dynashard's
    every = _read(ds, "TARGET")
    got = _read(ds, "TARGET", attribute_value="UA")
    assert got == [i for i in every if i["data"].get("carrier") == "UA"]
    assert [i["id"] for i in got] == ["new0", "old0", "old2"]
    ds.close()


def test_adoption_of_a_bucketed_family_is_refused(
    dynamodb_local: Any, sandbox_tables: tuple[str, str]
) -> None:
    from dynashard.core.families import BucketFamily
    from dynashard.errors import InvalidInputError

    data_table, _ = sandbox_tables
    _put_raw(dynamodb_local.client(), data_table, "FAMILY", "2013-03-01T00:00:00.000000Z#o")
    ds = facade(
        dynamodb_local, sandbox_tables, bucketed_keys=(BucketFamily("FAMILY", TimeBucket.DAY),)
    )
    with pytest.raises(InvalidInputError) as refused:
        ds.adopt("FAMILY")
    assert refused.value.field == "key"
    ds.close()


def test_foreign_items_with_a_key_attribute_are_read_not_skipped(
    dynamodb_local: Any, sandbox_tables: tuple[str, str]
) -> None:
    # Given the old program's items with an attribute "key": another value, a number,
    # and the logical key itself (no id or ts of dynashard's)
    data_table, _ = sandbox_tables
    raw = dynamodb_local.client()
    for i, value in enumerate(({"S": "ELSEWHERE"}, {"N": "5"}, {"S": "KEYED"})):
        _put_raw(raw, data_table, "KEYED", f"2013-03-01T00:00:0{i}.000000Z#k{i}", key=value)
    ds = facade(dynamodb_local, sandbox_tables)
    ds.adopt("KEYED")
    # Then each is read in its own shape, never left out, never a KeyError
    got = _read(ds, "KEYED")
    assert [(i["id"], i["data"]) for i in got] == [
        ("k0", {"key": "ELSEWHERE"}),
        ("k1", {"key": 5}),
        ("k2", {"key": "KEYED"}),
    ]
    # And the survey counts them as another program's items, with the attribute
    survey = ds.survey_bare_key("KEYED")
    assert (survey.foreign_items, survey.key_attribute_items, survey.dynashard_items) == (3, 3, 0)
    ds.close()


def test_an_item_outside_the_codecs_range_written_after_adoption_fails_the_read(
    dynamodb_local: Any, sandbox_tables: tuple[str, str]
) -> None:
    from dynashard.errors import TableSchemaError

    # Given an adopted key with an event, and the old writer's ALERT# item after adoption
    data_table, _ = sandbox_tables
    ds = facade(dynamodb_local, sandbox_tables)
    ds.adopt("ALERTS")
    assert ds.put_events([Event(key="ALERTS", id="e1", ts=T0)])[0].ok
    _put_raw(dynamodb_local.client(), data_table, "ALERTS", "ALERT#2013-03-01T00:00:00Z")
    # Then a full read fails naming its sort key, in either order
    for descending in (False, True):
        with pytest.raises(TableSchemaError, match="ALERT#2013"):
            _read(ds, "ALERTS", descending=descending)
    ds.close()


def _read(ds: Dynashard, key: str, **options: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    cursor = None
    while True:
        page = ds.query_events(key, limit=2, cursor=cursor, **options)
        items.extend(page.items)
        cursor = page.cursor
        if cursor is None:
            return items
