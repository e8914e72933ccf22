"""Per-bucket GSI1 shard counts: writers record them, readers size GSI1 reads by them."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dynashard import Dynashard, Event
from dynashard.core.buckets import TimeBucket
from dynashard.core.merge import Cursor
from dynashard.core.schema import DEFAULT_SCHEMA, TableSchema
from dynashard.dynamodb.gsi_buckets import Gsi1BucketRecorder, records_to_prune
from dynashard.dynamodb.gsi_reader import GsiBucketReader, gsi1_fingerprint, is_gsi1_cursor
from dynashard.errors import InvalidInputError, MetadataError
from dynashard.planning.reads import gsi1_shard_count
from infra.table_specs import METADATA_TABLE

T0 = datetime(2013, 1, 1, 10, tzinfo=UTC)


class CountingClient:
    """Delegates to a real client; counts UpdateItem calls, or fails them."""

    def __init__(self, inner: Any, fail: bool = False) -> None:
        self.inner = inner
        self.fail = fail
        self.updates = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def update_item(self, **request: Any) -> Any:
        self.updates += 1
        if self.fail:
            error = {"Error": {"Code": "InternalServerError", "Message": "boom"}}
            raise ClientError(error, "UpdateItem")  # type: ignore[arg-type]
        return self.inner.update_item(**request)


def test_writes_record_each_bucket_once_and_only_raise_it(facade: Dynashard) -> None:
    # Given a key written on two days under N = 1, then on the second day under N = 4
    key = "DEPARTURES#JFK"
    day1 = [Event(key=key, id=f"a{i}", ts=T0 + timedelta(minutes=i)) for i in range(5)]
    day2 = [Event(key=key, id=f"b{i}", ts=T0 + timedelta(days=1, minutes=i)) for i in range(5)]
    assert all(o.ok for o in facade.put_events(day1 + day2))
    facade.set_shard_count(key, 4)
    facade.metadata.invalidate(key)
    assert all(o.ok for o in facade.put_events(day2))
    facade.set_shard_count(key, 2)  # a shrink never lowers a bucket's record
    facade.metadata.invalidate(key)
    assert all(o.ok for o in facade.put_events(day2))
    # Then the metadata says which counts each bucket's GSI1 keys can have
    info = facade.shard_info(key)
    assert dict(info.gsi1_shards) == {"2013-01-01": 1, "2013-01-02": 4}
    assert gsi1_shard_count(info, "2013-01-01") == 1
    assert gsi1_shard_count(info, "2013-01-03") == 4  # no record: every shard ever had
    assert info.to_json()["number_of_shards"] == 2


def test_recorder_caches_and_never_creates_an_item(ddb_client: Any) -> None:
    client = CountingClient(ddb_client)
    recorder = Gsi1BucketRecorder(client, METADATA_TABLE.default_name)  # type: ignore[arg-type]
    # A key without a metadata item: the record is refused, no item appears
    recorder.ensure("NEVER#SEEN", "2013-01-01", 4)
    got = ddb_client.get_item(
        TableName=METADATA_TABLE.default_name, Key={"key": {"S": "NEVER#SEEN"}}
    )
    assert "Item" not in got
    # A known count is not written again
    recorder.ensure("NEVER#SEEN", "2013-01-01", 2)
    recorder.ensure("NEVER#SEEN", "2013-01-01", 4)
    assert client.updates == 1


class CallLog:
    """Delegates to a real client; logs the name of every operation called."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if not callable(attr) or name.startswith(("get_paginator", "meta", "_")):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(name)
            return attr(*args, **kwargs)

        return call


