"""Issue 26, "Exact on every path": GSI1 and bucketed reads never miss an item.

Edge years (bucket labels and windows at years 1, 999, 1000 and the last bucket of
9999), GSI1 bucket records after pruning, adopted keys and GSI1, and the time-bucket
unit stored with the key.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from dynashard import Dynashard, DynashardConfig, Event
from dynashard.core.buckets import (
    TimeBucket,
    bucket_start,
    next_bucket,
    time_bucket,
    window_buckets,
)
from dynashard.core.families import parse_bucketed_keys, window_bucket_keys
from dynashard.core.keys import format_ts
from infra.table_specs import DATA_TABLE, METADATA_TABLE

LAST = datetime.max.replace(tzinfo=UTC)  # 9999-12-31T23:59:59.999999Z
LAST_LABELS = {
    TimeBucket.HOUR: "9999-12-31T23",
    TimeBucket.DAY: "9999-12-31",
    TimeBucket.MONTH: "9999-12",
}


def _config(**extra: Any) -> DynashardConfig:
    return DynashardConfig(
        DATA_TABLE.default_name, METADATA_TABLE.default_name, max_workers=4, **extra
    )


def _all_pages(ds: Dynashard, key: str, **options: Any) -> list[str]:
    ids: list[str] = []
    cursor = None
    while True:
        page = ds.query_events(key, cursor=cursor, **options)
        ids.extend(i["id"] for i in page.items)
        cursor = page.cursor
        if cursor is None:
            return ids


# --- defect 6: edge years -------------------------------------------------------------


@pytest.mark.parametrize("year", [1, 999, 1000])
@pytest.mark.parametrize("unit", list(TimeBucket))
def test_labels_are_zero_padded_like_sort_keys(year: int, unit: TimeBucket) -> None:
    # Given a time in an edge year
    ts = datetime(year, 3, 4, 5, 6, tzinfo=UTC)
    # Then its label is the sort key's own prefix (fixed width, byte order = time order)
    label = time_bucket(ts, unit)
    assert format_ts(ts).startswith(label)
    assert label[:4] == f"{year:04d}"
    assert time_bucket(ts + timedelta(days=400), unit) > label  # sorts before the next year
    if year > 1:
        assert time_bucket(ts - timedelta(days=400), unit) < label


@pytest.mark.parametrize("unit", list(TimeBucket))
def test_the_last_bucket_of_9999_ends_a_window_without_overflow(unit: TimeBucket) -> None:
    # Given a window that reaches the last instant datetime can hold
    start = LAST - timedelta(hours=1)
    # When its buckets are listed
    labels = window_buckets(start, LAST, unit, limit=10)
    keys = window_bucket_keys("F", unit, start, LAST)
    # Then the last bucket is listed, and there is no bucket after it
    assert labels is not None and labels[-1] == LAST_LABELS[unit]
    assert keys[-1] == f"F#{LAST_LABELS[unit]}"
    last_start = bucket_start(LAST, unit)
    assert time_bucket(last_start, unit) == LAST_LABELS[unit]
    assert next_bucket(last_start, unit) is None


@pytest.mark.parametrize("unit", list(TimeBucket))
def test_the_first_bucket_of_year_1_walks(unit: TimeBucket) -> None:
    first = datetime(1, 1, 1, tzinfo=UTC)
    assert bucket_start(first, unit) == first
    assert time_bucket(first, unit) == {"hour": "0001-01-01T00", "day": "0001-01-01"}.get(
        unit.value, "0001-01"
    )
    following = next_bucket(first, unit)
    assert following is not None and time_bucket(following, unit) > time_bucket(first, unit)


@pytest.fixture
def ds(ddb_client: Any) -> Iterator[Dynashard]:
    facade = Dynashard(_config(), client=ddb_client)
    yield facade
    facade.close()


@pytest.mark.parametrize("year", [1, 999, 1000])
@pytest.mark.parametrize("descending", [False, True])
def test_gsi1_pages_at_edge_years_equal_base_pages(
    ds: Dynashard, year: int, descending: bool
) -> None:
    # Given a key on 2 shards written over three days of an edge year
    key = f"EDGE#{year}"
    ds.set_shard_count(key, 2)
    t0 = datetime(year, 2, 1, 20, tzinfo=UTC)
    events = [Event(key=key, id=f"e{i:03d}", ts=t0 + timedelta(hours=3 * i)) for i in range(20)]
    assert all(o.ok for o in ds.put_events(events))
    window = {"start": t0, "end": t0 + timedelta(days=3), "limit": 3, "descending": descending}
    # When it is read page by page from GSI1 and from the base table
    base = _all_pages(ds, key, path="base", **window)
    gsi = _all_pages(ds, key, path="gsi1", consistent=False, **window)
    # Then GSI1 has every item, in the same order
    expected = sorted((e.id for e in events if e.ts < t0 + timedelta(days=3)), reverse=descending)
    assert base == expected
    assert gsi == base


@pytest.mark.parametrize("unit", list(TimeBucket))
def test_reads_reaching_the_last_bucket_of_9999_do_not_overflow(
    ddb_client: Any, unit: TimeBucket
) -> None:
    # Given a plain key and a bucketed family, each with an event in the last bucket
    config = _config(time_bucket=unit, bucketed_keys=parse_bucketed_keys(f"LOG={unit.value}"))
    ds = Dynashard(config, client=ddb_client)
    ts = LAST - timedelta(minutes=5)
    assert all(o.ok for o in ds.put_events([Event(key="K", id="k", ts=ts)]))
    assert all(o.ok for o in ds.put_events([Event(key="LOG", id="l", ts=ts)]))
    start = LAST - timedelta(hours=2)
    # When windows reaching the end of year 9999 are read on every path
    for path in ("auto", "gsi1"):
        page = ds.query_events("K", start=start, end=LAST, consistent=False, path=path)
        assert [i["id"] for i in page.items] == ["k"]
    page = ds.query_events("LOG", start=start, end=LAST)
    # Then each finds its event (no OverflowError)
    assert [i["id"] for i in page.items] == ["l"]
    ds.close()


# --- GSI1 and adopted keys ------------------------------------------------------------


def test_an_adopted_key_is_never_read_from_gsi1(ds: Dynashard, ddb_client: Any) -> None:
    from dynashard.dynamodb.writer import build_item
    from dynashard.errors import InvalidInputError

    # Given legacy items under the bare key (as an application wrote them before
    # dynashard: no GSI1 attributes), the key adopted and grown, and new events
    t0 = datetime(2013, 1, 1, 10, tzinfo=UTC)
    legacy = [Event(key="K", id=f"old{i}", ts=t0 + timedelta(minutes=2 * i)) for i in range(7)]
    for event in legacy:
        item, _ = build_item(event, 0, TimeBucket.DAY)
        item["PK"] = {"S": "K"}
        del item["GSI1PK"], item["GSI1SK"]
        ddb_client.put_item(TableName=DATA_TABLE.default_name, Item=item)
    ds.adopt("K")
    ds.set_shard_count("K", 4)
    new = [Event(key="K", id=f"new{i}", ts=t0 + timedelta(minutes=2 * i + 1)) for i in range(9)]
    assert all(o.ok for o in ds.put_events(new))
    window = {"start": t0, "end": t0 + timedelta(hours=1), "limit": 5}
    expected = sorted(e.id for e in legacy + new)
    # When it is read eventually consistent, every item is there: the planner keeps
    # the base table, which reads the bare key too
    assert sorted(_all_pages(ds, "K", consistent=False, **window)) == expected
    page = ds.query_events("K", consistent=False, **window)
    assert page.plan is not None and page.plan.path == "base"
    assert "adopted" in page.plan.reason
    # And GSI1 asked for explicitly is refused, saying why
    with pytest.raises(InvalidInputError) as info:
        ds.query_events("K", consistent=False, path="gsi1", **window)
    assert info.value.field == "path"
    assert "adopted" in str(info.value)


# --- GSI1 bucket records past the bound -----------------------------------------------


def _few_records(monkeypatch: pytest.MonkeyPatch, limit: int) -> None:
    monkeypatch.setattr("dynashard.dynamodb.gsi_buckets.MAX_RECORDS", limit)


def test_a_late_event_of_a_pruned_bucket_never_shrinks_its_gsi1_fan_out(
    ddb_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dynashard.planning.reads import gsi1_shard_count

    # Given a key that keeps 3 bucket records, written at N = 9 on day 0
    _few_records(monkeypatch, 3)
    key = "DEPARTURES#JFK"
    t0 = datetime(2013, 1, 1, 10, tzinfo=UTC)
    writer, other = Dynashard(_config(), client=ddb_client), Dynashard(_config(), client=ddb_client)
    writer.set_shard_count(key, 9)
    day0 = [Event(key=key, id=f"a{i}", ts=t0 + timedelta(minutes=i)) for i in range(9)]
    assert all(o.ok for o in writer.put_events(day0))
    assert len({o.physical_key for o in writer.put_events(day0)}) > 1
    # And written on days 1..4 by another container, which prunes day 0's record
    for day in range(1, 5):
        other.metadata.invalidate(key)
        event = Event(key=key, id=f"d{day}", ts=t0 + timedelta(days=day))
        assert all(o.ok for o in other.put_events([event]))
    assert "2013-01-01" not in dict(other.shard_info(key).gsi1_shards)
    # When the key shrinks to 1 and a late (redelivered) event of day 0 arrives, in both
    # containers (the first one's recorder cache knows day 0 at 9)
    other.set_shard_count(key, 1)
    for ds in (other, writer):
        ds.metadata.invalidate(key)
        assert all(o.ok for o in ds.put_events([day0[0]]))
    # Then day 0 is read over every shard it can hold, and an eventually consistent read
    # of it finds all 9 events whichever path the planner picks
    info = other.shard_info(key)
    assert gsi1_shard_count(info, "2013-01-01") == 9
    window = {"start": t0, "end": t0 + timedelta(hours=1), "consistent": False, "limit": 4}
    expected = sorted(e.id for e in day0)
    for path in ("auto", "gsi1", "base"):
        assert sorted(_all_pages(other, key, path=path, **window)) == expected
    writer.close()
    other.close()


def test_the_pruned_watermark_only_rises_and_refuses_old_buckets(ds: Dynashard) -> None:
    from dynashard.dynamodb.gsi_buckets import Gsi1BucketRecorder

    key = "W"
    ds.metadata.for_writer(key)  # the key's metadata item
    recorder = Gsi1BucketRecorder(ds.client, METADATA_TABLE.default_name)
    for day in (1, 2, 3):
        recorder.ensure(key, f"2013-01-0{day}", 8)
    # When day 4 is recorded pruning days 1 and 2, then a stale writer prunes day 1 only
    recorder.ensure(key, "2013-01-04", 8, prune=["2013-01-01", "2013-01-02"])
    Gsi1BucketRecorder(ds.client, METADATA_TABLE.default_name).ensure(
        key, "2013-01-05", 8, prune=["2013-01-01"]
    )
    # And fresh recorders try to record day 2 anew at 1, and an old day 0 (pruned at once)
    Gsi1BucketRecorder(ds.client, METADATA_TABLE.default_name).ensure(key, "2013-01-02", 1)
    Gsi1BucketRecorder(ds.client, METADATA_TABLE.default_name).ensure(
        key, "2012-12-31", 1, prune=["2012-12-31"]
    )
    # Then the watermark stayed at day 2, day 2 was not recorded again, day 5 was recorded
    info = ds.shard_info(key)
    assert info.gsi1_pruned == "2013-01-02"
    assert dict(info.gsi1_shards) == {"2013-01-03": 8, "2013-01-04": 8, "2013-01-05": 8}


# --- the time-bucket unit is stored with the key --------------------------------------


def test_gsi1_reads_use_the_unit_the_key_was_written_with(ddb_client: Any) -> None:
    from dynashard.errors import InvalidInputError

    # Given a key written while the configuration said day
    key = "DEPARTURES#LGA"
    t0 = datetime(2013, 1, 1, 10, tzinfo=UTC)
    day = Dynashard(_config(time_bucket=TimeBucket.DAY), client=ddb_client)
    old = [Event(key=key, id=f"a{i}", ts=t0 + timedelta(minutes=7 * i)) for i in range(8)]
    assert all(o.ok for o in day.put_events(old))
    # When the configuration says hour from now on
    hour = Dynashard(_config(time_bucket=TimeBucket.HOUR), client=ddb_client)
    window = {"start": t0, "end": t0 + timedelta(hours=2), "consistent": False, "limit": 3}
    # Then eventually consistent reads, planned or on GSI1, still find every event
    for path in ("auto", "gsi1"):
        assert sorted(_all_pages(hour, key, path=path, **window)) == sorted(e.id for e in old)
    # And after new events written under the new unit, every read has old and new, on the
    # base table: GSI1 keys of two units cannot be read as one
    new = [Event(key=key, id=f"b{i}", ts=t0 + timedelta(minutes=7 * i + 1)) for i in range(8)]
    assert all(o.ok for o in hour.put_events(new))
    assert sorted(hour.shard_info(key).gsi1_units) == ["day", "hour"]
    for ds in (day, hour):
        ids = _all_pages(ds, key, **window)
        assert sorted(ids) == sorted(e.id for e in old + new)
        page = ds.query_events(key, **window)
        assert page.plan is not None and page.plan.path == "base"
        with pytest.raises(InvalidInputError) as info:
            ds.query_events(key, path="gsi1", **window)
        assert info.value.field == "path" and "day, hour" in str(info.value)
    day.close()
    hour.close()


def test_a_bucketed_family_keeps_the_unit_of_its_first_write(ddb_client: Any) -> None:
    # Given a family written while the configuration said day
    t0 = datetime(2026, 6, 22, 10, tzinfo=UTC)
    day = Dynashard(_config(bucketed_keys=parse_bucketed_keys("OPS_LOG=day")), client=ddb_client)
    old = [Event(key="OPS_LOG", id=f"a{i}", ts=t0 + timedelta(hours=5 * i)) for i in range(8)]
    assert all(o.ok for o in day.put_events(old))
    # When the configuration says hour from now on
    hour = Dynashard(_config(bucketed_keys=parse_bucketed_keys("OPS_LOG=hour")), client=ddb_client)
    window = {"start": t0, "end": t0 + timedelta(days=2), "limit": 3}
    # Then reads of the family still find every event (the stored unit is read)
    assert _all_pages(hour, "OPS_LOG", **window) == [e.id for e in old]
    # And writes under the other unit are refused for good, naming both units
    outcomes = hour.put_events([Event(key="OPS_LOG", id="b0", ts=t0)])
    assert [(o.ok, o.permanent) for o in outcomes] == [(False, True)]
    assert "day" in (outcomes[0].error or "") and "hour" in (outcomes[0].error or "")
    # While another family, and plain keys, are written as configured
    assert all(o.ok for o in hour.put_events([Event(key="K", id="k", ts=t0)]))
    assert _all_pages(hour, "OPS_LOG", **window) == [e.id for e in old]
    day.close()
    hour.close()
