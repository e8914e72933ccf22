"""GSI1 bucket fan-out reads on DynamoDB Local: the same items in the same order as the
base-table read, for several windows and both orders, across pages with the cursor."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from dynashard import Dynashard, DynashardConfig, Event, names
from dynashard.core.buckets import TimeBucket
from dynashard.errors import CursorError, InvalidInputError
from sandbox.local_aws.aws_events import LambdaContext, api_gateway_event
from sandbox.tables import create_tables, data_and_metadata, delete_tables

pytestmark = pytest.mark.integration

KEY = "DEPARTURES#JFK"
T0 = datetime(2013, 1, 1, 18, tzinfo=UTC)
#: 1,500 events 2 min 31 s apart: about 2.6 days, so day buckets 2013-01-01..04.
EVENTS = [
    Event(key=KEY, id=f"f{i:05d}", ts=T0 + timedelta(seconds=151 * i), data={"i": i})
    for i in range(1500)
]


@pytest.fixture(scope="module")
def ds(dynamodb_local: Any) -> Iterator[Dynashard]:
    client = dynamodb_local.client(max_pool_connections=32)
    created = create_tables(client, suffix=f"-{uuid.uuid4().hex[:8]}")
    data, meta = data_and_metadata(created)
    facade = Dynashard(
        DynashardConfig(data, meta, endpoint_url=dynamodb_local.endpoint_url), client=client
    )
    facade.set_shard_count(KEY, 4)
    assert all(o.ok for o in facade.put_events(EVENTS[:700]))
    facade.set_shard_count(KEY, 8)  # a resize: GSI1 keys of both counts in one bucket
    assert all(o.ok for o in facade.put_events(EVENTS[700:]))
    await_index(facade, data, len(EVENTS))
    yield facade
    facade.close()
    delete_tables(client, created.values())


def await_index(facade: Dynashard, table: str, expected: int, timeout_s: float = 30.0) -> None:
    """Wait until GSI1 holds ``expected`` items (GSIs are updated asynchronously)."""
    deadline = time.monotonic() + timeout_s
    while True:
        count, start = 0, None
        while True:
            kw: dict[str, Any] = {"ExclusiveStartKey": start} if start else {}
            answer = facade.client.scan(TableName=table, IndexName="GSI1", Select="COUNT", **kw)
            count += answer["Count"]
            start = answer.get("LastEvaluatedKey")
            if start is None:
                break
        if count >= expected:
            return
        assert time.monotonic() < deadline, f"GSI1 holds {count} of {expected} items"
        time.sleep(0.05)


def read_all(ds: Dynashard, **kw: Any) -> tuple[list[str], list[Any]]:
    ids: list[str] = []
    plans = []
    cursor = None
    while True:
        page = ds.query_events(KEY, cursor=cursor, **kw)
        ids.extend(item["id"] for item in page.items)
        plans.append(page.plan)
        cursor = page.cursor
        if cursor is None:
            return ids, plans


WINDOWS = [
    # inside one bucket
    (T0 + timedelta(minutes=30), T0 + timedelta(hours=2)),
    # across a bucket boundary, unaligned both ends
    (T0 + timedelta(hours=5), T0 + timedelta(hours=30)),
    # the whole data set and more, aligned to days
    (datetime(2013, 1, 1, tzinfo=UTC), datetime(2013, 1, 5, tzinfo=UTC)),
    # a window with no events at all
    (datetime(2013, 2, 1, tzinfo=UTC), datetime(2013, 2, 3, tzinfo=UTC)),
]


@pytest.mark.parametrize("window", WINDOWS, ids=["one-bucket", "boundary", "all", "empty"])
@pytest.mark.parametrize("descending", [False, True], ids=["asc", "desc"])
@pytest.mark.parametrize("limit", [7, 100, 1000])
def test_gsi1_read_equals_base_read(
    ds: Dynashard, window: tuple[datetime, datetime], descending: bool, limit: int
) -> None:
    # Given a window of a key written under 4 then 8 shards
    start, end = window
    expected = sorted(
        (e for e in EVENTS if start <= e.ts < end), key=lambda e: e.sort_key, reverse=descending
    )
    kw: dict[str, Any] = {"start": start, "end": end, "descending": descending, "limit": limit}
    # When it is read on both paths, page by page
    base, base_plans = read_all(ds, path="base", **kw)
    gsi, gsi_plans = read_all(ds, consistent=False, path="gsi1", **kw)
    # Then both return the window's events, exactly once each, in the same order
    assert base == [e.id for e in expected]
    assert gsi == base
    assert {p.path.value for p in base_plans} == {"base"}
    assert {p.path.value for p in gsi_plans} == {"gsi1"}
    if len(expected) > limit:
        assert len(gsi_plans) >= 2  # the cursor carried the read across pages


def test_gsi1_page_of_one_bucket_queries_that_bucket_only(ds: Dynashard) -> None:
    # Given a window of four day buckets, read ascending with a small page
    start, end = datetime(2013, 1, 1, tzinfo=UTC), datetime(2013, 1, 5, tzinfo=UTC)
    page = ds.query_events(KEY, start=start, end=end, limit=10, consistent=False, path="gsi1")
    # Then the page came from the first bucket's GSI1 shards (written under N = 4 only),
    # not from all 4 + 8 + 8 + 8 streams of the window
    assert [i["id"] for i in page.items] == [e.id for e in EVENTS[:10]]
    assert page.shards_queried == 4
    assert page.plan is not None and page.plan.requests == 4 + 3  # G(first) + 1 per bucket
    assert page.plan.gsi1_shards == (4, 8, 8, 8)


def test_auto_plan_takes_gsi1_for_one_bucket_and_base_across_buckets(ds: Dynashard) -> None:
    one = ds.query_events(KEY, start=T0, end=T0 + timedelta(hours=1), consistent=False, path="auto")
    assert one.plan is not None and one.plan.path.value == "gsi1"
    assert one.plan.requests == 4  # the bucket was written under N = 4 only
    # newest first, a page starts in a bucket of 8 GSI1 shards: 8 + 2 > 8 base queries
    many = ds.query_events(
        KEY, start=T0, end=T0 + timedelta(days=2), consistent=False, descending=True
    )
    assert many.plan is not None and many.plan.path.value == "base"
    in_window = [e for e in EVENTS if e.ts < T0 + timedelta(days=2)]
    assert [i["id"] for i in many.items] == [e.id for e in in_window[::-1][:100]]
    # consistent=true (the default) is always the base table
    default = ds.query_events(KEY, start=T0, end=T0 + timedelta(hours=1))
    assert default.plan is not None and default.plan.path.value == "base"
    assert default.plan.reason.startswith("consistent=true")
    assert [i["id"] for i in default.items] == [i["id"] for i in one.items]


def test_cursor_keeps_its_path(ds: Dynashard) -> None:
    window = {"start": T0, "end": T0 + timedelta(hours=3), "limit": 5}
    first = ds.query_events(KEY, consistent=False, **window)
    assert first.plan is not None and first.plan.path.value == "gsi1"
    # A GSI1 cursor continues on GSI1 under auto, and is refused by the base table
    second = ds.query_events(KEY, consistent=False, cursor=first.cursor, **window)
    assert second.plan is not None and second.plan.path.value == "gsi1"
    assert [i["id"] for i in second.items] == [e.id for e in EVENTS[5:10]]
    with pytest.raises(CursorError):
        ds.query_events(KEY, cursor=first.cursor, **window)


def test_gsi1_refuses_what_it_cannot_serve(ds: Dynashard) -> None:
    with pytest.raises(InvalidInputError) as consistent:
        ds.query_events(KEY, start=T0, end=T0 + timedelta(hours=1), path="gsi1")
    assert consistent.value.field == "consistent"
    with pytest.raises(InvalidInputError) as unbounded:
        ds.query_events(KEY, consistent=False, path="gsi1")
    assert unbounded.value.field == "path"


def test_bucket_unit_is_the_writers(ds: Dynashard) -> None:
    assert ds.config.time_bucket is TimeBucket.DAY


@pytest.fixture(autouse=True)
def _cursor_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """The query function's settings: it signs its cursors with the key the stack gives it
    (64 characters); the facade it reads with is this module's (``facade=``)."""
    monkeypatch.setenv(names.ENV_DATA_TABLE, names.DEFAULT_DATA_TABLE)
    monkeypatch.setenv(names.ENV_METADATA_TABLE, names.DEFAULT_METADATA_TABLE)
    monkeypatch.setenv(names.ENV_CURSOR_KEY, "integration-cursor-key-" + "k" * 41)


