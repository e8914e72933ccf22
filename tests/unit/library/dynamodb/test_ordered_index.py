"""The ordered index's metadata and read path against moto (no network)."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from dynashard import Dynashard
from dynashard.core.ordered import OrderedLayout, normalise
from dynashard.dynamodb.metadata_store import DynamoDBMetadataStore
from dynashard.dynamodb.ordered_index import OrderedItem
from dynashard.errors import LayoutConflictError, ShardQueryError, StateConflictError
from infra.table_specs import DATA_TABLE, METADATA_TABLE


def test_layout_write_is_conditional(ddb_client: object) -> None:
    store = DynamoDBMetadataStore(METADATA_TABLE.default_name, ddb_client)  # type: ignore[arg-type]
    layout = OrderedLayout(("g", "p"), (1, 2, 1))
    assert store.get_layout("K") == (None, None)
    assert store.put_layout("K", layout, None, 100)
    assert not store.put_layout("K", layout, None, 101)  # someone created it first
    assert not store.put_layout("K", layout, 99, 101)  # lost the race
    assert store.get_layout("K") == (layout, 100)
    info = store.get("K")
    assert info is not None and info.number_of_shards == 3 and info.history == ((100, 3),)


def test_an_existing_random_key_becomes_ordered_through_the_lock(ddb_client: object) -> None:
    store = DynamoDBMetadataStore(METADATA_TABLE.default_name, ddb_client)  # type: ignore[arg-type]
    store.create("K", 4, 100)
    assert store.get_layout("K") == (None, 100)
    assert store.put_layout("K", OrderedLayout.uniform(["m"]), 100, 101)
    info = store.get("K")
    assert info is not None and info.counts == {4, 2}


def test_pages_of_one_item_walk_sub_shards_in_order(facade: Dynashard) -> None:
    # Given a range shard spread over 3 sub-shards, holding one hot value
    index = facade.ordered_index("HOT")
    index.configure(OrderedLayout(("m",), (3, 1)))
    rows = [OrderedItem(f"id{i:02d}", "Greatest Hits") for i in range(12)]
    rows += [OrderedItem("z1", "Zebra"), OrderedItem("a1", "abba")]
    index.put(rows)
    # When it is read one item per page
    seen, cursor, pages = [], None, 0
    while True:
        page = index.query(limit=1, cursor=cursor)
        seen += [(normalise(i["value"]), i["id"]) for i in page.items]
        cursor, pages = page.cursor, pages + 1
        if cursor is None:
            break
    # Then every item comes once, in order, across the sub-shards
    assert seen == sorted((normalise(r.value), r.id) for r in rows)
    assert pages >= len(rows)


def test_every_range_shard_query_is_strongly_consistent(facade: Dynashard) -> None:
    # Given an index of three range shards holding a put entry
    sent: list[dict[str, Any]] = []
    facade.client.meta.events.register(
        "provide-client-params.dynamodb.Query", lambda params, **_: sent.append(dict(params))
    )
    index = facade.ordered_index("CONSISTENT")
    index.configure(OrderedLayout(("g", "p"), (1, 1, 1)))
    index.put([OrderedItem("a1", "abba"), OrderedItem("z1", "Zebra")])
    # When it is read whole, by prefix and by range
    index.query()
    index.query(prefix="ab")
    index.query(start="b", end="zz")
    # Then every Query asked for a strongly consistent read: an entry acknowledged before
    # the read began is never missed for replication lag
    assert sent and all(p.get("ConsistentRead") is True for p in sent), sent


def test_an_ordered_key_keeps_its_strategy_even_when_forced(facade: Dynashard) -> None:
    # Given an ordered index holding an entry
    index = facade.ordered_index("LOCKED")
    index.configure(OrderedLayout((), (1,)))
    index.put([OrderedItem("a1", "abba")])
    # When an operator forces another strategy on it, Then it is a 409-type conflict, and
    # the key is still an ordered index (event reads of its entries stay refused)
    with pytest.raises(StateConflictError, match="is an ordered index"):
        facade.set_strategy("LOCKED", "random", force=True)
    with pytest.raises(StateConflictError, match="GET /index"):
        facade.query_events("LOCKED")
    assert [i["id"] for i in index.query().items] == ["a1"]


def test_an_entry_moved_after_the_cursor_within_its_shard_is_on_the_next_page(
    facade: Dynashard,
) -> None:
    # Given two range shards, [.., c) and [c, ..), and one entry, "a", read with limit 1
    index = facade.ordered_index("MOVING")
    index.configure(OrderedLayout(("c",), (1, 1)))
    index.put([OrderedItem("e0", "a")])
    first = index.query(limit=1)
    assert [i["value"] for i in first.items] == ["a"]
    # When the id is re-put at "B" (after the cursor, still in the first shard)
    index.put([OrderedItem("e0", "B")])
    # Then the rest of the read holds it (found by the model's soak on DynamoDB Local)
    rest, cursor = [], first.cursor
    while cursor is not None:
        page = index.query(limit=1, cursor=cursor)
        rest += [(i["id"], i["value"]) for i in page.items]
        cursor = page.cursor
    assert rest == [("e0", "B")]


def test_a_failed_range_shard_query_fails_the_read_naming_its_key(
    facade: Dynashard, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an ordered key whose first range shard's Query is throttled
    index = facade.ordered_index("TAILS")
    index.configure(OrderedLayout.uniform(["m"]))
    index.put([OrderedItem("a1", "abba")])

    def throttled(**request: Any) -> Any:
        error = {"Code": "ThrottlingException", "Message": "slow down"}
        raise ClientError({"Error": error}, "Query")

    monkeypatch.setattr(index.client, "query", throttled)
    # When it is read, then the read fails naming the physical key, not an empty page
    with pytest.raises(ShardQueryError) as caught:
        index.query(limit=5)
    assert caught.value.failures == {"TAILS#0": "ThrottlingException: slow down"}


def test_a_key_with_another_strategy_is_not_turned_into_an_ordered_index(
    facade: Dynashard,
) -> None:
    # Given a key whose events were written under the random strategy
    facade.set_shard_count("EVENTS", 2)
    # When it is configured as an ordered index
    with pytest.raises(LayoutConflictError, match="another strategy") as raised:
        facade.ordered_index("EVENTS").configure(OrderedLayout.uniform(["m"]))
    # Then it is refused naming the key, and the key keeps its strategy and count
    assert raised.value.field == "key"
    info = facade.shard_info("EVENTS")
    assert (info.strategy.value, info.number_of_shards) == ("random", 2)


def test_growth_and_shrink_leave_an_ordered_key_at_its_layout_count(facade: Dynashard) -> None:
    # Given an ordered index of 2 range shards
    facade.ordered_index("TAILS").configure(OrderedLayout.uniform(["m"]))
    # When the scaler's growth or an operator's resize reaches it
    grown = facade.grow("TAILS", 8)
    resized = facade.set_shard_count("TAILS", 5)
    # Then neither changes N, and both say why
    assert (grown.changed, grown.reason, resized.changed) == (False, "ordered", False)
    assert facade.shard_info("TAILS").number_of_shards == 2


# --- bounds and values that normalise to "" (issue 26, defect 7) ---------------------------
#: Non-empty text that normalisation erases: a lone combining mark, control characters.
ERASED = ["\u0301", "\x07", "\x00\x1f", "\u0301\u0308"]


@pytest.mark.parametrize("erased", ERASED)
@pytest.mark.parametrize(
    ("bounds", "field"),
    [
        ({"start": "{}"}, "from"),
        ({"end": "{}"}, "to"),
        ({"start": "a", "end": "{}"}, "to"),
        ({"prefix": "{}"}, "prefix"),
    ],
)
def test_a_bound_that_normalises_to_nothing_is_an_input_error_naming_it(
    facade: Dynashard, erased: str, bounds: dict[str, str], field: str
) -> None:
    # Given an index with entries
    from dynashard.errors import InvalidInputError

    index = facade.ordered_index("TAILS")
    index.configure(OrderedLayout.uniform(["m"]))
    index.put([OrderedItem("a", "N1"), OrderedItem("b", "zz")])
    # When a bound holds only characters the index ignores
    options = {name: value.format(erased) for name, value in bounds.items()}
    # Then the read is refused naming that bound (not a 503 shard failure, not [])
    with pytest.raises(InvalidInputError) as info:
        index.query(**options)
    assert info.value.field == field
    assert "normalises to" in info.value.message


@pytest.mark.parametrize("erased", ["", *ERASED])
def test_a_value_that_normalises_to_nothing_is_refused_at_put(
    facade: Dynashard, erased: str
) -> None:
    from dynashard.errors import InvalidInputError

    index = facade.ordered_index("TAILS")
    index.configure(OrderedLayout.uniform(["m"]))
    with pytest.raises(InvalidInputError) as info:
        index.put([OrderedItem("a", "N1"), OrderedItem("b", erased)])
    assert info.value.field == "value"
    assert index.query().items == []  # nothing of the call was written


# --- re-putting an id replaces its entry (issue 26, defect 4) -------------------------------
def _entries(ddb_client: Any, key: str) -> list[tuple[str, str]]:
    """Every stored entry of an index (a Scan: reads cannot hide a duplicate)."""
    items = ddb_client.scan(TableName=DATA_TABLE.default_name)["Items"]
    return sorted(
        (i["id"]["S"], i["value"]["S"])
        for i in items
        if i.get("key", {}).get("S") == key and "value" in i
    )


@pytest.mark.parametrize(
    ("first", "second"),
    [
        pytest.param("Apple", "Banana", id="same-range-shard"),
        pytest.param("Apple", "Zebra", id="other-range-shard"),
        pytest.param("Greatest Hits", "Zebra", id="from-a-sub-shard"),
        pytest.param("Apple", "APPLE", id="same-normalised-value"),
        pytest.param("Apple", "Apple", id="same-value"),
    ],
)
def test_a_re_put_replaces_the_entry(
    facade: Dynashard, ddb_client: Any, first: str, second: str
) -> None:
    # Given an index holding id x at one value, beside other ids
    index = facade.ordered_index("NAMES")
    index.configure(OrderedLayout(("m",), (3, 1)))
    index.put(
        [OrderedItem("x", first, {"v": 1}), OrderedItem("a", "Mango"), OrderedItem("b", "abc")]
    )
    # When x is put again with another value
    index.put([OrderedItem("x", second, {"v": 2})])
    # Then the index lists x once, at its new value's position, with its new data
    listed = [(i["id"], i["value"], i["data"]) for i in index.query().items]
    assert [i for i in listed if i[0] == "x"] == [("x", second, {"v": 2})]
    expected = sorted(
        [("x", second), ("a", "Mango"), ("b", "abc")], key=lambda r: (normalise(r[1]), r[0])
    )
    assert [(i, v) for i, v, _ in listed] == expected
    # and the table holds one entry per id (a Scan, not a read that collapses duplicates)
    assert _entries(ddb_client, "NAMES") == sorted([("a", "Mango"), ("b", "abc"), ("x", second)])
    # and a delete removes it entirely
    assert index.delete(["x", "never"]) == 1
    assert [i["id"] for i in index.query().items] == [r[0] for r in expected if r[0] != "x"]
    assert _entries(ddb_client, "NAMES") == [("a", "Mango"), ("b", "abc")]
    assert index.delete(["x"]) == 0


def test_re_puts_within_many_transactions_keep_one_entry_per_id(
    facade: Dynashard, ddb_client: Any
) -> None:
    index = facade.ordered_index("MANY")
    index.configure(OrderedLayout.uniform(["g", "p"]))
    index.put([OrderedItem(f"i{n:02d}", f"a{n:02d}") for n in range(30)])
    index.put([OrderedItem(f"i{n:02d}", f"z{n:02d}") for n in range(0, 30, 2)])
    values = {i["id"]: i["value"] for i in index.query(limit=1000).items}
    assert len(index.query(limit=1000).items) == 30
    assert values == {f"i{n:02d}": (f"z{n:02d}" if n % 2 == 0 else f"a{n:02d}") for n in range(30)}
    assert len(_entries(ddb_client, "MANY")) == 30


def test_a_re_put_racing_another_re_put_of_the_id_leaves_one_entry(
    facade: Dynashard, ddb_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given id x at "Apple", and two writers re-putting it at once
    index = facade.ordered_index("RACE")
    index.configure(OrderedLayout.uniform(["m"]))
    index.put([OrderedItem("x", "Apple")])
    rival = facade.ordered_index("RACE")
    read_pointers = type(index)._read_pointers
    raced = []

    def read_then_lose_the_race(self: Any, ids: Any) -> Any:
        current = read_pointers(self, ids)
        if not raced:  # the rival commits between this writer's read and its write
            raced.append(True)
            rival.put([OrderedItem("x", "Zebra")])
        return current

    monkeypatch.setattr(type(index), "_read_pointers", read_then_lose_the_race)
    # When this writer's transaction runs on its stale read of the pointer
    index.put([OrderedItem("x", "Kiwi")])
    # Then its condition failed, it read again, and x is listed once, at the last value
    assert [(i["id"], i["value"]) for i in index.query().items] == [("x", "Kiwi")]
    assert _entries(ddb_client, "RACE") == [("x", "Kiwi")]