def test_a_new_keys_first_batch_creates_its_metadata_with_its_gsi1_records(
    ddb_client: Any,
) -> None:
    # Given a facade whose every DynamoDB call is logged, and a key never written
    from dynashard import DynashardConfig
    from infra.table_specs import DATA_TABLE

    log = CallLog(ddb_client)
    ds = Dynashard(
        DynashardConfig(DATA_TABLE.default_name, METADATA_TABLE.default_name, max_workers=2),
        client=log,  # type: ignore[arg-type]
    )
    key = f"NEW#{uuid.uuid4().hex[:6]}"
    # When its first batch, of one day, is written
    assert all(o.ok for o in ds.put_events([Event(key=key, id=f"a{i}", ts=T0) for i in range(3)]))
    # Then the metadata is read, then created with the key's GSI1 unit and the bucket's
    # record (one PutItem), then the items written: no UpdateItem for the records
    assert log.calls == ["get_item", "put_item", "batch_write_item"]
    info = ds.shard_info(key)
    assert dict(info.gsi1_shards) == {"2013-01-01": 1}
    assert info.gsi1_units == frozenset({"day"})
    # And a bucket the creation did not cover is recorded as before, by one UpdateItem
    log.calls.clear()
    assert ds.put_events([Event(key=key, id="b", ts=T0 + timedelta(days=1))])[0].ok
    assert log.calls == ["update_item", "batch_write_item"]
    assert dict(ds.shard_info(key).gsi1_shards) == {"2013-01-01": 1, "2013-01-02": 1}
    ds.close()


def test_failed_record_fails_the_bucket_events_not_the_others(facade: Dynashard) -> None:
    # Given a key whose metadata exists without GSI1 records (a key created with its
    # first batch's records takes no UpdateItem for them), and the metadata table
    # failing the bucket records
    facade.metadata.for_writer("K")
    facade.gsi1_recorder = Gsi1BucketRecorder(
        CountingClient(facade.client, fail=True),  # type: ignore[arg-type]
        METADATA_TABLE.default_name,
    )
    events = [Event(key="K", id=f"e{i}", ts=T0) for i in range(3)]
    # When events are written
    outcomes = facade.put_events(events)
    # Then each fails, naming the cause, and none is in the table (a GSI1 reader would
    # not know which shards to query for it)
    assert [o.ok for o in outcomes] == [False] * 3
    assert all(o.error and o.error.startswith("MetadataError: recording") for o in outcomes)
    assert facade.query_events("K").items == []
    with pytest.raises(MetadataError):
        facade.gsi1_recorder.ensure("K", "2013-01-01", 1)


def test_key_families_get_their_own_time_bucket(ddb_client: Any) -> None:
    # Given departures bucketed by hour, everything else by day (the default)
    from dynashard import DynashardConfig
    from dynashard.lambda_kit.settings import FunctionSettings
    from infra.table_specs import DATA_TABLE

    settings = FunctionSettings.model_validate(
        {
            "DYNASHARD_DATA_TABLE": DATA_TABLE.default_name,
            "DYNASHARD_METADATA_TABLE": METADATA_TABLE.default_name,
            "DYNASHARD_TIME_BUCKETS": "DEPARTURES#=hour",
        }
    )
    config: DynashardConfig = settings.to_config()
    ds = Dynashard(config, client=ddb_client)
    events = [
        Event(key="DEPARTURES#JFK", id="d1", ts=T0),
        Event(key="ARRIVALS#JFK", id="a1", ts=T0),
    ]
    assert all(o.ok for o in ds.put_events(events))
    # Then each item's GSI1 key and each bucket record uses its family's unit
    scanned = ddb_client.scan(TableName=DATA_TABLE.default_name)["Items"]
    assert sorted(i["GSI1PK"]["S"] for i in scanned) == [
        "ARRIVALS#JFK#2013-01-01#0",
        "DEPARTURES#JFK#2013-01-01T10#0",
    ]
    assert dict(ds.shard_info("DEPARTURES#JFK").gsi1_shards) == {"2013-01-01T10": 1}
    # And a GSI1 read of the hour bucket finds the event
    page = ds.query_events(
        "DEPARTURES#JFK",
        start=T0,
        end=T0 + timedelta(minutes=5),
        consistent=False,
        path="gsi1",
    )
    assert [i["id"] for i in page.items] == ["d1"]
    assert page.plan is not None and page.plan.buckets == ("2013-01-01T10",)
    ds.close()


def test_malformed_time_buckets_name_the_setting() -> None:
    from dynashard.core.buckets import parse_time_buckets
    from dynashard.errors import InvalidInputError

    for text in ("DEPARTURES#", "=hour", "X=week", "A=hour,A=day"):
        with pytest.raises(InvalidInputError) as info:
            parse_time_buckets(text)
        assert info.value.field == "time_buckets"


