"""Exact counts and compaction of the copies a redelivery across a resize leaves (issue 26).

The duplicate is made the way it happens: an event written at N = 4, the key resized to
8, the same event redelivered; its id is one the jump hash moves between the counts.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from dynashard import Dynashard, DynashardConfig, Event
from dynashard.core.buckets import TimeBucket
from dynashard.core.ordered import OrderedLayout
from dynashard.core.strategies import shard_for
from dynashard.dynamodb.compaction import CompactionError
from dynashard.dynamodb.writer import build_item
from dynashard.errors import InvalidInputError, ShardQueryError, StateConflictError
from infra.table_specs import DATA_TABLE, METADATA_TABLE

from ..fakes import FlakyClient, client_error

T0 = datetime(2013, 1, 1, tzinfo=UTC)
TABLE = DATA_TABLE.default_name


def moving_id(old: int = 4, new: int = 8, prefix: str = "moved") -> str:
    """An event id the jump hash puts on another shard under ``new`` than under ``old``."""
    return next(
        f"{prefix}{i}"
        for i in range(1000)
        if shard_for(f"{prefix}{i}", old) != shard_for(f"{prefix}{i}", new)
    )


def staying_events(n: int, key: str = "K") -> list[Event]:
    """Events whose shard is the same under 4 and 8 shards (a redelivery overwrites them)."""
    ids = (f"s{i}" for i in range(10_000))
    chosen = [i for i in ids if shard_for(i, 4) == shard_for(i, 8)][:n]
    return [
        Event(key=key, id=i, ts=T0 + timedelta(minutes=k), data={"k": k})
        for k, i in enumerate(chosen)
    ]


def make_duplicate(ds: Dynashard, key: str = "K", n_other: int = 20) -> tuple[Event, list[Event]]:
    """Write events at N = 4, resize to 8, redeliver them all: one is stored twice."""
    moved = Event(key=key, id=moving_id(), ts=T0 + timedelta(seconds=30), data={"dest": "ORD"})
    others = staying_events(n_other, key)
    ds.set_shard_count(key, 4)
    assert all(o.ok for o in ds.put_events([moved, *others]))
    ds.set_shard_count(key, 8)
    ds.metadata.invalidate(key)  # the writer's cached count is 8 from now on
    assert all(o.ok for o in ds.put_events([moved, *others]))  # the redelivery
    return moved, [moved, *others]


def scan(client: Any, key: str) -> list[dict[str, Any]]:
    """Every stored item of a logical key's events, by a Scan (what over-counts)."""
    items: list[dict[str, Any]] = []
    request: dict[str, Any] = {"TableName": TABLE}
    while True:
        page = client.scan(**request)
        items.extend(i for i in page["Items"] if i.get("key", {}).get("S") == key)
        if "LastEvaluatedKey" not in page:
            return items
        request["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def read_ids(ds: Dynashard, key: str = "K") -> list[str]:
    ids: list[str] = []
    cursor = None
    while True:
        page = ds.query_events(key, cursor=cursor, limit=7)
        ids.extend(i["id"] for i in page.items)
        cursor = page.cursor
        if cursor is None:
            return ids


def copies_of(client: Any, key: str, event_id: str) -> list[str]:
    return sorted(i["PK"]["S"] for i in scan(client, key) if i["id"]["S"] == event_id)


class Racing:
    """Delegates to a client; runs ``before_transaction`` once, just before the first
    TransactWriteItems (a concurrent writer acting between the read and the delete)."""

    def __init__(self, inner: Any, before_transaction: Any) -> None:
        self.inner = inner
        self.before_transaction = before_transaction
        self.transactions = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def transact_write_items(self, **request: Any) -> Any:
        self.transactions += 1
        if self.before_transaction is not None:
            action, self.before_transaction = self.before_transaction, None
            action()
        return self.inner.transact_write_items(**request)


def facade_over(client: Any) -> Dynashard:
    return Dynashard(
        DynashardConfig(TABLE, METADATA_TABLE.default_name, max_workers=4),
        client=client,
    )


# --- the duplicate, counted and compacted --------------------------------------------------
def test_a_redelivery_across_a_resize_is_counted_once_and_compacted_to_one_copy(
    facade: Dynashard, ddb_client: Any
) -> None:
    # Given an event stored twice by a redelivery across a resize 4 -> 8
    moved, events = make_duplicate(facade)
    old, new = f"K#{shard_for(moved.id, 4)}", f"K#{shard_for(moved.id, 8)}"
    assert copies_of(ddb_client, "K", moved.id) == sorted([old, new])
    assert len(scan(ddb_client, "K")) == len(events) + 1  # a Scan over-counts
    before = sorted(read_ids(facade))
    assert before == sorted(e.id for e in events)  # reads collapse the copy
    # When it is counted
    count = facade.count_events("K")
    # Then the count is exact and names the extra copy
    assert count.to_json() == {
        "key": "K",
        "distinct": len(events),
        "stored": len(events) + 1,
        "duplicates": 1,
        "shards_read": 8,
    }
    # When the key is compacted
    result = facade.compact("K")
    # Then exactly the old-shard copy is deleted, the one N = 8 chooses is kept
    assert result.deleted == [{"sort_key": moved.sort_key, "physical_key": old, "kept": new}]
    assert (result.skipped, result.would_delete, result.count.duplicates) == ([], [], 1)
    assert copies_of(ddb_client, "K", moved.id) == [new]
    assert len(scan(ddb_client, "K")) == len(events)
    assert sorted(read_ids(facade)) == before
    assert facade.count_events("K").duplicates == 0
    # And a second compaction has nothing to do
    again = facade.compact("K")
    assert (again.deleted, again.skipped, again.count.duplicates) == ([], [], 0)


def test_the_kept_copy_is_the_lowest_shard_when_the_current_n_chooses_none(
    facade: Dynashard, ddb_client: Any
) -> None:
    # Given copies on two shards, neither the one N = 8 would choose now
    moved, _ = make_duplicate(facade)
    facade.set_shard_count("K", 3)
    held = sorted(shard_for(moved.id, n) for n in (4, 8))
    assert shard_for(moved.id, 3) not in held  # N = 3 chooses a shard without a copy
    # When the key is compacted
    result = facade.compact("K")
    # Then the copy on the lowest shard is kept
    assert [(d["physical_key"], d["kept"]) for d in result.deleted] == [
        (f"K#{held[1]}", f"K#{held[0]}")
    ]
    assert copies_of(ddb_client, "K", moved.id) == [f"K#{held[0]}"]


def test_a_dry_run_reports_and_deletes_nothing(facade: Dynashard, ddb_client: Any) -> None:
    moved, events = make_duplicate(facade)
    result = facade.compact("K", dry_run=True)
    assert result.dry_run and result.deleted == []
    assert result.would_delete == [
        {
            "sort_key": moved.sort_key,
            "physical_key": f"K#{shard_for(moved.id, 4)}",
            "kept": f"K#{shard_for(moved.id, 8)}",
        }
    ]
    assert len(scan(ddb_client, "K")) == len(events) + 1
    assert result.to_json()["would_delete"] == result.would_delete


def test_count_takes_a_window_like_reads(facade: Dynashard) -> None:
    _, events = make_duplicate(facade)
    # [T0, T0 + 2 min): the moved event (T0 + 30 s) and the first two others
    count = facade.count_events("K", start=T0, end=T0 + timedelta(minutes=2))
    assert (count.distinct, count.stored, count.duplicates) == (3, 4, 1)
    later = facade.count_events("K", start=T0 + timedelta(minutes=1))
    assert (later.distinct, later.duplicates) == (len(events) - 2, 0)
    with pytest.raises(InvalidInputError, match="from: must be earlier than to"):
        facade.count_events("K", start=T0, end=T0)


# --- races: never the last copy ------------------------------------------------------------
def test_a_copy_re_put_with_other_data_during_the_compaction_is_not_deleted(
    ddb_client: Any,
) -> None:
    # Given a duplicate, and a writer that re-puts the old-shard copy with a changed
    # payload between the compaction's read and its delete
    racing = Racing(ddb_client, None)
    ds = facade_over(racing)
    moved, _ = make_duplicate(ds)
    old = shard_for(moved.id, 4)
    changed = moved.model_copy(update={"data": {"dest": "SFO"}})
    item, _ = build_item(changed, old, TimeBucket.DAY)
    racing.before_transaction = lambda: ddb_client.put_item(TableName=TABLE, Item=item)
    # When the key is compacted
    result = ds.compact("K")
    # Then the changed copy is left, and said so; both copies are still there
    assert result.deleted == []
    assert [s["physical_key"] for s in result.skipped] == [f"K#{old}"]
    assert result.skipped[0]["reason"].startswith("ConditionalCheckFailed: this copy")
    assert len(copies_of(ddb_client, "K", moved.id)) == 2
    ds.close()


def test_a_kept_copy_deleted_during_the_compaction_keeps_the_other(ddb_client: Any) -> None:
    # Given a duplicate, and a concurrent delete of the copy the compaction keeps (say a
    # second compaction that chose it as the extra one after N changed)
    racing = Racing(ddb_client, None)
    ds = facade_over(racing)
    moved, _ = make_duplicate(ds)
    new = f"K#{shard_for(moved.id, 8)}"
    racing.before_transaction = lambda: ddb_client.delete_item(
        TableName=TABLE, Key={"PK": {"S": new}, "SK": {"S": moved.sort_key}}
    )
    # When the key is compacted
    result = ds.compact("K")
    # Then the transaction's check on the kept copy refuses the delete: the last copy stays
    assert result.deleted == []
    assert result.skipped[0]["reason"].startswith("ConditionalCheckFailed: the kept copy")
    assert copies_of(ddb_client, "K", moved.id) == [f"K#{shard_for(moved.id, 4)}"]
    assert moved.id in read_ids(ds)
    ds.close()


def test_a_redelivery_of_the_same_event_during_the_compaction_changes_nothing(
    ddb_client: Any,
) -> None:
    racing = Racing(ddb_client, None)
    ds = facade_over(racing)
    moved, _ = make_duplicate(ds)
    racing.before_transaction = lambda: ds.put_events([moved])  # lands on the kept copy
    result = ds.compact("K")
    assert len(result.deleted) == 1 and result.skipped == []
    assert copies_of(ddb_client, "K", moved.id) == [f"K#{shard_for(moved.id, 8)}"]
    ds.close()


def test_copies_that_differ_are_left_and_reported(facade: Dynashard, ddb_client: Any) -> None:
    # Given a redelivery across the resize that carried another payload
    moved, _ = make_duplicate(facade)
    changed = moved.model_copy(update={"data": {"dest": "SFO"}})
    facade.put_events([changed])  # overwrites the N = 8 copy only
    result = facade.compact("K")
    assert result.deleted == []
    assert [s["reason"] for s in result.skipped] == ["differs in data"]
    assert len(copies_of(ddb_client, "K", moved.id)) == 2


# --- adoption ----------------------------------------------------------------------------
def test_an_adopted_keys_bare_items_are_counted_and_their_copy_compacted(
    facade: Dynashard, ddb_client: Any
) -> None:
    # Given items under the bare key, adopted, sharded, and one old event redelivered
    old = [Event(key="LEGACY", id=f"old{i}", ts=T0 + timedelta(minutes=i)) for i in range(5)]
    for event in old:
        item, _ = build_item(event, 0, TimeBucket.DAY)
        item["PK"] = {"S": "LEGACY"}
        ddb_client.put_item(TableName=TABLE, Item=item)
    facade.adopt("LEGACY")
    facade.set_shard_count("LEGACY", 2)
    new = [
        Event(key="LEGACY", id=f"new{i}", ts=T0 + timedelta(hours=1, minutes=i)) for i in range(3)
    ]
    facade.put_events([*new, old[2]])
    # When it is counted
    count = facade.count_events("LEGACY")
    # Then the bare key is read and its item counts once
    assert (count.distinct, count.stored, count.duplicates, count.shards_read) == (8, 9, 1, 3)
    # And compaction keeps the shard copy (where a redelivery lands) and deletes the bare one
    result = facade.compact("LEGACY")
    shard = f"LEGACY#{shard_for('old2', 2)}"
    assert result.deleted == [
        {"sort_key": old[2].sort_key, "physical_key": "LEGACY", "kept": shard}
    ]
    assert copies_of(ddb_client, "LEGACY", "old2") == [shard]
    assert sorted(read_ids(facade, "LEGACY")) == sorted(e.id for e in old + new)


def test_another_keys_items_under_an_aliasing_partition_key_are_not_counted_or_touched(
    facade: Dynashard, ddb_client: Any
) -> None:
    # Given L on 8 shards, and an item another program wrote under the partition key L#7
    # (its own logical key L#7) with the sort key of one of L's events on another shard
    facade.set_shard_count("L", 8)
    event = Event(key="L", id=next(f"x{i}" for i in range(99) if shard_for(f"x{i}", 8) != 7), ts=T0)
    facade.put_events([event])
    foreign, _ = build_item(event.model_copy(update={"key": "L#7"}), 0, TimeBucket.DAY)
    foreign["PK"] = {"S": "L#7"}
    ddb_client.put_item(TableName=TABLE, Item=foreign)
    # Then it is not one of L's events, for a count as for a read, and compaction leaves it
    count = facade.count_events("L")
    assert (count.distinct, count.stored, count.duplicates) == (1, 1, 0)
    assert read_ids(facade, "L") == [event.id]
    assert facade.compact("L").deleted == []
    assert len(scan(ddb_client, "L#7")) == 1


# --- errors ------------------------------------------------------------------------------
def test_a_failed_shard_query_fails_the_count_and_the_compaction_naming_the_shard(
    ddb_client: Any,
) -> None:
    flaky = FlakyClient(ddb_client)
    ds = facade_over(flaky)
    _, events = make_duplicate(ds)
    flaky.failing_pks = {"K#5"}
    with pytest.raises(ShardQueryError) as counted:
        ds.count_events("K")
    assert counted.value.shards == ["K#5"]
    assert "InternalServerError" in counted.value.message
    with pytest.raises(ShardQueryError, match="K#5"):
        ds.compact("K")
    assert len(scan(ddb_client, "K")) == len(events) + 1  # nothing deleted
    ds.close()


def test_a_failure_on_a_later_page_fails_the_count(ddb_client: Any) -> None:
    flaky = FlakyClient(ddb_client)
    ds = facade_over(flaky)
    make_duplicate(ds, n_other=40)
    flaky.page_cap = 2  # stands for Query's 1 MB page: several pages per shard
    assert ds.count_events("K").distinct == 41  # paging reads every page
    flaky.fail_after_first_query = {"K#2"}
    flaky.queries.clear()
    with pytest.raises(ShardQueryError, match="K#2"):
        ds.count_events("K")
    ds.close()


def test_a_failed_delete_raises_naming_the_copy_and_the_aws_error(ddb_client: Any) -> None:
    def throttle() -> None:
        raise client_error(
            "ProvisionedThroughputExceededException", "slow down", "TransactWriteItems"
        )

    racing = Racing(ddb_client, None)
    ds = facade_over(racing)
    moved, events = make_duplicate(ds)
    racing.before_transaction = throttle
    with pytest.raises(CompactionError) as raised:
        ds.compact("K")
    message = raised.value.message
    assert "ProvisionedThroughputExceededException" in message
    assert f"K#{shard_for(moved.id, 4)}" in message and moved.sort_key in message
    assert raised.value.deleted == []
    assert len(scan(ddb_client, "K")) == len(events) + 1
    ds.close()


def test_an_ordered_index_is_refused(facade: Dynashard) -> None:
    facade.ordered_index("TAILNUM").configure(OrderedLayout.uniform(["n5"]))
    with pytest.raises(StateConflictError, match="ordered index"):
        facade.count_events("TAILNUM")
    with pytest.raises(StateConflictError, match="ordered index"):
        facade.compact("TAILNUM")


def test_a_bucketed_family_key_is_refused_naming_its_bucket_keys(ddb_client: Any) -> None:
    from dynashard.core.families import parse_bucketed_keys

    ds = Dynashard(
        DynashardConfig(
            TABLE,
            METADATA_TABLE.default_name,
            bucketed_keys=parse_bucketed_keys("OPS_LOG=day"),
        ),
        client=ddb_client,
    )
    ds.put_events([Event(key="OPS_LOG", id="a", ts=T0)])
    with pytest.raises(InvalidInputError, match="time-bucketed family"):
        ds.count_events("OPS_LOG")
    assert ds.count_events("OPS_LOG#2013-01-01").distinct == 1
    ds.close()
