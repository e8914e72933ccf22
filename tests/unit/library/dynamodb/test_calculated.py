"""Calculated sharding: pure routing, the strategy in the metadata table (moto), the
writer routing by the attribute, and targeted reads that query one shard per count."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dynashard import Dynashard, DynashardConfig, Event, Strategy
from dynashard.core.strategies import (
    calculated_shards,
    choose_shard,
    shard_attribute_value,
    shard_for,
)
from dynashard.dynamodb.metadata_store import DynamoDBMetadataStore
from dynashard.dynamodb.shard_metadata import ShardMetadata
from dynashard.errors import CursorError, InvalidInputError, MetadataError, StrategyConflictError
from infra.table_specs import DATA_TABLE, METADATA_TABLE

from ..fakes import FlakyClient

T0 = datetime(2013, 1, 1, tzinfo=UTC)
KEY = "DEPARTURES#JFK"
CARRIERS = ("UA", "AA", "B6", "DL", "EV", "MQ", "US", "WN", "VX", "9E")


# --- pure routing -------------------------------------------------------------------------
@given(
    st.one_of(st.text(min_size=1), st.integers()),
    st.integers(min_value=1, max_value=1000),
    st.text(),
    st.text(),
)
def test_calculated_shard_depends_on_the_attribute_only(
    value: str | int, n: int, id_a: str, id_b: str
) -> None:
    # Given two events with the same attribute value and different ids
    a = choose_shard(Strategy.CALCULATED, n, id_a, {"tailnum": value}, "tailnum")
    b = choose_shard(Strategy.CALCULATED, n, id_b, {"tailnum": value, "x": 1}, "tailnum")
    # Then they share the shard, which is the attribute's jump hash (an int as its digits)
    assert a == b == shard_for(str(value), n)
    assert 0 <= a < n


@given(st.text(min_size=1), st.frozensets(st.integers(min_value=1, max_value=64), min_size=1))
def test_a_targeted_read_covers_every_shard_the_value_was_written_to(
    value: str, counts: frozenset[int]
) -> None:
    # Whatever count a writer had, the reader's set holds its shard, and is no wider
    # than one shard per count.
    targets = calculated_shards(value, counts)
    assert len(targets) <= len(counts)
    assert {choose_shard(Strategy.CALCULATED, n, "e", {"a": value}, "a") for n in counts} <= (
        targets
    )


def test_random_strategy_keeps_routing_by_event_id() -> None:
    assert choose_shard(Strategy.RANDOM, 8, "f1", {"carrier": "UA"}) == shard_for("f1", 8)


@pytest.mark.parametrize(
    ("data", "why"),
    [
        ({}, "missing"),
        ({"carrier": None}, "missing"),
        ({"carrier": ""}, "empty"),
        ({"carrier": True}, "bool"),
        ({"carrier": 2.5}, "float"),
        ({"carrier": {"code": "UA"}}, "dict"),
    ],
)
def test_an_event_without_a_usable_attribute_is_refused_naming_the_field(
    data: dict[str, Any], why: str
) -> None:
    with pytest.raises(InvalidInputError) as caught:
        choose_shard(Strategy.CALCULATED, 4, "f1", data, "carrier")
    assert caught.value.field == "data.carrier"
    assert why in caught.value.message


def test_integer_attribute_and_its_digits_are_one_value() -> None:
    assert shard_attribute_value({"flight": 1545}, "flight") == "1545"
    assert choose_shard(Strategy.CALCULATED, 16, "a", {"flight": 1545}, "flight") == choose_shard(
        Strategy.CALCULATED, 16, "b", {"flight": "1545"}, "flight"
    )


# --- the strategy in the metadata table (moto) ----------------------------------------------
@pytest.fixture
def meta(ddb_client: Any) -> ShardMetadata:
    store = DynamoDBMetadataStore(METADATA_TABLE.default_name, ddb_client)
    return ShardMetadata(store, default_shards=2, cooldown_s=60.0, sleep=lambda _s: None)


def test_strategy_round_trips_through_the_metadata_table(meta: ShardMetadata) -> None:
    # Given a key never seen, set to calculated by carrier
    stored = meta.set_strategy(KEY, Strategy.CALCULATED, "carrier")
    # Then the item holds N = default, one history entry, the strategy and attribute
    fresh = meta.for_reader(KEY)
    assert (fresh.strategy, fresh.shard_attribute) == (Strategy.CALCULATED, "carrier")
    assert fresh.number_of_shards == 2 and len(fresh.history) == 1
    assert fresh == stored
    # And the same call again changes nothing and raises nothing
    assert meta.set_strategy(KEY, "calculated", "carrier") == fresh


def test_a_different_strategy_is_refused_unless_forced(meta: ShardMetadata) -> None:
    meta.set_strategy(KEY, Strategy.CALCULATED, "carrier")
    meta.set_count(KEY, 4)
    before = meta.for_reader(KEY)
    for strategy, attribute in ((Strategy.RANDOM, None), (Strategy.CALCULATED, "tailnum")):
        with pytest.raises(StrategyConflictError) as caught:
            meta.set_strategy(KEY, strategy, attribute)
        assert caught.value.current == "calculated(carrier)"
    assert meta.for_reader(KEY) == before
    # Forced: the strategy changes, N, last_updated (cooldown clock) and history do not
    after = meta.set_strategy(KEY, Strategy.CALCULATED, "tailnum", force=True)
    assert after.shard_attribute == "tailnum"
    assert (after.number_of_shards, after.last_updated, after.history) == (
        before.number_of_shards,
        before.last_updated,
        before.history,
    )
    back = meta.set_strategy(KEY, Strategy.RANDOM, force=True)
    assert (back.strategy, back.shard_attribute) == (Strategy.RANDOM, None)
    assert meta.for_reader(KEY).shard_attribute is None


def test_a_stored_key_without_a_strategy_is_random_and_not_silently_changed(
    meta: ShardMetadata,
) -> None:
    # Given a key a writer already used (created random, may hold data)
    assert meta.for_writer(KEY).strategy is Strategy.RANDOM
    with pytest.raises(StrategyConflictError, match="force=True"):
        meta.set_strategy(KEY, Strategy.CALCULATED, "carrier")
    assert meta.set_strategy(KEY, Strategy.RANDOM) == meta.for_reader(KEY)  # same: no-op
    # And a forced change reaches this container's writer cache at once
    meta.set_strategy(KEY, Strategy.CALCULATED, "carrier", force=True)
    assert meta.for_writer(KEY).shard_attribute == "carrier"


def test_the_change_is_a_compare_and_set_on_the_strategy_read(meta: ShardMetadata) -> None:
    # Given a reader's view, then another caller's change
    meta.set_strategy(KEY, Strategy.CALCULATED, "carrier")
    stale = meta.for_reader(KEY)
    meta.set_strategy(KEY, Strategy.CALCULATED, "tailnum", force=True)
    store = meta.store
    # When the stale view is used for a change, the conditional write refuses it
    assert store.put_strategy(KEY, Strategy.RANDOM, None, expected=stale, count=2, now=1) is None
    # And creating a key that exists is refused too
    assert store.put_strategy(KEY, Strategy.RANDOM, None, expected=None, count=2, now=1) is None
    assert meta.for_reader(KEY).shard_attribute == "tailnum"


@pytest.mark.parametrize(
    ("strategy", "attribute", "field"),
    [
        ("bogus", None, "strategy"),
        (Strategy.CALCULATED, None, "attribute"),
        (Strategy.CALCULATED, "", "attribute"),
        (Strategy.CALCULATED, "x" * 256, "attribute"),
        (Strategy.RANDOM, "carrier", "attribute"),
    ],
)
def test_invalid_strategies_name_the_field(
    meta: ShardMetadata, strategy: str, attribute: str | None, field: str
) -> None:
    with pytest.raises(InvalidInputError) as caught:
        meta.set_strategy(KEY, strategy, attribute)
    assert caught.value.field == field


def test_initial_shards_apply_to_a_created_key_only(meta: ShardMetadata) -> None:
    with pytest.raises(InvalidInputError) as caught:
        meta.set_strategy(KEY, Strategy.CALCULATED, "carrier", initial_shards=0)
    assert caught.value.field == "initial_shards"
    created = meta.set_strategy(KEY, Strategy.CALCULATED, "carrier", initial_shards=4)
    assert created.number_of_shards == 4 and created.counts == {4}
    again = meta.set_strategy(KEY, Strategy.CALCULATED, "carrier", initial_shards=16)
    assert again.number_of_shards == 4


def test_an_unknown_stored_strategy_is_a_metadata_error(
    meta: ShardMetadata, ddb_client: Any
) -> None:
    ddb_client.put_item(
        TableName=METADATA_TABLE.default_name,
        Item={
            "key": {"S": KEY},
            "number_of_shards": {"N": "2"},
            "last_updated": {"N": "1"},
            "strategy": {"S": "sideways"},
        },
    )
    with pytest.raises(MetadataError, match="malformed"):
        meta.for_reader(KEY)


# --- the writer and targeted reads (moto) ------------------------------------------------
def departures(n: int, start: datetime = T0, prefix: str = "f") -> list[Event]:
    return [
        Event(
            key=KEY,
            id=f"{prefix}{i:05d}",
            ts=start + timedelta(minutes=7 * i),
            data={"carrier": CARRIERS[i % len(CARRIERS)], "flight": 100 + i % 13},
        )
        for i in range(n)
    ]


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


@pytest.fixture
def counted(ddb_client: Any) -> tuple[Dynashard, FlakyClient]:
    flaky = FlakyClient(ddb_client)
    ds = Dynashard(
        DynashardConfig(DATA_TABLE.default_name, METADATA_TABLE.default_name, max_workers=4),
        client=flaky,  # type: ignore[arg-type]
    )
    return ds, flaky


def test_writer_routes_by_the_attribute_and_refuses_events_without_it(facade: Dynashard) -> None:
    facade.set_strategy(KEY, Strategy.CALCULATED, attribute="carrier")
    facade.set_shard_count(KEY, 4)
    events = departures(40)
    lacking = Event(key=KEY, id="no-carrier", ts=T0, data={"flight": 1})
    outcomes = facade.put_events([*events, lacking])
    assert all(o.ok for o in outcomes[:-1])
    for event, outcome in zip(events, outcomes, strict=False):
        assert outcome.physical_key == f"{KEY}#{shard_for(event.data['carrier'], 4)}"
    refused = outcomes[-1]
    assert not refused.ok and refused.physical_key is None
    assert refused.error is not None and "InvalidInputError: data.carrier" in refused.error
    assert "no-carrier" not in {i["id"] for i in read_all(facade)[0]}


@pytest.mark.parametrize("descending", [False, True])
def test_targeted_read_over_a_resize_queries_one_shard_per_count(
    counted: tuple[Dynashard, FlakyClient], descending: bool
) -> None:
    ds, client = counted
    ds.set_strategy(KEY, Strategy.CALCULATED, attribute="carrier", initial_shards=4)
    before = departures(300)
    assert all(o.ok for o in ds.put_events(before))
    ds.set_shard_count(KEY, 8)
    after = departures(300, start=T0 + timedelta(days=3), prefix="g")
    assert all(o.ok for o in ds.put_events(after))
    everything = before + after
    assert ds.shard_info(KEY).counts == {4, 8}
    for carrier in ("UA", "B6"):
        client.queries.clear()
        items, widest = read_all(ds, attribute_value=carrier, limit=7, descending=descending)
        wanted = sorted(
            (e for e in everything if e.data["carrier"] == carrier),
            key=lambda e: e.sort_key,
            reverse=descending,
        )
        assert [i["id"] for i in items] == [e.id for e in wanted]
        targets = {f"{KEY}#{s}" for s in calculated_shards(carrier, {4, 8})}
        assert set(client.queries) == targets and len(targets) <= 2
        assert 1 <= widest <= len(targets)
    # A full read still returns everything, from every shard the history used
    client.queries.clear()
    items, widest = read_all(ds, limit=1000)
    assert len(items) == len(everything) and widest == 8
    assert len(client.queries) == 8


def test_integer_attribute_values_are_read_by_their_digits(facade: Dynashard) -> None:
    facade.set_strategy(KEY, Strategy.CALCULATED, attribute="flight")
    facade.set_shard_count(KEY, 8)
    events = departures(130)
    facade.put_events(events)
    wanted = [e.id for e in events if e.data["flight"] == 105]
    assert [i["id"] for i in read_all(facade, attribute_value="105")[0]] == wanted
    assert [i["id"] for i in read_all(facade, attribute_value=105)[0]] == wanted


def test_targeted_read_of_a_key_that_is_not_calculated_names_attr(facade: Dynashard) -> None:
    facade.set_shard_count(KEY, 4)
    with pytest.raises(InvalidInputError) as caught:
        facade.query_events(KEY, attribute_value="UA")
    assert caught.value.field == "attr"
    assert "random" in caught.value.message
    with pytest.raises(InvalidInputError) as never_seen:
        facade.query_events("NEVER#SEEN", attribute_value="UA")
    assert never_seen.value.field == "attr"


@pytest.mark.parametrize("value", [True, 1.5, b"UA", ["UA"]])
def test_a_targeted_value_that_is_not_text_or_an_integer_is_refused_naming_attr(
    facade: Dynashard, value: Any
) -> None:
    # Given a calculated key
    facade.set_strategy(KEY, Strategy.CALCULATED, attribute="carrier")
    # When it is read targeting a value the writer could not have hashed (a bool is not
    # an integer here), then the refusal names the field attr and shows the value
    with pytest.raises(InvalidInputError) as caught:
        facade.query_events(KEY, attribute_value=value)
    assert caught.value.field == "attr"
    assert caught.value.message == f"attr: must be a string or an integer, got {value!r}"


def test_an_empty_targeted_value_is_refused_naming_attr(facade: Dynashard) -> None:
    # Given a calculated key, when it is read targeting the empty string
    facade.set_strategy(KEY, Strategy.CALCULATED, attribute="carrier")
    with pytest.raises(InvalidInputError) as caught:
        facade.query_events(KEY, attribute_value="")
    # Then the refusal names the field attr
    assert caught.value.field == "attr"
    assert caught.value.message == "attr: must not be empty"


def test_a_cursor_belongs_to_its_targeted_read(facade: Dynashard) -> None:
    facade.set_strategy(KEY, Strategy.CALCULATED, attribute="carrier")
    facade.set_shard_count(KEY, 4)
    facade.put_events(departures(100))
    full = facade.query_events(KEY, limit=5)
    ua = facade.query_events(KEY, limit=2, attribute_value="UA")
    assert full.cursor is not None and ua.cursor is not None
    with pytest.raises(CursorError):
        facade.query_events(KEY, limit=2, attribute_value="UA", cursor=full.cursor)
    with pytest.raises(CursorError):
        facade.query_events(KEY, limit=2, attribute_value="AA", cursor=ua.cursor)
    with pytest.raises(CursorError):
        facade.query_events(KEY, limit=2, cursor=ua.cursor)
