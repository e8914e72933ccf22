from __future__ import annotations

import random
import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from dynashard import Dynashard, DynashardConfig, Event
from dynashard.core.retry import Backoff
from dynashard.core.shard_info import ShardInfo
from dynashard.core.strategies import Strategy, choose_shard
from dynashard.dynamodb.shard_metadata import ShardMetadata
from dynashard.dynamodb.writer import ShardedWriter
from dynashard.errors import CursorError, InvalidInputError, ShardQueryError
from dynashard.planning.reads import shard_page_limit
from infra.table_specs import DATA_TABLE, METADATA_TABLE

from ..fakes import FlakyClient, client_error

T0 = datetime(2013, 1, 1, tzinfo=UTC)


def make_events(n: int, key: str = "K", seed: int = 7) -> list[Event]:
    rng = random.Random(seed)
    return [
        Event(
            key=key,
            id=f"e{i:05d}",
            ts=T0 + timedelta(seconds=rng.randrange(86_400 * 3)),
            data={"i": i},
        )
        for i in range(n)
    ]


def read_all(ds: Dynashard, key: str = "K", **kw: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    cursor = None
    for _ in range(10_000):
        page = ds.query_events(key, cursor=cursor, **kw)
        items.extend(page.items)
        cursor = page.cursor
        if cursor is None:
            return items
    raise AssertionError("paging did not end")


def expected_ids(events: list[Event], descending: bool = False) -> list[str]:
    return [e.id for e in sorted(events, key=lambda e: e.sort_key, reverse=descending)]


def flaky_facade(ddb_client: Any) -> tuple[Dynashard, FlakyClient]:
    flaky = FlakyClient(ddb_client)
    ds = Dynashard(
        DynashardConfig(DATA_TABLE.default_name, METADATA_TABLE.default_name, max_workers=4),
        client=flaky,  # type: ignore[arg-type]
    )
    return ds, flaky


@pytest.mark.parametrize("descending", [False, True])
def test_round_trip_in_exact_order_across_shards(facade: Dynashard, descending: bool) -> None:
    facade.set_shard_count("K", 6)
    events = make_events(400)
    outcomes = facade.put_events(events)
    assert all(o.ok for o in outcomes)
    assert {o.physical_key for o in outcomes} == {f"K#{s}" for s in range(6)}
    items = read_all(facade, limit=33, descending=descending)
    assert [i["id"] for i in items] == expected_ids(events, descending)
    assert items[0]["data"] == {"i": int(items[0]["id"][1:])}


def test_time_range_is_start_inclusive_end_exclusive(facade: Dynashard) -> None:
    facade.set_shard_count("K", 3)
    events = make_events(300)
    facade.put_events(events)
    start, end = T0 + timedelta(days=1), T0 + timedelta(days=2)
    items = read_all(facade, start=start, end=end, limit=50)
    assert [i["id"] for i in items] == expected_ids([e for e in events if start <= e.ts < end])
    edge = Event(key="K", id="edge", ts=end)
    facade.put_events([edge])
    assert "edge" not in {i["id"] for i in read_all(facade, start=start, end=end, limit=50)}


def stored_events(ddb_client: Any, key: str) -> list[str]:
    """Ids of every stored item of ``key``'s events, duplicates kept (a Scan, not a read:
    the merge collapses identical sort keys, so a read cannot see a second copy)."""
    items: list[dict[str, Any]] = []
    request: dict[str, Any] = {"TableName": DATA_TABLE.default_name}
    while True:
        page = ddb_client.scan(**request)
        items += page["Items"]
        if "LastEvaluatedKey" not in page:
            break
        request["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    return sorted(i["id"]["S"] for i in items if i.get("key", {}).get("S") == key)


def test_retried_event_is_stored_once(facade: Dynashard, ddb_client: Any) -> None:
    facade.set_shard_count("K", 4)
    events = make_events(50)
    facade.put_events(events)
    outcomes = facade.put_events(events[:10] + events[:10])
    assert len(outcomes) == 20 and all(o.ok for o in outcomes)
    assert len(read_all(facade)) == 50
    # one stored item per event: a retry landed on the item it overwrote
    assert stored_events(ddb_client, "K") == sorted(e.id for e in events)


def test_event_duplicated_by_a_resize_is_read_once(facade: Dynashard) -> None:
    # The same event written under two shard counts lands in two shards; the merge
    # collapses the identical sort keys (invariant 2).
    facade.set_shard_count("K", 2)
    events = make_events(200)
    facade.put_events(events)
    facade.set_shard_count("K", 9)
    facade.metadata.invalidate("K")
    facade.put_events(events)
    assert [i["id"] for i in read_all(facade, limit=17)] == expected_ids(events)


def test_unprocessed_items_are_retried_until_durable(ddb_client: Any) -> None:
    ds, flaky = flaky_facade(ddb_client)
    flaky.unprocessed_rounds = 3
    events = make_events(25)
    outcomes = ds.put_events(events)
    assert all(o.ok for o in outcomes)
    assert flaky.batch_write_calls == 4
    assert len(read_all(ds)) == 25


def test_unprocessed_items_let_the_next_write_read_a_raised_count(ddb_client: Any) -> None:
    ds, flaky = flaky_facade(ddb_client)
    now = [1_000_000.0]
    ds.metadata.clock = lambda: now[0]
    ds.put_events(make_events(4))  # caches the key's count (1)
    other = ShardMetadata(ds.metadata.store, cooldown_s=0, clock=lambda: now[0])
    key = make_events(1)[0].key
    now[0] += ds.metadata.throttle_refresh_s
    other.grow(key, 8)  # the scaler raises N; the writer's entry has 25 s to live
    flaky.unprocessed_rounds = 1
    assert all(o.ok for o in ds.put_events(make_events(6)[4:]))
    # the throttled writer dropped its entry: its next events use the new count
    assert ds.metadata.for_writer(key).number_of_shards == 8


def test_items_still_unprocessed_after_all_retries_are_reported(ddb_client: Any) -> None:
    flaky = FlakyClient(ddb_client)
    flaky.unprocessed_rounds = 100
    ds = Dynashard(
        DynashardConfig(DATA_TABLE.default_name, METADATA_TABLE.default_name), client=flaky
    )  # type: ignore[arg-type]
    writer = ShardedWriter(
        flaky,
        DATA_TABLE.default_name,
        ds.metadata,
        ds.executor,  # type: ignore[arg-type]
        backoff=Backoff(max_attempts=3),
        sleep=lambda s: None,
    )
    outcomes = writer.write(make_events(8))
    failed = [o for o in outcomes if not o.ok]
    # Each attempt writes half of what is pending: 8 -> 4 -> 2 -> 1 left unprocessed.
    assert len(failed) == 1
    assert "UnprocessedItems" in (failed[0].error or "")
    written = {i["id"] for i in read_all(ds)}
    assert written == {o.event_id for o in outcomes if o.ok}


def test_one_bad_item_does_not_fail_its_batch(ddb_client: Any) -> None:
    class RejectsOne(FlakyClient):
        def batch_write_item(self, RequestItems: dict[str, Any], **kw: Any) -> dict[str, Any]:
            ((_table, requests),) = RequestItems.items()
            if any(r["PutRequest"]["Item"]["id"]["S"] == "e00003" for r in requests):
                raise client_error("ValidationException", "bad item", "BatchWriteItem")
            return dict(self.inner.batch_write_item(RequestItems=RequestItems))

    flaky = RejectsOne(ddb_client)
    ds = Dynashard(
        DynashardConfig(DATA_TABLE.default_name, METADATA_TABLE.default_name), client=flaky
    )  # type: ignore[arg-type]
    outcomes = ds.put_events(make_events(10))
    assert [o.event_id for o in outcomes if not o.ok] == ["e00003"]
    assert "ValidationException" in (outcomes[3].error or "")


def test_oversized_event_fails_alone(facade: Dynashard) -> None:
    events = [*make_events(3), Event(key="K", id="big", ts=T0, data={"blob": "x" * 410_000})]
    outcomes = facade.put_events(events)
    assert [o.ok for o in outcomes] == [True, True, True, False]
    assert "400 KB" in (outcomes[3].error or "")


def test_failed_shard_fails_the_read_naming_it(ddb_client: Any) -> None:
    ds, flaky = flaky_facade(ddb_client)
    ds.set_shard_count("K", 4)
    ds.put_events(make_events(40))
    flaky.failing_pks = {"K#2"}
    with pytest.raises(ShardQueryError, match="K#2") as info:
        ds.query_events("K")
    assert info.value.shards == ["K#2"]


def test_partial_results_name_the_missing_shards(ddb_client: Any) -> None:
    ds, flaky = flaky_facade(ddb_client)
    ds.set_shard_count("K", 4)
    events = make_events(80)
    outcomes = ds.put_events(events)
    flaky.failing_pks = {"K#1"}
    page = ds.query_events("K", limit=1000, allow_partial=True)
    assert page.missing_shards == ["K#1"]
    on_k1 = {o.event_id for o in outcomes if o.physical_key == "K#1"}
    assert [i["id"] for i in page.items] == [i for i in expected_ids(events) if i not in on_k1]


def test_failure_on_a_later_shard_page_fails_the_read(ddb_client: Any) -> None:
    ds, flaky = flaky_facade(ddb_client)
    ds.set_shard_count("K", 2)
    events = make_events(60)
    ds.put_events(events)
    flaky.page_cap = 5  # every shard answers in pages of 5, as a 1 MB cut would
    assert [i["id"] for i in read_all(ds, limit=40)] == expected_ids(events)
    flaky.fail_after_first_query = {"K#0"}
    flaky.queries.clear()
    with pytest.raises(ShardQueryError, match="K#0"):
        ds.query_events("K", limit=40)
    page = ds.query_events("K", limit=40, allow_partial=True)
    assert page.missing_shards == ["K#0"]


def test_cursor_misuse_is_refused(facade: Dynashard) -> None:
    facade.put_events(make_events(20))
    page = facade.query_events("K", limit=5)
    assert page.cursor is not None
    with pytest.raises(CursorError):
        facade.query_events("K", limit=5, cursor=page.cursor, descending=True)
    with pytest.raises(CursorError):
        facade.query_events("OTHER", limit=5, cursor=page.cursor)


def test_bad_read_arguments(facade: Dynashard) -> None:
    with pytest.raises(InvalidInputError, match="limit"):
        facade.query_events("K", limit=0)
    with pytest.raises(InvalidInputError, match="from"):
        facade.query_events("K", start=T0, end=T0)


def test_empty_key_reads_empty_without_cursor(facade: Dynashard) -> None:
    page = facade.query_events("NOTHING")
    assert (page.items, page.cursor) == ([], None)


def test_growth_between_pages_misses_nothing(facade: Dynashard) -> None:
    facade.set_shard_count("K", 2)
    first = make_events(100, seed=1)
    facade.put_events(first)
    page = facade.query_events("K", limit=10)
    facade.set_shard_count("K", 7)
    facade.metadata.invalidate("K")
    late = [Event(key="K", id=f"late{i}", ts=T0 + timedelta(days=5, seconds=i)) for i in range(30)]
    facade.put_events(late)
    items = page.items + read_all_from(facade, page.cursor)
    assert [i["id"] for i in items] == expected_ids(first + late)


@pytest.mark.parametrize("path", ["base", "gsi1"])
@pytest.mark.parametrize("descending", [False, True])
def test_a_write_between_pages_to_a_shard_that_ran_out_is_read(
    facade: Dynashard, path: str, descending: bool
) -> None:
    # Given a key on two shards, whose shard 0 holds only the first event of a read
    facade.set_shard_count("K", 2)
    ids = [f"x{i}" for i in range(40)]
    on = {s: [i for i in ids if choose_shard(Strategy.RANDOM, 2, i, {}, None) == s] for s in (0, 1)}
    sign = -1 if descending else 1
    at = {s: T0 + timedelta(seconds=10 + sign * s) for s in (0, 2, 3)}  # 0 first, 2 then 3
    events = [Event(key="K", id=on[0][0], ts=at[0])]
    events += [Event(key="K", id=on[1][k], ts=at[2 + k]) for k in (0, 1)]
    assert all(o.ok for o in facade.put_events(events))
    options: dict[str, Any] = {"start": T0, "end": T0 + timedelta(hours=1), "limit": 1}
    options |= {"descending": descending, "path": path, "consistent": path == "base"}
    page = facade.query_events("K", **options)
    assert [i["id"] for i in page.items] == [on[0][0]]
    # When an event lands on that shard between pages, after the first page's event and
    # between the other shard's two
    late = Event(key="K", id=on[0][1], ts=T0 + timedelta(seconds=10 + sign * 2.5))
    assert facade.put_events([late])[0].physical_key == "K#0"
    # Then the read's next pages hold it, in order: page k+1 is the first events, at that
    # moment, strictly after the last one returned (docs/architecture.md), not a read
    # that skips the shard for having run out on page 1
    rest = read_all_from(facade, page.cursor, **options)
    assert [i["id"] for i in rest] == [on[1][0], late.id, on[1][1]]


def read_all_from(ds: Dynashard, cursor: str | None, **options: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    while cursor:
        page = ds.query_events("K", cursor=cursor, **({"limit": 10} | options))
        items.extend(page.items)
        cursor = page.cursor
    return items


def test_gsi1_key_is_sharded_with_the_item(facade: Dynashard, ddb_client: Any) -> None:
    facade.set_shard_count("K", 4)
    outcomes = facade.put_events(make_events(40))
    items = ddb_client.scan(TableName=DATA_TABLE.default_name)["Items"]
    by_pk = {i["PK"]["S"]: i for i in items if i["PK"]["S"].startswith("K#")}
    assert len({o.physical_key for o in outcomes}) == 4
    for pk, item in by_pk.items():
        shard = pk.rsplit("#", 1)[1]
        assert item["GSI1PK"]["S"] == f"K#{item['ts']['S'][:10]}#{shard}"


def test_shard_page_limit() -> None:
    # Given 1 KB items (4 per strongly consistent 4 KB unit): the share of 125 plus one
    # is 126 items, rounded up to the 128 that fill 32 units.
    assert shard_page_limit(1000, 8, item_bytes=1024) == 128
    # One shard gets the whole page plus one (to show it is exhausted).
    assert shard_page_limit(10, 1) == 11
    # Never more than the page plus one, however many items fit in a unit.
    assert shard_page_limit(5, 100, item_bytes=10) == 6
    assert shard_page_limit(100, 100, item_bytes=4096) == 2
    # Eventually consistent units are 8 KB: twice the items fill them.
    assert shard_page_limit(100, 32, item_bytes=410, consistent=True) == 9
    assert shard_page_limit(100, 32, item_bytes=410, consistent=False) == 19


def test_a_shard_holding_the_whole_window_is_read_in_two_queries(ddb_client: Any) -> None:
    # Given 300 events written at N = 1, and the key grown to 32 shards since
    ds, flaky = flaky_facade(ddb_client)
    events = make_events(300)
    ds.put_events(events)
    ds.set_shard_count("K", 32)
    # When one page of 100 is read
    page = ds.query_events("K", limit=100)
    # Then it is exact, and shard 0 (all of the window) took its share, then the rest
    # of the page in one more Query, not one share (~4 items) at a time.
    assert [i["id"] for i in page.items] == expected_ids(events)[:100]
    assert flaky.queries["K#0"] == 2
    assert page.queries == 33


def test_later_reads_size_shard_limits_from_the_items_earlier_reads_saw(ddb_client: Any) -> None:
    # Given a key at 8 shards of small items (about 150 bytes, 27 to a 4 KB unit)
    ds, flaky = flaky_facade(ddb_client)
    ds.set_shard_count("K", 8)
    ds.put_events(make_events(400))
    # When a first page is read, the reader knows nothing of the items: 1 KB each, so
    # each shard is asked for its share plus one (14), rounded to 4 a unit: 16
    ds.query_events("K", limit=100)
    assert set(flaky.limits[:8]) == {16}
    size = ds.read_memory.item_bytes["K"]
    assert 100 < size < 300
    # Then a second read asks each shard for the items that fill the unit its share
    # is billed for anyway
    flaky.limits.clear()
    ds.query_events("K", limit=100)
    assert set(flaky.limits[:8]) == {shard_page_limit(100, 8, item_bytes=size)}
    assert flaky.limits[0] > 16


class OverlapClient:
    """Records whether a metadata GetItem ran while a shard Query was already started."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.query_started = threading.Event()
        self.watching = False
        self.overlapped: list[bool] = []

    def watch(self) -> None:
        self.watching, self.overlapped = True, []
        self.query_started.clear()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def query(self, **request: Any) -> dict[str, Any]:
        self.query_started.set()
        return dict(self.inner.query(**request))

    def get_item(self, **request: Any) -> dict[str, Any]:
        if self.watching and request["TableName"] == METADATA_TABLE.default_name:
            self.overlapped.append(self.query_started.wait(timeout=0.5))
        return dict(self.inner.get_item(**request))


def test_a_repeat_read_queries_shards_while_it_reads_the_metadata(ddb_client: Any) -> None:
    # Given a key at 4 shards, read once (the reader then knows its shards)
    client = OverlapClient(ddb_client)
    ds = Dynashard(
        DynashardConfig(DATA_TABLE.default_name, METADATA_TABLE.default_name, max_workers=8),
        client=client,  # type: ignore[arg-type]
    )
    ds.set_shard_count("K", 4)
    first = make_events(200)
    ds.put_events(first)
    client.watch()
    assert [i["id"] for i in ds.query_events("K", limit=500).items] == expected_ids(first)
    assert client.overlapped == [False]  # nothing to go on: metadata first
    client.watching = False
    # When the key grows to 8 and more events land on the new shards
    ds.set_shard_count("K", 8)
    second = make_events(200, seed=8)  # other times: other items
    ds.put_events(second)
    client.watch()
    items = ds.query_events("K", limit=500).items
    # Then the next read started its 4 known shards before the metadata answered, and
    # still read all 8 the fresh metadata names: nothing missed, in order
    assert client.overlapped == [True]
    assert [i["id"] for i in items] == expected_ids(first + second)


def test_a_remembered_shard_the_key_no_longer_has_is_dropped(facade: Dynashard) -> None:
    # Given a key at 3 shards whose remembered view names 6 (e.g. another table's key)
    facade.set_shard_count("K", 3)
    events = make_events(120)
    facade.put_events(events)
    facade.read_memory.shard_info["K"] = ShardInfo("K", 6, 1, ((1, 6),))
    # When it is read
    page = facade.query_events("K", limit=500)
    # Then the page is exact and only the 3 shards the metadata names count as queried
    assert [i["id"] for i in page.items] == expected_ids(events)
    assert page.shards_queried == 3


def test_scatter_gather_reads_about_the_page_not_n_pages(ddb_client: Any) -> None:
    ds, flaky = flaky_facade(ddb_client)
    ds.set_shard_count("K", 8)
    events = make_events(800)
    ds.put_events(events)
    items = read_all(ds, limit=100)
    assert [i["id"] for i in items] == expected_ids(events)
    # Pushing the whole limit to 8 shards would read up to 8 x 800; the even share
    # with headroom reads under twice what is returned.
    assert flaky.items_read < 2 * len(events)
