"""The planned reader: which path serves a page, with which options, and why it says so.

:class:`dynashard.dynamodb.planned_reader.PlannedReader` is given recording fakes for
its base-table and GSI1 readers and its metadata, so each test sees exactly the call
the plan led to (its options included) and the plan the page carries.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from dynashard.core.buckets import TimeBucket, bucket_for
from dynashard.core.merge import Cursor
from dynashard.core.shard_info import ShardInfo
from dynashard.dynamodb.gsi_reader import gsi1_fingerprint
from dynashard.dynamodb.planned_reader import ADOPTED_UNAVAILABLE, PlannedReader
from dynashard.dynamodb.reader import Page
from dynashard.errors import InvalidInputError
from dynashard.planning.reads import MAX_GSI1_REQUESTS, ReadPath

T0 = datetime(2013, 1, 1, 10, tzinfo=UTC)
#: One day's bucket (G = 1) then the next (G = 4), 32 base-table shards.
TWO_DAYS = ShardInfo(
    "K", 32, 0, ((0, 32),), gsi1_shards=(("2013-01-01", 1), ("2013-01-02", 4))
)  # fmt: skip


class Recorder:
    """A reader that records each ``query`` call and answers an empty page."""

    def __init__(self, shards: int = 0) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.shards = shards

    def query(self, key: str, **kwargs: Any) -> Page:
        self.calls.append((key, kwargs))
        return Page(items=[], cursor=None, shards_queried=self.shards)


class Metadata:
    def __init__(self, info: ShardInfo) -> None:
        self.info = info

    def for_reader(self, key: str) -> ShardInfo:
        return self.info


def reader(info: ShardInfo = TWO_DAYS, bucket_of: Any = None) -> PlannedReader:
    of = bucket_of or (lambda key: TimeBucket.DAY)
    return PlannedReader(Recorder(32), Recorder(), Metadata(info), of)  # type: ignore[arg-type]


def test_an_adopted_key_is_read_from_the_base_table_with_every_option() -> None:
    # Given an adopted key, read eventually consistently over a bounded window
    info = ShardInfo("K", 32, 0, ((0, 32),), adopted=True)
    planned = reader(info)
    start, end = T0, T0 + timedelta(hours=2)
    # When a page is read with a limit and descending
    page = planned.query("K", consistent=False, start=start, end=end, limit=7, descending=True)
    # Then the base table serves it, with the key's metadata and every option asked for
    assert planned.gsi.calls == []  # type: ignore[attr-defined]
    [(key, kwargs)] = planned.base.calls  # type: ignore[attr-defined]
    assert key == "K"
    assert kwargs["info"] is info
    assert (kwargs["limit"], kwargs["descending"]) == (7, True)
    assert (kwargs["start"], kwargs["end"]) == (start, end)
    assert page.plan is not None and page.plan.path is ReadPath.BASE
    assert ADOPTED_UNAVAILABLE in page.plan.reason


def test_a_key_of_mixed_units_asks_the_unit_of_its_own_key_only() -> None:
    # Given a key whose GSI1 keys were written under two units, and per-prefix units
    info = ShardInfo("K", 32, 0, ((0, 32),), gsi1_units=frozenset({"day", "hour"}))
    asked: list[Any] = []

    def bucket_of(key: str) -> TimeBucket:
        asked.append(key)
        return bucket_for(key, (("DEPARTURES#", TimeBucket.HOUR),), TimeBucket.DAY)

    planned = reader(info, bucket_of)
    # When a bounded window is read eventually consistently
    page = planned.query("K", consistent=False, start=T0, end=T0 + timedelta(hours=2))
    # Then only the key's own unit is asked, and the base table serves it, saying why
    assert asked and set(asked) == {"K"}
    assert page.plan is not None and page.plan.path is ReadPath.BASE
    assert "more than one time-bucket unit" in page.plan.reason


def test_a_start_that_is_not_a_datetime_is_refused_naming_from() -> None:
    # When a read's start is text, not a datetime, then the error names the field "from"
    with pytest.raises(InvalidInputError) as caught:
        reader().query("K", start="2013-01-01T10:00:00Z", end=T0)  # type: ignore[arg-type]
    assert caught.value.field == "from"


def test_a_descending_gsi1_read_is_planned_from_the_newest_buckets_count() -> None:
    # Given two day buckets, the newer with G = 4
    window = {"start": T0, "end": T0 + timedelta(days=1, hours=2)}
    # When the window is read newest first, then the plan counts G of the newest bucket
    # first: 4 Queries + 1 for the older bucket
    newest = reader().query("K", consistent=False, descending=True, **window)  # type: ignore[arg-type]
    assert newest.plan is not None and newest.plan.path is ReadPath.GSI1
    assert newest.plan.requests == 4 + 1
    # And oldest first, G of the oldest: 1 + 1
    oldest = reader().query("K", consistent=False, **window)  # type: ignore[arg-type]
    assert oldest.plan is not None and oldest.plan.requests == 1 + 1


def test_a_gsi1_read_without_a_limit_reads_a_page_of_100() -> None:
    # When a bounded window GSI1 serves is read without a limit
    planned = reader()
    page = planned.query("K", consistent=False, start=T0, end=T0 + timedelta(hours=2))
    # Then GSI1 is asked for the default page of 100 items
    assert page.plan is not None and page.plan.path is ReadPath.GSI1
    [(_, kwargs)] = planned.gsi.calls  # type: ignore[attr-defined]
    assert kwargs["limit"] == 100
    assert planned.base.calls == []  # type: ignore[attr-defined]


def test_a_gsi1_read_without_descending_reads_oldest_first() -> None:
    # When a bounded window GSI1 serves is read without saying the order
    planned = reader()
    page = planned.query("K", consistent=False, start=T0, end=T0 + timedelta(hours=2))
    # Then GSI1 is asked for the oldest first (descending False, not merely falsy)
    assert page.plan is not None and page.plan.path is ReadPath.GSI1
    [(_, kwargs)] = planned.gsi.calls  # type: ignore[attr-defined]
    assert kwargs["descending"] is False


def test_a_gsi1_cursor_of_an_oldest_first_read_continues_when_the_order_is_left_out() -> None:
    # Given the cursor of a GSI1 read asked oldest first (descending=False)
    start, end = T0, T0 + timedelta(hours=2)
    query = gsi1_fingerprint("K", start, end, False, TimeBucket.DAY)
    cursor = Cursor(query, "2013-01-01T10:30:00.000000Z#e1").encode()
    planned = reader()
    # When the next page is read without saying the order (oldest first is the default)
    page = planned.query("K", consistent=False, start=start, end=end, cursor=cursor)
    # Then GSI1 continues it, with the cursor, oldest first
    assert page.plan is not None and page.plan.path is ReadPath.GSI1
    assert planned.base.calls == []  # type: ignore[attr-defined]
    [(_, kwargs)] = planned.gsi.calls  # type: ignore[attr-defined]
    assert (kwargs["cursor"], kwargs["descending"]) == (cursor, False)


def test_gsi1_serves_a_read_of_exactly_the_most_queries_it_may_make() -> None:
    # Given a key of 100 shards and no GSI1 records (G = 100 in every bucket), so that
    # a window of 10 day buckets makes exactly MAX_GSI1_REQUESTS (1000) GSI1 queries
    info = ShardInfo("K", 100, 0, ((0, 100),))
    start = datetime(2013, 1, 1, tzinfo=UTC)
    assert MAX_GSI1_REQUESTS == 10 * 100
    planned = reader(info)
    # When the window is read on GSI1
    page = planned.query(
        "K", consistent=False, path="gsi1", start=start, end=start + timedelta(days=10)
    )
    # Then GSI1 serves it with all 1000 queries (the limit is inclusive)
    assert page.plan is not None and page.plan.path is ReadPath.GSI1
    [(_, kwargs)] = planned.gsi.calls  # type: ignore[attr-defined]
    assert len(kwargs["buckets"]) == 10 and sum(kwargs["gsi1_shards"]) == MAX_GSI1_REQUESTS
    # And one day more, 1100 queries, is refused naming the path and the limit
    with pytest.raises(InvalidInputError) as caught:
        planned.query(
            "K", consistent=False, path="gsi1", start=start, end=start + timedelta(days=11)
        )
    assert caught.value.field == "path"
    assert f"more than {MAX_GSI1_REQUESTS} GSI1 queries" in caught.value.message


def test_a_read_without_an_end_says_gsi1_needs_a_bounded_window() -> None:
    # When a window open at its end is read eventually consistently
    planned = reader()
    page = planned.query("K", consistent=False, start=T0)
    # Then the base table serves it and the plan says why GSI1 cannot
    assert planned.gsi.calls == []  # type: ignore[attr-defined]
    assert page.plan is not None and page.plan.path is ReadPath.BASE
    assert page.plan.reason.endswith("gsi1 n/a: it needs a bounded window (from and to)")


def test_a_targeted_read_is_served_by_the_base_table_saying_why() -> None:
    # Given a bounded window GSI1 would serve cheaper (G = 1 against 32 base shards)
    planned = reader()
    # When it is read targeting a calculated key's value
    page = planned.query(
        "K", consistent=False, start=T0, end=T0 + timedelta(hours=2), attribute_value="JFK"
    )
    # Then the base table serves it (GSI1 keys hold no attribute value), saying why
    assert planned.gsi.calls == []  # type: ignore[attr-defined]
    [(_, kwargs)] = planned.base.calls  # type: ignore[attr-defined]
    assert kwargs["attribute_value"] == "JFK"
    assert page.plan is not None and page.plan.path is ReadPath.BASE
    assert page.plan.reason.endswith("a targeted read (attr) is served by the base table")
