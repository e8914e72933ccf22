"""The reader's parallel fan-out: later shard pages are fetched ahead, in parallel, and
the merged result is exactly the sorted union whatever the paging (invariant 4)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dynashard.core.keys import physical_key
from dynashard.core.shard_info import ShardInfo
from dynashard.dynamodb.reader import BARE_KEY_STREAM, ShardedReader, physical_keys_to_query
from dynashard.dynamodb.shard_metadata import ShardMetadata
from dynashard.errors import ShardQueryError

from ..fakes import client_error

TABLE = "data"


class MemoryQueryClient:
    """Answers Query like DynamoDB over an in-memory item collection per partition key.

    ``Limit`` (capped at ``page_cap``, which stands for Query's 1 MB page) stops a page
    and then, as in DynamoDB, a ``LastEvaluatedKey`` is returned even when nothing
    follows. Each Query sleeps ``delay_s`` and records its start and end times.
    """

    def __init__(self, delay_s: float = 0.0, page_cap: int | None = None) -> None:
        self.items: dict[str, list[dict[str, Any]]] = {}
        self.delay_s = delay_s
        self.page_cap = page_cap
        self.calls: list[tuple[str, float, float]] = []
        self.failing: set[str] = set()
        self.lock = threading.Lock()

    def put(self, pk: str, sk: str) -> None:
        ts, _, event_id = sk.partition("#")
        item = {
            "PK": {"S": pk},
            "SK": {"S": sk},
            # the logical key, as the writer stores it ("K#1" -> "K"; a bare key is its own)
            "key": {"S": pk.rpartition("#")[0] or pk},
            "id": {"S": event_id},
            "ts": {"S": ts},
            "data": {"M": {}},
        }
        self.items.setdefault(pk, []).append(item)

    def query(self, **request: Any) -> dict[str, Any]:
        started = time.perf_counter()
        values = request["ExpressionAttributeValues"]
        # an adopted key's bare key may be read with one side or both unbounded
        pk, lo, hi = values[":pk"]["S"], values.get(":lo", {"S": ""}), values.get(":hi")
        lo, hi = lo["S"], "\U0010ffff" if hi is None else hi["S"]
        if self.delay_s:
            time.sleep(self.delay_s)
        with self.lock:
            self.calls.append((pk, started, time.perf_counter()))
        if pk in self.failing:
            raise client_error("InternalServerError", f"injected failure of {pk}")
        ascending = request["ScanIndexForward"]
        rows = sorted(
            (i for i in self.items.get(pk, []) if lo <= i["SK"]["S"] <= hi),
            key=lambda i: i["SK"]["S"],
            reverse=not ascending,
        )
        start = request.get("ExclusiveStartKey")
        if start is not None:
            after = start["SK"]["S"]
            rows = [
                i for i in rows if (i["SK"]["S"] > after) == ascending and i["SK"]["S"] != after
            ]
        limit = request["Limit"] if self.page_cap is None else min(request["Limit"], self.page_cap)
        page = rows[:limit]
        response: dict[str, Any] = {"Items": page, "Count": len(page)}
        if len(page) == limit:
            response["LastEvaluatedKey"] = {"PK": page[-1]["PK"], "SK": page[-1]["SK"]}
        return response


class FixedStore:
    """A MetadataStore that always answers with the same ShardInfo."""

    def __init__(self, info: ShardInfo) -> None:
        self.info = info

    def get(self, key: str) -> ShardInfo | None:
        return self.info

    def create(self, key: str, count: int, now: int) -> ShardInfo | None:
        raise AssertionError("readers never create metadata")

    def update(
        self, key: str, count: int, expected_last_updated: int, now: int
    ) -> ShardInfo | None:
        raise AssertionError("readers never change metadata")

    def adopt(self, key: str, count: int, now: int) -> ShardInfo | None:
        raise AssertionError("readers never adopt")


@pytest.fixture(scope="module")
def pool() -> Iterator[ThreadPoolExecutor]:
    with ThreadPoolExecutor(16) as executor:
        yield executor


def reader_of(
    client: MemoryQueryClient, pool: ThreadPoolExecutor, shards: int, adopted: bool = False
) -> ShardedReader:
    info = ShardInfo("K", shards, 1, ((1, shards),), adopted=adopted)
    return ShardedReader(client, TABLE, ShardMetadata(FixedStore(info)), pool)  # type: ignore[arg-type]


def sk_of(i: int) -> str:
    return f"2013-01-01T00:00:{i // 1000:02d}.{i % 1000:03d}000Z#e{i:05d}"


def read_pages(reader: ShardedReader, limit: int, descending: bool) -> list[list[str]]:
    pages, cursor = [], None
    for _ in range(10_000):
        page = reader.query("K", limit=limit, descending=descending, cursor=cursor)
        pages.append([f"{i['ts']}#{i['id']}" for i in page.items])
        cursor = page.cursor
        if cursor is None:
            return pages
    raise AssertionError("paging did not end")


def overlaps(a: tuple[str, float, float], b: tuple[str, float, float]) -> bool:
    return a[1] < b[2] and b[1] < a[2]


@pytest.mark.parametrize("descending", [False, True])
def test_later_shard_pages_are_fetched_in_parallel(
    pool: ThreadPoolExecutor, descending: bool
) -> None:
    # Given 4 shards of 25 interleaved items, each Query taking 50 ms and cut at 10
    # items (as a 1 MB page would), so each shard needs 3 pages for a page of 100
    delay, shards = 0.05, 4
    client = MemoryQueryClient(delay_s=delay, page_cap=10)
    for i in range(100):
        client.put(physical_key("K", i % shards), sk_of(i))
    reader = reader_of(client, pool, shards)

    # When one page of all 100 is read
    page = reader.query("K", limit=100, descending=descending)

    # Then it is exact, and the shards' second pages were in flight at the same time
    expected = sorted((sk_of(i) for i in range(100)), reverse=descending)
    assert [f"{i['ts']}#{i['id']}" for i in page.items] == expected
    assert page.queries == len(client.calls) == 12 and page.shards_queried == shards
    second = {}
    for pk in {c[0] for c in client.calls}:
        calls = sorted((c for c in client.calls if c[0] == pk), key=lambda c: c[1])
        assert len(calls) == 3
        second[pk] = calls[1]
    pairs = [(a, b) for a in second.values() for b in second.values() if a[0] < b[0]]
    assert all(overlaps(a, b) for a, b in pairs), "second-page queries ran one at a time"


def test_the_page_does_not_read_ahead_what_it_cannot_need(pool: ThreadPoolExecutor) -> None:
    # Given 4 shards evenly interleaved, 100 items each, Query pages of 10
    client = MemoryQueryClient(page_cap=10)
    for i in range(400):
        client.put(physical_key("K", i % 4), sk_of(i))
    reader = reader_of(client, pool, 4)
    # When a page of 20 is read: the first pages (40 items) already cover it
    page = reader.query("K", limit=20)
    # Then no shard's second page was fetched
    assert [f"{i['ts']}#{i['id']}" for i in page.items] == [sk_of(i) for i in range(20)]
    assert page.queries == len(client.calls) == 4


def test_a_read_without_a_limit_returns_a_page_of_100(pool: ThreadPoolExecutor) -> None:
    # Given 3 shards holding 150 interleaved items
    client = MemoryQueryClient()
    for i in range(150):
        client.put(physical_key("K", i % 3), sk_of(i))
    reader = reader_of(client, pool, 3)
    # When a page is read without a limit
    page = reader.query("K")
    # Then it holds the first 100 items, and the next page the other 50
    assert [f"{i['ts']}#{i['id']}" for i in page.items] == [sk_of(i) for i in range(100)]
    assert page.cursor is not None
    rest = reader.query("K", cursor=page.cursor)
    assert [f"{i['ts']}#{i['id']}" for i in rest.items] == [sk_of(i) for i in range(100, 150)]
    assert rest.cursor is None


def test_a_failed_read_ahead_fails_the_read_naming_the_shard(pool: ThreadPoolExecutor) -> None:
    class FailsLaterPages(MemoryQueryClient):
        def query(self, **request: Any) -> dict[str, Any]:
            pk = request["ExpressionAttributeValues"][":pk"]["S"]
            if pk == "K#1" and "ExclusiveStartKey" in request:
                raise client_error("InternalServerError", "injected failure of K#1")
            return super().query(**request)

    # Given 3 shards answering in pages of 5, whose shard 1 fails from its second page
    client = FailsLaterPages(page_cap=5)
    for i in range(60):
        client.put(physical_key("K", i % 3), sk_of(i))
    reader = reader_of(client, pool, 3)
    # Then the read fails naming it, or, when partial results are asked for, serves
    # shard 1's first page (items 1, 4, ..., 13) and every other shard's items
    with pytest.raises(ShardQueryError, match="K#1"):
        reader.query("K", limit=60)
    partial = reader.query("K", limit=60, allow_partial=True)
    assert partial.missing_shards == ["K#1"]
    assert [f"{i['ts']}#{i['id']}" for i in partial.items] == [
        sk_of(i) for i in range(60) if i % 3 != 1 or i <= 13
    ]


shard_layouts = st.lists(
    st.tuples(st.integers(0, 300), st.integers(-1, 5)), min_size=0, max_size=120
)


@settings(max_examples=150, deadline=None)
@given(
    layout=shard_layouts,
    shards=st.integers(1, 6),
    adopted=st.booleans(),
    limit=st.integers(1, 40),
    page_cap=st.one_of(st.none(), st.integers(1, 6)),
    descending=st.booleans(),
)
def test_pages_concatenate_to_the_sorted_union(
    pool: ThreadPoolExecutor,
    layout: list[tuple[int, int]],
    shards: int,
    adopted: bool,
    limit: int,
    page_cap: int | None,
    descending: bool,
) -> None:
    # Given items spread over the shards (and the bare key when adopted); the same
    # item may sit on two shards, as after a resize
    client = MemoryQueryClient(page_cap=page_cap)
    keys = physical_keys_to_query(ShardInfo("K", shards, 1, ((1, shards),), adopted=adopted))
    stored: set[str] = set()
    for i, stream in layout:
        pk = keys.get(stream) if stream == BARE_KEY_STREAM else keys[stream % shards]
        if pk is not None and sk_of(i) not in {x["SK"]["S"] for x in client.items.get(pk, [])}:
            client.put(pk, sk_of(i))
            stored.add(sk_of(i))
    # When every page is read
    pages = read_pages(reader_of(client, pool, shards, adopted), limit, descending)
    # Then the pages, in order, are the sorted union, each item once, none empty but
    # possibly the last, each at most the limit
    assert [sk for page in pages for sk in page] == sorted(stored, reverse=descending)
    assert all(0 < len(page) <= limit for page in pages[:-1])