def get_events(ds: Dynashard, **params: str) -> tuple[int, dict[str, Any]]:
    """GET /events through the query function's handler, on this module's facade."""
    from functions.query import app

    event = api_gateway_event("GET", "/events", query={"key": KEY, **params})
    response = app.handler(event, LambdaContext("dynashard-query"), facade=ds)
    return response["statusCode"], json.loads(response["body"])


@pytest.mark.parametrize("order", ["asc", "desc"])
def test_api_reads_gsi1_page_by_page_like_the_base_table(ds: Dynashard, order: str) -> None:
    # Given a window inside one day bucket, read through GET /events
    window = {"from": "2013-01-01T19:00:00Z", "to": "2013-01-01T23:30:00Z", "order": order}
    pages: dict[str, list[str]] = {}
    for consistent in ("true", "false"):
        ids, cursor, plans = [], None, set()
        while True:
            params = {**window, "limit": "25", "consistent": consistent}
            status, body = get_events(ds, **params, **({"cursor": cursor} if cursor else {}))
            assert status == 200
            ids.extend(item["id"] for item in body["items"])
            plans.add(body["plan"]["path"])
            cursor = body["cursor"]
            if cursor is None:
                break
        pages[consistent] = ids
        # Then consistent=true reads the base table, consistent=false plans GSI1
        assert plans == {"base" if consistent == "true" else "gsi1"}
    # And both return the same events in the same order
    assert pages["false"] == pages["true"]
    assert len(pages["true"]) == 108  # 4.5 h of one event every 151 s