class FailingGsiClient(CountingClient):
    """Fails the GSI1 Queries of one GSI1 partition key."""

    def __init__(self, inner: Any, failing_pk: str) -> None:
        super().__init__(inner)
        self.failing_pk = failing_pk

    def query(self, **request: Any) -> Any:
        pk = request["ExpressionAttributeValues"][":pk"]["S"]
        if request.get("IndexName") == "GSI1" and pk == self.failing_pk:
            error = {"Error": {"Code": "InternalServerError", "Message": "boom"}}
            raise ClientError(error, "Query")  # type: ignore[arg-type]
        return self.inner.query(**request)


def test_failed_gsi1_query_fails_the_read_or_is_named_when_partial(
    facade: Dynashard, ddb_client: Any
) -> None:
    from dynashard.errors import ShardQueryError

    # Given a key on 2 shards and a GSI1 partition that fails its queries
    facade.set_shard_count("K", 2)
    events = [Event(key="K", id=f"e{i:02d}", ts=T0 + timedelta(minutes=i)) for i in range(20)]
    assert all(o.ok for o in facade.put_events(events))
    facade.client = FailingGsiClient(ddb_client, "K#2013-01-01#1")  # type: ignore[assignment]
    window: dict[str, Any] = {
        "start": T0,
        "end": T0 + timedelta(hours=1),
        "consistent": False,
        "path": "gsi1",
    }
    # When it is read without partial results, the read fails naming the GSI1 key
    with pytest.raises(ShardQueryError) as info:
        facade.query_events("K", **window)
    assert info.value.shards == ["GSI1:K#2013-01-01#1"]
    # And with partial results, the healthy partition is served and the other named
    page = facade.query_events("K", allow_partial=True, **window)
    assert page.missing_shards == ["GSI1:K#2013-01-01#1"]
    healthy = [e.id for e in events if facade.put_events([e])[0].physical_key == "K#0"]
    assert 0 < len(healthy) < len(events)
    assert [i["id"] for i in page.items] == healthy


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    minutes=st.lists(st.integers(0, 3 * 24 * 60), min_size=0, max_size=60, unique=True),
    redeliver=st.integers(0, 10),
    window=st.tuples(st.integers(0, 3 * 24 * 60), st.integers(1, 3 * 24 * 60)),
    limit=st.integers(1, 30),
    descending=st.booleans(),
    unit=st.sampled_from(["hour", "day"]),
)
def test_gsi1_pages_equal_base_pages(
    ddb_client: Any,
    minutes: list[int],
    redeliver: int,
    window: tuple[int, int],
    limit: int,
    descending: bool,
    unit: str,
) -> None:
    """Property: over a resize (1 -> 3 shards) with redelivered events stored twice,
    a GSI1 read returns the base read's events, once each, in the same order."""
    from dynashard import DynashardConfig
    from dynashard.core.buckets import TimeBucket
    from infra.table_specs import DATA_TABLE

    key = f"K{uuid.uuid4().hex[:6]}"
    config = DynashardConfig(
        DATA_TABLE.default_name, METADATA_TABLE.default_name, time_bucket=TimeBucket(unit)
    )
    ds = Dynashard(config, client=ddb_client)
    events = [Event(key=key, id=f"e{m}", ts=T0 + timedelta(minutes=m)) for m in minutes]
    half = len(events) // 2
    assert all(o.ok for o in ds.put_events(events[:half]))
    ds.set_shard_count(key, 3)
    ds.metadata.invalidate(key)
    # the first events again, under N = 3: some land on a second item (invariant 2)
    assert all(o.ok for o in ds.put_events(events[half:] + events[:redeliver]))
    start = T0 + timedelta(minutes=min(window))
    end = start + timedelta(minutes=max(window))

    def pages(**path: Any) -> list[str]:
        ids: list[str] = []
        cursor = None
        while True:
            page = ds.query_events(
                key, start=start, end=end, limit=limit, descending=descending, cursor=cursor, **path
            )
            ids.extend(i["id"] for i in page.items)
            cursor = page.cursor
            if cursor is None:
                return ids

    expected = sorted((e for e in events if start <= e.ts < end), key=lambda e: e.sort_key)
    base = pages(path="base")
    assert base == [e.id for e in (expected[::-1] if descending else expected)]
    assert pages(path="gsi1", consistent=False) == base
    ds.close()


