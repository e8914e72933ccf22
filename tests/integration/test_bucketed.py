"""Time-bucketed keys on DynamoDB Local: write then read across day buckets, one bucket
grown while the others stay at one shard, and the functions configured by environment."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from dynashard import Dynashard, DynashardConfig, Event
from dynashard.core.families import parse_bucketed_keys
from sandbox.env_vars import function_environment, patched_environ, reset_function_caches
from sandbox.local_aws.aws_events import LambdaContext
from sandbox.tables import create_tables, data_and_metadata, delete_tables

pytestmark = pytest.mark.integration

T0 = datetime(2026, 6, 22, tzinfo=UTC)
DAYS = 4
EVENTS_DIR = Path(__file__).resolve().parents[2] / "events"
WINDOW = {"start": T0, "end": T0 + timedelta(days=DAYS)}


@pytest.fixture
def tables(dynamodb_local: Any) -> Iterator[tuple[str, str]]:
    client = dynamodb_local.client()
    created = create_tables(client, suffix=f"-{uuid.uuid4().hex[:8]}")
    yield data_and_metadata(created)
    delete_tables(client, created.values())


@pytest.fixture
def ds(dynamodb_local: Any, tables: tuple[str, str]) -> Iterator[Dynashard]:
    data, meta = tables
    config = DynashardConfig(
        data,
        meta,
        endpoint_url=dynamodb_local.endpoint_url,
        cooldown_s=0,
        bucketed_keys=parse_bucketed_keys("OPS_LOG=day,THREAT#=month"),
    )
    facade = Dynashard(config, client=dynamodb_local.client(max_pool_connections=32))
    yield facade
    facade.close()


def ops_events(per_day: int) -> list[Event]:
    step = timedelta(days=1) / per_day
    return [
        Event(key="OPS_LOG", id=f"op{d}-{i:04d}", ts=T0 + timedelta(days=d) + i * step)
        for d in range(DAYS)
        for i in range(per_day)
    ]


def read_pages(ds: Dynashard, limit: int, descending: bool) -> list[list[dict[str, Any]]]:
    pages, cursor = [], None
    while True:
        page = ds.query_events(
            "OPS_LOG", limit=limit, descending=descending, cursor=cursor, **WINDOW
        )
        pages.append(page.items)
        cursor = page.cursor
        if cursor is None:
            return pages


def expected_ids(events: list[Event], descending: bool) -> list[str]:
    return [e.id for e in sorted(events, key=lambda e: e.sort_key, reverse=descending)]


@pytest.mark.parametrize("descending", [False, True])
def test_pages_cross_day_buckets_in_order(ds: Dynashard, descending: bool) -> None:
    # Given 4 days of 50 events each, written under the family key
    written = ops_events(50)
    assert all(o.ok for o in ds.put_events(written))
    # When the window is read in pages of 33 (pages straddle every day boundary)
    pages = read_pages(ds, 33, descending)
    # Then all 200 come back once, in exact order, under the family key
    ids = [i["id"] for p in pages for i in p]
    assert ids == expected_ids(written, descending)
    assert {i["key"] for p in pages for i in p} == {"OPS_LOG"}
    assert [len(p) for p in pages] == [33] * 6 + [2]
    # And each day is a logical key of its own
    for d in range(DAYS):
        info = ds.shard_info(f"OPS_LOG#2026-06-2{2 + d}")
        assert info.stored and info.number_of_shards == 1


@pytest.mark.parametrize("descending", [False, True])
def test_one_bucket_at_four_shards_the_others_at_one(ds: Dynashard, descending: bool) -> None:
    # Given the second day's bucket grown to N = 4 (as the scaler would) before its writes
    hot = "OPS_LOG#2026-06-23"
    assert ds.grow(hot, 4).current == 4
    written = ops_events(60)
    outcomes = ds.put_events(written)
    assert all(o.ok for o in outcomes)
    hot_shards = {o.physical_key for o in outcomes if (o.physical_key or "").startswith(hot)}
    assert hot_shards == {f"{hot}#{s}" for s in range(4)}
    assert ds.shard_info("OPS_LOG#2026-06-22").number_of_shards == 1
    # When read in pages of 25
    pages = read_pages(ds, 25, descending)
    # Then the read still returns everything, in order
    assert [i["id"] for p in pages for i in p] == expected_ids(written, descending)


def test_a_bucket_written_at_n_then_grown_keeps_every_item(ds: Dynashard) -> None:
    # Given a bucket written at N = 1, grown to 4, written again (invariant 3 per bucket)
    first = ops_events(20)
    assert all(o.ok for o in ds.put_events(first))
    assert ds.grow("OPS_LOG#2026-06-24", 4).changed
    later = [
        Event(key="OPS_LOG", id=f"late{i}", ts=T0 + timedelta(days=2, minutes=7 * i + 1))
        for i in range(20)
    ]
    assert all(o.ok for o in ds.put_events(later))
    pages = read_pages(ds, 7, False)
    assert [i["id"] for p in pages for i in p] == expected_ids(first + later, False)


@pytest.mark.parametrize("descending", [False, True])
def test_a_write_between_pages_at_a_bucket_end_is_read(ds: Dynashard, descending: bool) -> None:
    # Given 4 days of 10 events, the first day's bucket grown to 4 shards, read in pages of
    # 10: the first page fills exactly at the end of its day (day 0 ascending, day 3
    # descending)
    day = DAYS - 1 if descending else 0
    assert ds.grow(f"OPS_LOG#2026-06-2{2 + day}", 4).current == 4
    written = ops_events(10)
    assert all(o.ok for o in ds.put_events(written))
    first = ds.query_events("OPS_LOG", limit=10, descending=descending, **WINDOW)
    assert [i["id"] for i in first.items] == expected_ids(written, descending)[:10]
    assert first.cursor is not None
    # When events are written into that bucket just past the cursor, on several shards
    # (after the day's last event ascending; descending, at the day's first instant, the
    # time of its first event op3-0000, with ids that sort before it)
    base = T0 + timedelta(days=day)
    late = [
        Event(
            key="OPS_LOG",
            id=f"late{i}",
            ts=base if descending else base + timedelta(hours=23, minutes=i),
        )
        for i in range(6)
    ]
    assert all(o.ok for o in ds.put_events(late))
    # Then the following pages hold them first, and the read holds every event once, in order
    rest: list[str] = []
    cursor = first.cursor
    while cursor is not None:
        page = ds.query_events("OPS_LOG", limit=10, descending=descending, cursor=cursor, **WINDOW)
        rest.extend(i["id"] for i in page.items)
        cursor = page.cursor
    assert sorted(rest[:6]) == [e.id for e in late]
    assert [i["id"] for i in first.items] + rest == expected_ids(written + late, descending)


def load_event(name: str) -> dict[str, Any]:
    """A fresh copy of ``events/<name>.json``."""
    return dict(json.loads((EVENTS_DIR / f"{name}.json").read_text()))


def with_params(event: dict[str, Any], params: dict[str, str]) -> dict[str, Any]:
    """The event with its query string replaced."""
    return {
        **event,
        "queryStringParameters": dict(params),
        "multiValueQueryStringParameters": {k: [v] for k, v in params.items()},
    }


def test_the_functions_bucket_by_their_environment(
    dynamodb_local: Any, tables: tuple[str, str]
) -> None:
    from functions.ingest import app as ingest
    from functions.query import app as query

    data, meta = tables
    env = function_environment(
        dynamodb_local.endpoint_url,
        data_table=data,
        metadata_table=meta,
        extra={"DYNASHARD_BUCKETED_KEYS": "THREAT#=month"},
    )
    threats = [
        {"key": "THREAT#brand-abc", "id": f"t{m}{k}", "ts": f"2026-0{m}-1{k}T08:00:00Z"}
        for m in (5, 6, 7)
        for k in (1, 2)
    ]
    post = load_event("api_post_events_batch")
    post["body"] = json.dumps({"events": threats})
    with patched_environ(env):
        reset_function_caches()
        try:
            written = ingest.api_handler(post, LambdaContext("dynashard-ingest"))
            assert written["statusCode"] == 200, written["body"]
            params = {
                "key": "THREAT#brand-abc",
                "from": "2026-05-01",
                "to": "2026-08-01",
                "limit": "4",
            }
            get = with_params(load_event("api_get_events"), params)
            first = json.loads(query.handler(get, LambdaContext("dynashard-query"))["body"])
            assert [i["id"] for i in first["items"]] == ["t51", "t52", "t61", "t62"]
            get = with_params(get, {**params, "cursor": first["cursor"]})
            second = json.loads(query.handler(get, LambdaContext("dynashard-query"))["body"])
            assert [i["id"] for i in second["items"]] == ["t71", "t72"]
            assert second["cursor"] is None
            shards = load_event("api_get_shards")
            shards["path"] = "/shards/THREAT%23brand-abc%232026-06"
            shards["pathParameters"] = {"key": "THREAT%23brand-abc%232026-06"}
            info = json.loads(query.handler(shards, LambdaContext("dynashard-query"))["body"])
            assert info["key"] == "THREAT#brand-abc#2026-06"
        finally:
            reset_function_caches()
