"""The read benchmark's pure parts: percentiles, the gather-then-sort baseline's pages
(equal to dynashard's reader on the same data) and the capacity-counting client."""

from __future__ import annotations

import statistics
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.reads import GatherThenSortReader, MeteredClient, PlainQueryReader, percentile
from dynashard.core.keys import physical_key
from dynashard.core.shard_info import ShardInfo
from dynashard.dynamodb.reader import ShardedReader
from dynashard.dynamodb.shard_metadata import ShardMetadata

TABLE = "data"


class MemoryClient:
    """Answers Query like DynamoDB over in-memory item collections, one per partition key.

    ``Limit`` stops a page (then a ``LastEvaluatedKey`` is returned, as DynamoDB does
    even when nothing follows); ``page_cap`` stands for the 1 MB page of a Query without
    a ``Limit``. Each answer reports ``ConsumedCapacity`` of one unit per item, at least
    one.
    """

    def __init__(self, page_cap: int = 7) -> None:
        self.items: dict[str, list[dict[str, Any]]] = {}
        self.page_cap = page_cap
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def put(self, pk: str, sk: str) -> None:
        ts, _, event_id = sk.partition("#")
        item = {
            "PK": {"S": pk},
            "SK": {"S": sk},
            "key": {"S": "K"},
            "id": {"S": event_id},
            "ts": {"S": ts},
        }
        self.items.setdefault(pk, []).append(item)

    def query(self, **request: Any) -> dict[str, Any]:
        with self.lock:
            self.requests.append(request)
        values = request["ExpressionAttributeValues"]
        pk, lo, hi = values[":pk"]["S"], values[":lo"]["S"], values[":hi"]["S"]
        ascending = request.get("ScanIndexForward", True)
        rows = sorted(
            (i for i in self.items.get(pk, []) if lo <= i["SK"]["S"] <= hi),
            key=lambda i: i["SK"]["S"],
            reverse=not ascending,
        )
        start = request.get("ExclusiveStartKey")
        if start is not None:
            after = start["SK"]["S"]
            rows = [
                i for i in rows if (i["SK"]["S"] > after if ascending else i["SK"]["S"] < after)
            ]
        limit = min(request.get("Limit", self.page_cap), self.page_cap)
        page = rows[:limit]
        response: dict[str, Any] = {
            "Items": page,
            "Count": len(page),
            "ConsumedCapacity": {"TableName": TABLE, "CapacityUnits": float(max(1, len(page)))},
            "ResponseMetadata": {"RetryAttempts": 0},
        }
        if len(page) == limit:
            response["LastEvaluatedKey"] = {"PK": page[-1]["PK"], "SK": page[-1]["SK"]}
        return response

    def get_item(self, **request: Any) -> dict[str, Any]:
        return {"ConsumedCapacity": {"CapacityUnits": 0.5}, "ResponseMetadata": {}}


class FixedStore:
    """A MetadataStore that always answers with the same ShardInfo (readers only read)."""

    def __init__(self, info: ShardInfo) -> None:
        self.info = info

    def get(self, key: str) -> ShardInfo | None:
        return self.info


@pytest.fixture(scope="module")
def pool() -> Iterator[ThreadPoolExecutor]:
    with ThreadPoolExecutor(8) as executor:
        yield executor


def sk_of(second: int, i: int) -> str:
    return f"2013-01-01T00:{second // 60:02d}:{second % 60:02d}.000000Z#e{i:04d}"


def library_pages(reader: ShardedReader, limit: int) -> list[list[str]]:
    pages, cursor = [], None
    while True:
        page = reader.query("K", limit=limit, cursor=cursor)
        pages.append([f"{i['ts']}#{i['id']}" for i in page.items])
        cursor = page.cursor
        if cursor is None:
            return [p for p in pages if p]


def baseline_pages(reader: GatherThenSortReader, shards: int, limit: int) -> list[list[str]]:
    pages, after = [], None
    while True:
        page = reader.page("K", shards, "0", ":", limit, after)
        pages.append(page.sort_keys)
        after = page.cursor
        if after is None:
            return [p for p in pages if p]


