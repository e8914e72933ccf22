"""The library against DynamoDB Local (AWS's own engine): round trips, a resize while
writing and reading (invariant 3), counters, and partial batch failures."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from dynashard import Dynashard, DynashardConfig, Event, counter_key
from sandbox.env_vars import function_environment, patched_environ, reset_function_caches
from sandbox.local_aws.aws_events import LambdaContext, sqs_event, sqs_record
from sandbox.tables import create_tables, data_and_metadata, delete_tables

pytestmark = pytest.mark.integration

T0 = datetime(2013, 6, 1, tzinfo=UTC)


@pytest.fixture
def tables(dynamodb_local: Any) -> Iterator[tuple[str, str]]:
    client = dynamodb_local.client()
    created = create_tables(client, suffix=f"-{uuid.uuid4().hex[:8]}")
    yield data_and_metadata(created)
    delete_tables(client, created.values())


def facade(dynamodb_local: Any, tables: tuple[str, str], **overrides: Any) -> Dynashard:
    data, meta = tables
    config = DynashardConfig(data, meta, endpoint_url=dynamodb_local.endpoint_url, **overrides)
    return Dynashard(config, client=dynamodb_local.client(max_pool_connections=32))


def events(prefix: str, n: int, key: str = "STREAM", start: datetime = T0) -> list[Event]:
    return [
        Event(
            key=key, id=f"{prefix}{i:06d}", ts=start + timedelta(milliseconds=37 * i), data={"i": i}
        )
        for i in range(n)
    ]


def read_all(ds: Dynashard, key: str = "STREAM", **kw: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    cursor = None
    while True:
        page = ds.query_events(key, cursor=cursor, **kw)
        out.extend(page.items)
        cursor = page.cursor
        if cursor is None:
            return out


def ordered_ids(evs: list[Event], descending: bool = False) -> list[str]:
    return [e.id for e in sorted(evs, key=lambda e: e.sort_key, reverse=descending)]


@pytest.mark.parametrize("descending", [False, True])
def test_round_trip(dynamodb_local: Any, tables: tuple[str, str], descending: bool) -> None:
    ds = facade(dynamodb_local, tables)
    ds.set_shard_count("STREAM", 8)
    written = events("a", 3000)
    assert all(o.ok for o in ds.put_events(written))
    items = read_all(ds, limit=250, descending=descending)
    assert [i["id"] for i in items] == ordered_ids(written, descending)
    assert items[0]["data"]["i"] == int(items[0]["id"][1:])


def test_resize_while_writing_and_reading_misses_nothing(
    dynamodb_local: Any, tables: tuple[str, str]
) -> None:
    """Invariant 3: every write acknowledged before a read began is in that read, while
    writers with stale caches and a grower change the shard count under it."""
    grower = facade(dynamodb_local, tables, cooldown_s=0)
    grower.set_shard_count("STREAM", 2)
    writers = [facade(dynamodb_local, tables, metadata_cache_ttl_s=3600) for _ in range(3)]
    acknowledged = events("pre", 1500)
    assert all(o.ok for o in writers[0].put_events(acknowledged))
    for w in writers:
        w.metadata.for_writer("STREAM")  # every writer caches N = 2 ...

    stop = threading.Event()
    late: list[Event] = []

    def keep_writing(index: int, w: Dynashard) -> None:
        batch = 0
        while not stop.is_set() and batch < 40:
            evs = events(f"w{index}b{batch:02d}-", 50, start=T0 + timedelta(days=1 + index))
            assert all(o.ok for o in w.put_events(evs))
            late.extend(evs)
            batch += 1
            if batch == 5:
                w.metadata.invalidate("STREAM")  # ... and one of them refreshes mid-way

    reader = facade(dynamodb_local, tables)
    with ThreadPoolExecutor(4) as pool:
        futures = [pool.submit(keep_writing, i, w) for i, w in enumerate(writers)]
        seen: list[dict[str, Any]] = []
        cursor = None
        for step in range(10_000):
            if step == 2:
                assert grower.grow("STREAM", 5).changed
            if step == 4:
                assert grower.grow("STREAM", 11).changed
            page = reader.query_events("STREAM", limit=100, cursor=cursor)
            seen.extend(page.items)
            cursor = page.cursor
            if cursor is None:
                break
        stop.set()
        for f in futures:
            f.result()

    ids = [i["id"] for i in seen]
    assert len(ids) == len(set(ids)), "a page overlapped another"
    assert [i["ts"] + i["id"] for i in seen] == sorted(i["ts"] + i["id"] for i in seen)
    assert set(ordered_ids(acknowledged)) <= set(ids)
    # After the writers stop, one read returns exactly everything acknowledged.
    everything = acknowledged + late
    assert [i["id"] for i in read_all(reader, limit=500)] == ordered_ids(everything)
    assert grower.shard_info("STREAM").counts == {2, 5, 11}


def test_counters_under_concurrency(dynamodb_local: Any, tables: tuple[str, str]) -> None:
    ds = facade(dynamodb_local, tables)
    ds.set_shard_count(counter_key("UA"), 6)
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda by: ds.increment_counter("UA", by), range(1, 201)))
    assert ds.get_counter("UA").value == sum(range(1, 201))
    assert ds.increment_counter("UA", 10, idempotency_key="m1")
    assert not ds.increment_counter("UA", 10, idempotency_key="m1")
    assert ds.get_counter("UA").value == sum(range(1, 201)) + 10


def test_sqs_partial_batch_failure_reports_only_the_bad_record(
    dynamodb_local: Any, tables: tuple[str, str]
) -> None:
    data, meta = tables
    good = [e.to_json() for e in events("q", 30, key="QUEUE")]
    bodies = [json.dumps(e) for e in good[:10]]
    bodies.append(json.dumps({"key": "QUEUE", "id": "bad", "ts": "not a time"}))
    bodies.extend(json.dumps(e) for e in good[10:])
    event = sqs_event(sqs_record(b) for b in bodies)
    env = function_environment(dynamodb_local.endpoint_url, data_table=data, metadata_table=meta)
    with patched_environ(env):
        reset_function_caches()
        from functions.ingest import app

        response = app.sqs_handler(event, LambdaContext("dynashard-ingest"))
        reset_function_caches()
    bad_id = event["Records"][10]["messageId"]
    assert response == {"batchItemFailures": [{"itemIdentifier": bad_id}]}
    ds = facade(dynamodb_local, tables)
    assert [i["id"] for i in read_all(ds, key="QUEUE")] == [e["id"] for e in good]