def test_records_stay_bounded_and_pruned_buckets_read_every_shard(
    facade: Dynashard, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a key that may keep only 3 bucket records
    monkeypatch.setattr("dynashard.dynamodb.gsi_buckets.MAX_RECORDS", 3)
    key = "DEPARTURES#EWR"
    # When it is written on 6 days, one day at a time (each write sees the records so far)
    for day in range(6):
        facade.metadata.invalidate(key)
        events = [Event(key=key, id=f"d{day}-{i}", ts=T0 + timedelta(days=day)) for i in range(3)]
        assert all(o.ok for o in facade.put_events(events))
    # Then only the newest 3 records remain, and an old bucket falls back to every shard
    info = facade.shard_info(key)
    assert [label for label, _ in info.gsi1_shards] == ["2013-01-04", "2013-01-05", "2013-01-06"]
    assert gsi1_shard_count(info, "2013-01-01") == info.max_count


def test_records_to_prune_keeps_the_new_bucket_and_removes_the_oldest() -> None:
    recorded = [f"2013-01-{d:02d}" for d in range(1, 11)]
    assert records_to_prune(recorded, "2013-01-11", limit=8) == [
        "2013-01-01",
        "2013-01-02",
        "2013-01-03",
    ]
    assert records_to_prune(recorded, "2013-01-05", limit=10) == []
    assert "2013-01-10" not in records_to_prune(recorded, "2013-01-10", limit=2)


@pytest.mark.parametrize("path", ["base", "auto"])
def test_a_planned_read_that_takes_the_base_table_reads_the_metadata_once(
    facade: Dynashard, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    # Given a key written on one day, and a count of the metadata reads
    key = "DEPARTURES#LGA"
    assert all(o.ok for o in facade.put_events([Event(key=key, id="x", ts=T0)]))
    reads: list[str] = []
    for_reader = facade.metadata.for_reader
    monkeypatch.setattr(facade.metadata, "for_reader", lambda k: reads.append(k) or for_reader(k))
    # When an eventually consistent read over 3 day buckets (GSI1: 3 queries, base: 1) is
    # forced, or planned, onto the base table
    page = facade.query_events(
        key, start=T0, end=T0 + timedelta(days=3), consistent=False, path=path
    )
    # Then the planner's metadata read served the base read too
    assert [i["id"] for i in page.items] == ["x"]
    assert page.plan is not None and page.plan.path == "base"
    assert reads == [key]


# --- GsiBucketReader's refusals and its fingerprint (mutation testing, issue 38) ---------


class NoCalls:
    """A DynamoDB client that fails the test if the reader sends any request."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"a refused read called {name}")


def _gsi_reader(schema: TableSchema = DEFAULT_SCHEMA) -> GsiBucketReader:
    return GsiBucketReader(NoCalls(), "data", ThreadPoolExecutor(1), schema=schema)  # type: ignore[arg-type]


def test_a_gsi_read_of_a_table_without_the_gsi_is_refused_as_field_path() -> None:
    # Given a GSI reader over a table whose schema has no GSI
    reader = _gsi_reader(TableSchema(gsi_name=None))
    # When a window is read from it
    with pytest.raises(InvalidInputError) as info:
        reader.query(
            "K", start=T0, end=T0 + timedelta(hours=1), unit=TimeBucket.DAY,
            buckets=["2013-01-01"], gsi1_shards=[1],
        )  # fmt: skip
    # Then it is refused before any request, naming the read's path and why
    assert info.value.field == "path"
    assert "no GSI configured" in str(info.value)


@pytest.mark.parametrize("span", [timedelta(0), timedelta(microseconds=-1)])
def test_an_empty_or_inverted_gsi_window_is_refused_as_field_from(span: timedelta) -> None:
    # Given a window whose end is its start, or before it
    # When GSI1 is asked for it
    with pytest.raises(InvalidInputError) as info:
        _gsi_reader().query(
            "K", start=T0, end=T0 + span, unit=TimeBucket.DAY,
            buckets=["2013-01-01"], gsi1_shards=[1],
        )  # fmt: skip
    # Then it is refused before any request, naming ``from``
    assert info.value.field == "from"
    assert "must be earlier than to" in str(info.value)


def test_the_gsi1_fingerprint_changes_with_each_part_of_the_query() -> None:
    # Given one GSI1 query and, for each part, the same query with that part changed
    base = ("K", T0, T0 + timedelta(days=1), False, TimeBucket.DAY)
    variants = [
        ("L", *base[1:]),
        (base[0], T0 - timedelta(hours=1), *base[2:]),
        (*base[:2], T0 + timedelta(days=2), *base[3:]),
        (*base[:3], True, base[4]),
        (*base[:4], TimeBucket.HOUR),
    ]
    # When they are fingerprinted
    prints = [gsi1_fingerprint(*q) for q in [base, *variants]]
    # Then every one differs: a cursor of one is refused by every other
    assert len(set(prints)) == len(prints)
    cursor = Cursor(prints[0], "2013-01-01T10:00:00.000000Z#e1").encode()
    assert is_gsi1_cursor(cursor, *base)
    assert not any(is_gsi1_cursor(cursor, *q) for q in variants)


@pytest.mark.parametrize("limit", [0, 1001])
def test_a_gsi_page_limit_out_of_range_is_refused_as_field_limit(limit: int) -> None:
    # Given a page limit outside 1..1000
    # When GSI1 is asked for such a page
    with pytest.raises(InvalidInputError) as info:
        _gsi_reader().query(
            "K", start=T0, end=T0 + timedelta(hours=1), unit=TimeBucket.DAY,
            buckets=["2013-01-01"], gsi1_shards=[1], limit=limit,
        )  # fmt: skip
    # Then it is refused before any request, naming ``limit`` and its range
    assert info.value.field == "limit"
    assert f"must be within 1..1000, got {limit}" in str(info.value)


class GsiQueryLog(CountingClient):
    """Delegates to a real client; logs the GSI1 partition key of each Query."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.gsi1_pks: list[str] = []

    def query(self, **request: Any) -> Any:
        if request.get("IndexName") == "GSI1":
            self.gsi1_pks.append(request["ExpressionAttributeValues"][":pk"]["S"])
        return self.inner.query(**request)


@pytest.mark.parametrize("limit", [1, 1000])
def test_a_gsi_page_limit_at_either_end_of_its_range_is_served(
    facade: Dynashard, ddb_client: Any, limit: int
) -> None:
    # Given a key with 3 events in one day bucket
    events = [Event(key="K", id=f"e{i}", ts=T0 + timedelta(minutes=i)) for i in range(3)]
    assert all(o.ok for o in facade.put_events(events))
    reader = GsiBucketReader(ddb_client, facade.config.data_table, ThreadPoolExecutor(2))
    # When GSI1 is asked for a page of 1 item, or of the 1,000 items of the upper bound
    page = reader.query(
        "K", start=T0, end=T0 + timedelta(hours=1), unit=TimeBucket.DAY,
        buckets=["2013-01-01"], gsi1_shards=[1], limit=limit,
    )  # fmt: skip
    # Then it is served: the first item and a cursor, or every item and no cursor
    assert [i["id"] for i in page.items] == ["e0", "e1", "e2"][:limit]
    assert (page.cursor is None) == (limit == 1000)


def test_a_gsi_page_filled_by_a_bucket_queries_no_later_bucket(
    facade: Dynashard, ddb_client: Any
) -> None:
    # Given a key with 2 events on one day and 1 on the next
    days = [T0, T0 + timedelta(minutes=1), T0 + timedelta(days=1)]
    assert all(o.ok for o in facade.put_events(
        [Event(key="K", id=f"e{i}", ts=ts) for i, ts in enumerate(days)]
    ))  # fmt: skip
    client = GsiQueryLog(ddb_client)
    reader = GsiBucketReader(client, facade.config.data_table, ThreadPoolExecutor(2))  # type: ignore[arg-type]
    window: dict[str, Any] = {
        "start": T0, "end": T0 + timedelta(days=2), "unit": TimeBucket.DAY,
        "buckets": ["2013-01-01", "2013-01-02"], "gsi1_shards": [1, 1], "limit": 2,
    }  # fmt: skip
    # When a page of 2 is read: the first day's bucket fills it exactly
    page = reader.query("K", **window)
    # Then the page holds the first day's events and a cursor, and the next day's GSI1
    # partition was not queried
    assert [i["id"] for i in page.items] == ["e0", "e1"]
    assert page.cursor is not None
    assert client.gsi1_pks == ["K#2013-01-01#0"]
    # And the cursor's page holds the next day's event, and no cursor
    page = reader.query("K", cursor=page.cursor, **window)
    assert [i["id"] for i in page.items] == ["e2"]
    assert page.cursor is None