def test_percentile_interpolates_between_closest_ranks() -> None:
    # Given 1..100
    values = [float(v) for v in range(1, 101)]
    # Then the median falls between 50 and 51, p99 just past 99, the ends are the ends
    assert percentile(values, 50) == pytest.approx(50.5)
    assert percentile(values, 99) == pytest.approx(99.01)
    assert percentile(values, 0) == 1.0 and percentile(values, 100) == 100.0
    assert percentile([7.0], 99) == 7.0


@pytest.mark.parametrize(("values", "q"), [([], 50), ([1.0], -1), ([1.0], 100.5)])
def test_percentile_refuses_no_samples_and_bad_q(values: list[float], q: float) -> None:
    with pytest.raises(ValueError):
        percentile(values, q)


@given(st.lists(st.floats(0, 1e4, allow_nan=False), min_size=2, max_size=60))
def test_percentile_agrees_with_statistics_inclusive_quantiles(values: list[float]) -> None:
    # statistics.quantiles(method="inclusive") is the same type-7 estimator
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    for q in (1, 25, 50, 90, 99):
        assert percentile(values, q) == pytest.approx(cuts[q - 1], rel=1e-9, abs=1e-9)


@settings(max_examples=40, deadline=None)
@given(
    shards=st.integers(1, 8),
    seconds=st.lists(st.integers(0, 300), max_size=60),
    limit=st.integers(1, 20),
    seed=st.randoms(use_true_random=False),
)
def test_baseline_pages_equal_the_library_reader_pages(
    pool: ThreadPoolExecutor, shards: int, seconds: list[int], limit: int, seed: Any
) -> None:
    # Given events spread at random over N shards (ties in time broken by the id)
    client = MemoryClient()
    for i, second in enumerate(seconds):
        client.put(physical_key("K", seed.randrange(shards)), sk_of(second, i))
    info = ShardInfo("K", shards, 1, ((1, shards),))
    library = ShardedReader(client, TABLE, ShardMetadata(FixedStore(info)), pool)  # type: ignore[arg-type]
    baseline = GatherThenSortReader(client, TABLE, pool)

    # When both page through the whole key
    ours, theirs = library_pages(library, limit), baseline_pages(baseline, shards, limit)

    # Then the pages are the same events in the same order, and all of them, sorted
    assert theirs == ours
    assert [sk for page in theirs for sk in page] == sorted(
        sk_of(second, i) for i, second in enumerate(seconds)
    )


def test_baseline_reads_every_shard_to_the_end(pool: ThreadPoolExecutor) -> None:
    # Given 3 shards of 10 items each, pages cut at 7 items (a 1 MB page stand-in)
    client = MemoryClient(page_cap=7)
    for i in range(30):
        client.put(physical_key("K", i % 3), sk_of(i, i))
    # When the baseline reads a page of 5
    page = GatherThenSortReader(client, TABLE, pool).page("K", 3, "0", ":", 5, None)
    # Then it followed LastEvaluatedKey on every shard (2 Queries each) for 5 items
    assert page.sort_keys == [sk_of(i, i) for i in range(5)]
    assert page.cursor == sk_of(4, 4)
    assert len(client.requests) == 6


def test_metered_client_asks_for_capacity_and_counts_it() -> None:
    # Given a metered client over 12 items on one key
    inner = MemoryClient(page_cap=100)
    for i in range(12):
        inner.put("K#0", sk_of(i, i))
    metered = MeteredClient(inner)
    # When a plain reader reads two pages of 10 and a GetItem is sent
    reader = PlainQueryReader(metered, TABLE)
    first = reader.page("K#0", "0", ":", 10, None)
    second = reader.page("K#0", "0", ":", 10, first.cursor)
    metered.get_item(TableName="meta", Key={})
    # Then every Query asked for TOTAL capacity, and the tally holds 2 Queries, 12 RCU
    assert all(r["ReturnConsumedCapacity"] == "TOTAL" for r in inner.requests)
    assert len(first.sort_keys) == 10 and len(second.sort_keys) == 2 and second.cursor is None
    tally = metered.tally()
    assert (tally.queries, tally.query_rcu, tally.other_requests, tally.other_rcu) == (
        2,
        12.0,
        1,
        0.5,
    )