def test_api_plan_and_errors(ds: Dynashard) -> None:
    window = {"from": "2013-01-01T19:00:00Z", "to": "2013-01-03T00:00:00Z"}
    status, body = get_events(ds, **window, consistent="false")
    assert status == 200
    assert body["plan"]["path"] == "gsi1"  # starts in the N = 4 bucket: 4 + 1 < 8
    assert body["plan"]["requests"] == 5
    assert "(up to 12 over 2 bucket(s))" in body["plan"]["reason"]
    status, body = get_events(ds, **window, consistent="false", order="desc")
    assert body["plan"]["path"] == "base"  # starts in the N = 8 bucket: 8 + 1 > 8
    assert body["plan"]["requests"] == 8
    status, body = get_events(ds, path="gsi1")
    assert status == 400 and body["field"] == "consistent"
    status, body = get_events(ds, path="gsi1", consistent="false")
    assert status == 400 and body["field"] == "path"


def test_bucket_written_while_cool_is_one_gsi1_query_after_the_key_grew(
    ds: Dynashard,
) -> None:
    # Given a key written cool (N = 1) on one day, then hot (N = 32) on a later day
    key = "DEPARTURES#COOLED"
    cool = [Event(key=key, id=f"c{i:03d}", ts=T0 + timedelta(minutes=i)) for i in range(200)]
    hot_day = T0 + timedelta(days=10)
    hot = [Event(key=key, id=f"h{i:03d}", ts=hot_day + timedelta(seconds=i)) for i in range(300)]
    assert all(o.ok for o in ds.put_events(cool))
    ds.set_shard_count(key, 32)
    assert all(o.ok for o in ds.put_events(hot))
    await_index(ds, ds.config.data_table, len(EVENTS) + len(cool) + len(hot))
    info = ds.shard_info(key)
    assert dict(info.gsi1_shards) == {"2013-01-01": 1, "2013-01-11": 32}
    # When a narrow window of the cool day is read with eventual consistency allowed
    window = {"start": T0 + timedelta(minutes=30), "end": T0 + timedelta(hours=2)}
    page = ds.query_events(key, consistent=False, limit=1000, **window)
    # Then one GSI1 query serves it instead of 32 base-table queries, with the same items
    assert page.plan is not None and page.plan.path.value == "gsi1"
    assert (page.plan.requests, page.queries) == (1, 1)
    assert page.plan.alternative is not None and page.plan.alternative.requests == 32
    base = ds.query_events(key, limit=1000, **window)
    assert base.shards_queried == 32 and base.queries >= 32  # shard 0 is read twice
    assert [i["id"] for i in page.items] == [i["id"] for i in base.items]
    assert [i["id"] for i in page.items] == [e.id for e in cool[30:120]]
    # And the hot day still fans out over its 32 GSI1 shards, as many as the base table
    hot_window = {"start": hot_day, "end": hot_day + timedelta(minutes=1)}
    hot_page = ds.query_events(key, consistent=False, limit=1000, path="gsi1", **hot_window)
    assert hot_page.shards_queried == 32
    assert [i["id"] for i in hot_page.items] == [e.id for e in hot[:60]]


def test_pruned_bucket_records_and_units_on_dynamodb_local(ds: Dynashard) -> None:
    """The watermark's conditions (string comparisons) and the unit set, on DynamoDB's
    own engine: a pruned bucket is never recorded again, the watermark never falls."""
    from dynashard.dynamodb.gsi_buckets import Gsi1BucketRecorder
    from dynashard.planning.reads import gsi1_shard_count

    key = f"W#{uuid.uuid4().hex[:6]}"
    ds.metadata.for_writer(key)
    table = ds.config.metadata_table

    def fresh() -> Gsi1BucketRecorder:
        return Gsi1BucketRecorder(ds.client, table)

    for day in (1, 2, 3):
        fresh().ensure(key, f"2013-01-0{day}", 8)
    fresh().ensure(key, "2013-01-04", 8, prune=["2013-01-01", "2013-01-02"])
    fresh().ensure(key, "2013-01-05", 8, prune=["2013-01-01"])  # stale: must not lower it
    fresh().ensure(key, "2013-01-02", 1)  # a late event after a shrink
    fresh().ensure_unit(key, "day")
    fresh().ensure_unit(key, "hour")
    info = ds.shard_info(key)
    assert info.gsi1_pruned == "2013-01-02"
    assert dict(info.gsi1_shards) == {"2013-01-03": 8, "2013-01-04": 8, "2013-01-05": 8}
    assert gsi1_shard_count(info, "2013-01-02") == info.max_count
    assert info.gsi1_units == frozenset({"day", "hour"})
