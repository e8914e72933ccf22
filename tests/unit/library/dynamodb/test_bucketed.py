"""Time-bucketed logical keys: families, bucket keys, windows, the cursor, reads across buckets."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError
from hypothesis import given
from hypothesis import strategies as st

from dynashard import Dynashard, DynashardConfig, Event
from dynashard.core.buckets import TimeBucket, bucket_start, next_bucket, time_bucket
from dynashard.core.families import (
    MAX_WINDOW_BUCKETS,
    bucket_key,
    family_of,
    parse_bucketed_keys,
    window_bucket_keys,
)
from dynashard.core.merge import encode_token
from dynashard.dynamodb.bucketed_reader import (
    GSI1_UNAVAILABLE,
    BucketCursor,
    BucketedReader,
    bucketed_fingerprint,
)
from dynashard.dynamodb.reader import Page
from dynashard.errors import CursorError, InvalidInputError, ShardQueryError
from dynashard.planning.reads import MAX_PAGE_LIMIT
from infra.table_specs import DATA_TABLE, METADATA_TABLE

T0 = datetime(2026, 6, 22, tzinfo=UTC)
FAMILIES = parse_bucketed_keys("OPS_LOG=day,THREAT#=month,THREAT#vip=hour")

# --- configuration and matching ---------------------------------------------------


def test_parse_orders_longest_first_and_names_the_field() -> None:
    assert [(f.name, f.unit) for f in FAMILIES] == [
        ("THREAT#vip", TimeBucket.HOUR),
        ("OPS_LOG", TimeBucket.DAY),
        ("THREAT#", TimeBucket.MONTH),
    ]
    assert parse_bucketed_keys("") == ()
    for bad in ("OPS_LOG", "OPS_LOG=week", "=day", "#=day", "A=day,A=hour"):
        with pytest.raises(InvalidInputError) as info:
            parse_bucketed_keys(bad)
        assert info.value.field == "bucketed_keys", bad


@pytest.mark.parametrize(
    ("key", "family"),
    [
        ("OPS_LOG", "OPS_LOG"),  # exact name
        ("OPS_LOG#2026-06-22", None),  # an exact name is not a prefix
        ("OPS_LOGS", None),
        ("THREAT#brand-abc", "THREAT#"),  # prefix
        ("THREAT#", None),  # the prefix alone is no key of the family
        ("THREAT#vip", "THREAT#vip"),  # exact name beats the prefix
        ("THREAT#vipx", "THREAT#"),
        ("DEPARTURES#JFK", None),
    ],
)
def test_family_matching(key: str, family: str | None) -> None:
    found = family_of(key, FAMILIES)
    assert (found.name if found else None) == family


def test_config_and_settings_carry_the_families() -> None:
    from dynashard.lambda_kit.settings import FunctionSettings

    settings = FunctionSettings.model_validate(
        {
            "DYNASHARD_DATA_TABLE": "data",
            "DYNASHARD_METADATA_TABLE": "meta",
            "DYNASHARD_BUCKETED_KEYS": "OPS_LOG=day,THREAT#=month",
        }
    )
    config = settings.to_config()
    family = config.bucketed_family("THREAT#brand-abc")
    assert family is not None and family.unit is TimeBucket.MONTH
    assert config.bucketed_family("DEPARTURES#JFK") is None
    with pytest.raises(InvalidInputError) as info:
        FunctionSettings.model_validate(
            {
                "DYNASHARD_DATA_TABLE": "data",
                "DYNASHARD_METADATA_TABLE": "meta",
                "DYNASHARD_BUCKETED_KEYS": "OPS_LOG=fortnight",
            }
        ).to_config()
    assert info.value.field == "bucketed_keys"


def test_stack_parameter_is_validated() -> None:
    import pydantic

    from infra.config import StackParameters

    assert StackParameters(bucketed_keys="OPS_LOG=day").bucketed_keys == "OPS_LOG=day"
    with pytest.raises(pydantic.ValidationError):
        StackParameters(bucketed_keys="OPS_LOG")


# --- bucket keys and windows --------------------------------------------------------


def test_bucket_key_examples() -> None:
    ts = datetime(2026, 6, 22, 1, 30, tzinfo=UTC)
    assert bucket_key("OPS_LOG", ts, TimeBucket.DAY) == "OPS_LOG#2026-06-22"
    assert bucket_key("THREAT#brand-abc", ts, TimeBucket.MONTH) == "THREAT#brand-abc#2026-06"
    assert bucket_key("X", ts, TimeBucket.HOUR) == "X#2026-06-22T01"


times = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2099, 12, 31), timezones=st.just(UTC)
)
units = st.sampled_from(list(TimeBucket))


@given(a=times, b=times, unit=units)
def test_labels_sort_in_time_order(a: datetime, b: datetime, unit: TimeBucket) -> None:
    # fixed-width ISO-like labels: byte order is time order
    if a <= b:
        assert time_bucket(a, unit) <= time_bucket(b, unit)


@given(start=times, span=st.integers(1, 40 * 24 * 3600), unit=units)
def test_window_buckets_cover_it_exactly_in_order(
    start: datetime, span: int, unit: TimeBucket
) -> None:
    end = start + timedelta(seconds=span)
    keys = window_bucket_keys("F", unit, start, end)
    # Then the keys are increasing, start with start's bucket and end with the one of
    # the window's last instant, and every bucket in between is listed once
    assert keys == sorted(set(keys))
    assert keys[0] == bucket_key("F", start, unit)
    assert keys[-1] == bucket_key("F", end - timedelta(microseconds=1), unit)
    walk, expected = bucket_start(start, unit), []
    while walk < end:
        expected.append(bucket_key("F", walk, unit))
        walk = next_bucket(walk, unit)
    assert keys == expected


def test_window_needs_both_bounds_and_is_bounded() -> None:
    for start, end, field in [
        (None, T0, "from"),
        (T0, None, "to"),
        (T0, T0, "from"),
        (T0, T0 + timedelta(days=MAX_WINDOW_BUCKETS + 1), "to"),
    ]:
        with pytest.raises(InvalidInputError) as info:
            window_bucket_keys("OPS_LOG", TimeBucket.DAY, start, end)
        assert info.value.field == field
    keys = window_bucket_keys("OPS_LOG", TimeBucket.DAY, T0, T0 + timedelta(days=1000))
    assert len(keys) == MAX_WINDOW_BUCKETS


def test_cursor_round_trip_and_refusals() -> None:
    cursor = BucketCursor("q", 3, "inner")
    assert BucketCursor.decode(cursor.encode(), "q") == cursor
    assert BucketCursor.decode(BucketCursor("q", 0).encode(), "q").inner is None
    with pytest.raises(CursorError):
        BucketCursor.decode(cursor.encode(), "other")
    with pytest.raises(CursorError):
        BucketCursor.decode("not-a-cursor", "q")


# --- the reader over a fake bucket reader -------------------------------------------


class FakeBuckets:
    """Serves each bucket key's items from memory, page by page (offset cursors)."""

    def __init__(self, data: dict[str, list[str]], fail: frozenset[str] = frozenset()) -> None:
        self.data = data
        self.fail = fail
        self.calls: list[tuple[str, int]] = []

    def query(self, key: str, **options: Any) -> Page:
        self.calls.append((key, options["limit"]))
        if key in self.fail:
            raise ShardQueryError({f"{key}#0": "InternalServerError: boom"})
        ids = sorted(self.data.get(key, []), reverse=options.get("descending", False))
        offset = int(options.get("cursor") or 0)
        chunk = ids[offset : offset + options["limit"]]
        more = offset + len(chunk) < len(ids)
        return Page(
            items=[{"key": key, "id": i, "ts": i, "data": {}} for i in chunk],
            cursor=str(offset + len(chunk)) if more else None,
            shards_queried=1,
            queries=1,
            resume=str(offset + len(chunk)) if chunk else None,
        )


def _read_all(reader: BucketedReader, limit: int, descending: bool) -> list[list[str]]:
    pages, cursor = [], None
    while True:
        page = reader.query(
            "OPS_LOG",
            TimeBucket.DAY,
            start=T0,
            end=T0 + timedelta(days=4),
            limit=limit,
            descending=descending,
            cursor=cursor,
        )
        assert all(item["key"] == "OPS_LOG" for item in page.items)
        pages.append([item["id"] for item in page.items])
        cursor = page.cursor
        if cursor is None:
            return pages


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("limit", [1, 2, 3, 5, 100])
def test_pages_cross_buckets_without_gaps(limit: int, descending: bool) -> None:
    data = {
        "OPS_LOG#2026-06-22": ["a1", "a2", "a3"],
        "OPS_LOG#2026-06-23": [],  # an empty bucket in the middle
        "OPS_LOG#2026-06-24": ["c1", "c2"],
        "OPS_LOG#2026-06-25": ["d1"],
    }
    pages = _read_all(BucketedReader(FakeBuckets(data)), limit, descending)
    flat = [i for page in pages for i in page]
    expected = sorted(i for ids in data.values() for i in ids)
    assert flat == (expected[::-1] if descending else expected)
    assert all(0 < len(p) <= limit for p in pages[:-1])


def test_a_page_reads_only_the_buckets_it_needs() -> None:
    fake = FakeBuckets({"OPS_LOG#2026-06-22": ["a1", "a2", "a3"], "OPS_LOG#2026-06-23": ["b1"]})
    page = BucketedReader(fake).query(
        "OPS_LOG", TimeBucket.DAY, start=T0, end=T0 + timedelta(days=4), limit=2
    )
    assert [i["id"] for i in page.items] == ["a1", "a2"]
    assert fake.calls == [("OPS_LOG#2026-06-22", 2)]
    # the next page passes the remaining limit down to the next bucket
    fake.calls.clear()
    page = BucketedReader(fake).query(
        "OPS_LOG",
        TimeBucket.DAY,
        start=T0,
        end=T0 + timedelta(days=4),
        limit=2,
        cursor=page.cursor,
    )
    assert [i["id"] for i in page.items] == ["a3", "b1"]
    assert fake.calls[:2] == [("OPS_LOG#2026-06-22", 2), ("OPS_LOG#2026-06-23", 1)]
    # (the day after was read ahead with it, in parallel, or cancelled before it ran)
    assert fake.calls[2:] in ([], [("OPS_LOG#2026-06-24", 1)])


def test_sparse_buckets_are_read_ahead_in_parallel_and_used_in_order() -> None:
    # Given 30 day buckets, one event on days 0, 5, 6 and 29
    days = [T0 + timedelta(days=d) for d in range(30)]
    data = {f"OPS_LOG#{d:%Y-%m-%d}": [f"x{n}"] for n, d in enumerate(days) if n in (0, 5, 6, 29)}
    data[f"OPS_LOG#{days[6]:%Y-%m-%d}"] += ["x6b", "x6c"]
    fake = FakeBuckets(data)
    window = {"start": T0, "end": T0 + timedelta(days=30)}
    # When a page of 3 is read
    page = BucketedReader(fake).query("OPS_LOG", TimeBucket.DAY, limit=3, **window)
    # Then it holds days 0, 5 and the first of day 6, in order; day 6 was read ahead with
    # room 2 (3 items), so it was read again with room 1 for an exact cursor
    assert [i["id"] for i in page.items] == ["x0", "x5", "x6"]
    assert fake.calls.count(("OPS_LOG#2026-06-28", 1)) == 1  # re-read of day 6
    assert max(n for _, n in fake.calls) == 3
    # And the following page resumes inside day 6, then crosses 22 empty days
    page = BucketedReader(fake).query(
        "OPS_LOG", TimeBucket.DAY, limit=3, cursor=page.cursor, **window
    )
    assert [i["id"] for i in page.items] == ["x6b", "x6c", "x29"]
    assert page.cursor is None
    assert page.queries >= 24  # days 6..29, each bucket needed (empty ones included)


class TargetedBuckets(FakeBuckets):
    """A bucket reader serving a targeted read: only ids that start with the value."""

    def query(self, key: str, **options: Any) -> Page:
        page = super().query(key, **{**options, "attribute_value": None})
        value = options.get("attribute_value")
        page.items = [i for i in page.items if value is None or i["id"].startswith(str(value))]
        return page


def test_a_targeted_read_targets_every_bucket_it_reads() -> None:
    # Given two day buckets holding events of two devices, "a" and "b"
    data = {"OPS_LOG#2026-06-22": ["a1", "b1"], "OPS_LOG#2026-06-23": ["a2", "b2"]}
    window = {"start": T0, "end": T0 + timedelta(days=2)}
    # When device "a" is read across both buckets
    page = BucketedReader(TargetedBuckets(data)).query(
        "OPS_LOG", TimeBucket.DAY, limit=10, attribute_value="a", **window
    )
    # Then each bucket was read for "a" alone
    assert [i["id"] for i in page.items] == ["a1", "a2"]


class NoResumeBuckets(FakeBuckets):
    """A bucket reader (the port allows it) that gives no resume position."""

    def query(self, key: str, **options: Any) -> Page:
        page = super().query(key, **options)
        page.resume = None
        return page


def test_a_page_filled_at_a_bucket_end_without_a_resume_position_goes_on_at_the_next() -> None:
    # Given a reader that gives no resume position, and a page that fills exactly at the
    # end of the first bucket
    data = {"OPS_LOG#2026-06-22": ["a1", "a2"], "OPS_LOG#2026-06-23": ["b1"]}
    reader, window = (
        BucketedReader(NoResumeBuckets(data)),
        {"start": T0, "end": T0 + timedelta(days=2)},
    )
    first = reader.query("OPS_LOG", TimeBucket.DAY, limit=2, **window)
    # Then its cursor points at the next bucket, from its start
    assert [i["id"] for i in first.items] == ["a1", "a2"]
    assert first.cursor is not None
    fingerprint = bucketed_fingerprint("OPS_LOG", TimeBucket.DAY, T0, window["end"], False)
    assert BucketCursor.decode(first.cursor, fingerprint) == BucketCursor(fingerprint, 1)
    second = reader.query("OPS_LOG", TimeBucket.DAY, limit=2, cursor=first.cursor, **window)
    assert [i["id"] for i in second.items] == ["b1"]
    assert second.cursor is None


def test_a_failure_in_a_bucket_read_ahead_but_not_needed_is_not_the_pages() -> None:
    data = {"OPS_LOG#2026-06-23": ["b1"]}
    fake = FakeBuckets(data, fail=frozenset({"OPS_LOG#2026-06-24"}))
    page = BucketedReader(fake).query(
        "OPS_LOG", TimeBucket.DAY, start=T0, end=T0 + timedelta(days=3), limit=1
    )
    assert [i["id"] for i in page.items] == ["b1"]
    assert page.missing_shards == []
    with pytest.raises(ShardQueryError):  # the next page needs that bucket: it fails
        BucketedReader(fake).query(
            "OPS_LOG",
            TimeBucket.DAY,
            start=T0,
            end=T0 + timedelta(days=3),
            limit=1,
            cursor=page.cursor,
        )


def test_reader_refuses_what_it_cannot_serve() -> None:
    reader = BucketedReader(FakeBuckets({}))
    window = {"start": T0, "end": T0 + timedelta(days=2)}
    with pytest.raises(InvalidInputError) as info:
        reader.query("OPS_LOG", TimeBucket.DAY, start=T0)
    assert info.value.field == "to"
    with pytest.raises(InvalidInputError) as info:
        reader.query("OPS_LOG", TimeBucket.DAY, path="gsi1", consistent=False, **window)
    assert info.value.field == "path"
    with pytest.raises(InvalidInputError) as info:
        reader.query("OPS_LOG", TimeBucket.DAY, limit=0, **window)
    assert info.value.field == "limit"
    other = BucketCursor("elsewhere", 0).encode()
    with pytest.raises(CursorError):
        reader.query("OPS_LOG", TimeBucket.DAY, cursor=other, **window)
    page = reader.query("OPS_LOG", TimeBucket.DAY, **window)
    assert page.items == [] and page.cursor is None
    assert page.plan is not None and page.plan.path.value == "base"


def test_a_cursor_keeps_to_the_order_it_was_made_in() -> None:
    # Given the first page of an ascending read over two buckets, with a cursor
    fake = FakeBuckets({"OPS_LOG#2026-06-22": ["a1", "a2"], "OPS_LOG#2026-06-23": ["b1"]})
    end = T0 + timedelta(days=2)
    page = BucketedReader(fake).query("OPS_LOG", TimeBucket.DAY, start=T0, end=end, limit=1)
    assert page.cursor is not None
    # When the descending read of the same window is given that cursor
    # Then it is refused, not resumed in the other order
    with pytest.raises(CursorError, match="another query"):
        BucketedReader(fake).query(
            "OPS_LOG", TimeBucket.DAY, start=T0, end=end, descending=True, cursor=page.cursor
        )
    # And the fingerprint tells the two orders (and the target value) apart
    prints = {
        bucketed_fingerprint("OPS_LOG", TimeBucket.DAY, T0, T0 + timedelta(days=2), d, v)
        for d in (False, True)
        for v in (None, "x")
    }
    assert len(prints) == 4


def test_a_limit_out_of_range_is_refused_naming_the_range() -> None:
    # Given a bucketed reader
    reader = BucketedReader(FakeBuckets({}))
    # When a page of 0 or 1,001 items is asked for
    for limit in (0, MAX_PAGE_LIMIT + 1):
        with pytest.raises(InvalidInputError) as info:
            reader.query(
                "OPS_LOG", TimeBucket.DAY, start=T0, end=T0 + timedelta(days=1), limit=limit
            )
        # Then the error names the field, the range and the value
        assert str(info.value) == f"limit: must be within 1..{MAX_PAGE_LIMIT}, got {limit}"


def test_the_plan_of_an_eventually_consistent_page_says_why_not_gsi1() -> None:
    # Given a bucketed read that allows eventual consistency
    reader = BucketedReader(FakeBuckets({"OPS_LOG#2026-06-22": ["a1"]}))
    # When a page is read
    page = reader.query(
        "OPS_LOG", TimeBucket.DAY, start=T0, end=T0 + timedelta(days=1), consistent=False
    )
    # Then the plan is the base table, and its reason says why GSI1 cannot serve it
    assert page.plan is not None and page.plan.path.value == "base"
    assert page.plan.reason.endswith(f"gsi1 n/a: {GSI1_UNAVAILABLE}")


def test_a_failed_bucket_fails_the_read() -> None:
    fake = FakeBuckets({"OPS_LOG#2026-06-22": ["a1"]}, fail=frozenset({"OPS_LOG#2026-06-23"}))
    with pytest.raises(ShardQueryError) as info:
        BucketedReader(fake).query("OPS_LOG", TimeBucket.DAY, start=T0, end=T0 + timedelta(days=2))
    assert "OPS_LOG#2026-06-23#0" in info.value.failures


# --- mutation testing (issue 38): the cursor's checks, the pool's shutdown -------------


@pytest.mark.parametrize(
    "fields",
    [{"b": -1, "c": None}, {"b": "1", "c": None}, {"b": None, "c": None}, {"b": 0, "c": 5}],
    ids=["negative-bucket", "text-bucket", "null-bucket", "number-inner"],
)
def test_a_cursor_with_a_bad_bucket_or_inner_cursor_is_not_a_cursor(fields: Any) -> None:
    # Given a cursor document of the right version and query, with a bad field
    end = T0 + timedelta(days=2)
    fingerprint = bucketed_fingerprint("OPS_LOG", TimeBucket.DAY, T0, end, False)
    text = encode_token({"v": 1, "q": fingerprint, **fields})
    # When it is decoded, or given to a read of that query
    # Then it is refused as not this API's cursor (not a bucket -1, not a ValueError)
    with pytest.raises(CursorError) as info:
        BucketCursor.decode(text, fingerprint)
    assert str(info.value) == "cursor: is not a cursor returned by this API"
    with pytest.raises(CursorError, match="is not a cursor returned by this API"):
        BucketedReader(FakeBuckets({})).query(
            "OPS_LOG", TimeBucket.DAY, start=T0, end=end, cursor=text
        )


@pytest.mark.parametrize("past", [0, 1, 7])
def test_a_cursor_past_the_windows_last_bucket_is_refused(past: int) -> None:
    # Given a two-bucket window and a cursor of its query pointing at bucket 2 + past
    end = T0 + timedelta(days=2)
    fingerprint = bucketed_fingerprint("OPS_LOG", TimeBucket.DAY, T0, end, False)
    cursor = BucketCursor(fingerprint, 2 + past).encode()
    fake = FakeBuckets({"OPS_LOG#2026-06-22": ["a1"]})
    # When a page is read with it
    # Then it is refused naming the cursor, and no bucket is read
    with pytest.raises(CursorError) as info:
        BucketedReader(fake).query("OPS_LOG", TimeBucket.DAY, start=T0, end=end, cursor=cursor)
    assert str(info.value) == "cursor: points past the window's last bucket"
    assert fake.calls == []
    # And the window's last bucket itself is a valid place to resume
    last = BucketCursor(fingerprint, 1).encode()
    page = BucketedReader(fake).query("OPS_LOG", TimeBucket.DAY, start=T0, end=end, cursor=last)
    assert page.items == [] and page.cursor is None


def test_a_cursor_of_a_window_with_another_start_is_refused() -> None:
    # Given a page of the window [day 0, day 3) whose cursor points at a bucket
    fake = FakeBuckets(
        {"OPS_LOG#2026-06-22": ["a1"], "OPS_LOG#2026-06-23": ["b1"], "OPS_LOG#2026-06-24": ["c1"]}
    )
    end = T0 + timedelta(days=3)
    page = BucketedReader(fake).query("OPS_LOG", TimeBucket.DAY, start=T0, end=end, limit=1)
    assert page.cursor is not None
    # When the window [day 1, day 3), the same end, is read with it
    # Then it is refused (its bucket index counts from another first bucket)
    with pytest.raises(CursorError, match="another query"):
        BucketedReader(fake).query(
            "OPS_LOG",
            TimeBucket.DAY,
            start=T0 + timedelta(days=1),
            end=end,
            limit=1,
            cursor=page.cursor,
        )
    # And the fingerprint tells windows apart by their start as by their end
    prints = {
        bucketed_fingerprint("OPS_LOG", TimeBucket.DAY, T0 + timedelta(days=s), end, False)
        for s in (0, 1)
    }
    assert len(prints) == 2


class SlowBuckets(FakeBuckets):
    """A bucket reader whose read of one bucket takes a while, recording when it ends.

    A failing bucket fails only once the slow one has started, so both are in flight.
    """

    def __init__(self, data: dict[str, list[str]], fail: frozenset[str], slow: str) -> None:
        super().__init__(data, fail)
        self.slow = slow
        self.slow_started = threading.Event()
        self.finished: list[str] = []

    def query(self, key: str, **options: Any) -> Page:
        if key == self.slow:
            self.slow_started.set()
            time.sleep(0.3)
        elif key in self.fail:
            assert self.slow_started.wait(5)
        page = super().query(key, **options)
        self.finished.append(key)
        return page


def test_a_failed_page_leaves_no_bucket_read_running_behind_it() -> None:
    # Given three day buckets: the first empty (so the next two are read in parallel),
    # the second failing, the third slow to answer
    fake = SlowBuckets(
        {"OPS_LOG#2026-06-24": ["c1"]},
        fail=frozenset({"OPS_LOG#2026-06-23"}),
        slow="OPS_LOG#2026-06-24",
    )
    # When a page is read, and fails in the second bucket
    with pytest.raises(ShardQueryError):
        BucketedReader(fake).query("OPS_LOG", TimeBucket.DAY, start=T0, end=T0 + timedelta(days=3))
    # Then the third bucket's read, sent with it, had ended before the page failed: no
    # Query runs on after the call returns (a Lambda would freeze it mid-flight)
    assert fake.finished == ["OPS_LOG#2026-06-22", "OPS_LOG#2026-06-24"]


# --- the facade on moto: write, then read across buckets ------------------------------


@pytest.fixture
def bucketed(ddb_client: Any) -> Iterator[Dynashard]:
    config = DynashardConfig(
        DATA_TABLE.default_name,
        METADATA_TABLE.default_name,
        max_workers=4,
        cooldown_s=0,
        bucketed_keys=parse_bucketed_keys("OPS_LOG=day,THREAT#=month"),
    )
    ds = Dynashard(config, client=ddb_client)
    yield ds
    ds.close()


def _events(days: int = 3, per_day: int = 7) -> list[Event]:
    return [
        Event(
            key="OPS_LOG",
            id=f"e{d}-{i}",
            ts=T0 + timedelta(days=d, hours=2 * i, minutes=d),  # per_day <= 12: same day
            data={"agent": "threat_detector", "n": i},
        )
        for d in range(days)
        for i in range(per_day)
    ]


def _pages(ds: Dynashard, limit: int, descending: bool, **extra: Any) -> list[list[str]]:
    pages, cursor = [], None
    while True:
        page = ds.query_events(
            "OPS_LOG",
            start=T0,
            end=T0 + timedelta(days=3),
            limit=limit,
            descending=descending,
            cursor=cursor,
            **extra,
        )
        assert {item["key"] for item in page.items} <= {"OPS_LOG"}
        pages.append([item["id"] for item in page.items])
        cursor = page.cursor
        if cursor is None:
            return pages


def test_writes_land_on_bucket_keys(bucketed: Dynashard, ddb_client: Any) -> None:
    events = [*_events(days=2, per_day=1), Event(key="THREAT#abc", id="t1", ts=T0)]
    outcomes = bucketed.put_events(events)
    assert all(o.ok for o in outcomes)
    assert [o.key for o in outcomes] == [
        "OPS_LOG#2026-06-22",
        "OPS_LOG#2026-06-23",
        "THREAT#abc#2026-06",
    ]
    assert [bucketed.write_key(e) for e in events] == [o.key for o in outcomes]
    assert [o.physical_key for o in outcomes] == [
        "OPS_LOG#2026-06-22#0",
        "OPS_LOG#2026-06-23#0",
        "THREAT#abc#2026-06#0",
    ]
    items = ddb_client.scan(TableName=DATA_TABLE.default_name)["Items"]
    assert sorted(i["key"]["S"] for i in items) == [
        "OPS_LOG#2026-06-22",
        "OPS_LOG#2026-06-23",
        "THREAT#abc#2026-06",
    ]
    # a bucket key is a logical key of its own, readable as such
    page = bucketed.query_events("OPS_LOG#2026-06-23")
    assert [(i["id"], i["key"]) for i in page.items] == [("e1-0", "OPS_LOG#2026-06-23")]


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("limit", [1, 4, 7, 10])
def test_pages_cross_day_buckets_in_both_orders(
    bucketed: Dynashard, limit: int, descending: bool
) -> None:
    events = _events()
    assert all(o.ok for o in bucketed.put_events(events))
    pages = _pages(bucketed, limit, descending)
    expected = [e.id for e in sorted(events, key=lambda e: e.sort_key, reverse=descending)]
    assert [i for p in pages for i in p] == expected
    assert all(len(p) == limit for p in pages[:-1])


@pytest.mark.parametrize("descending", [False, True])
def test_one_bucket_grown_to_four_others_at_one(bucketed: Dynashard, descending: bool) -> None:
    # Given the middle day's bucket key grown to N = 4 before its writes
    assert bucketed.grow("OPS_LOG#2026-06-23", 4).current == 4
    events = _events(per_day=12)
    assert all(o.ok for o in bucketed.put_events(events))
    assert bucketed.shard_info("OPS_LOG#2026-06-22").number_of_shards == 1
    assert bucketed.shard_info("OPS_LOG#2026-06-24").number_of_shards == 1
    used = {o.physical_key for o in bucketed.put_events(events)}
    assert {f"OPS_LOG#2026-06-23#{s}" for s in range(4)} >= {
        k for k in used if k and k.startswith("OPS_LOG#2026-06-23")
    }
    assert len({k for k in used if k and "2026-06-23" in k}) > 1
    # When the window is read in pages of 5
    pages = _pages(bucketed, 5, descending)
    # Then every event comes back once, in exact order
    expected = [e.id for e in sorted(events, key=lambda e: e.sort_key, reverse=descending)]
    assert [i for p in pages for i in p] == expected


@pytest.mark.parametrize("descending", [False, True])
def test_a_write_between_pages_just_past_a_bucket_end_cursor_is_read(
    bucketed: Dynashard, descending: bool
) -> None:
    # Given 3 days of 7 events, read in pages of 7: each page fills exactly at the end
    # of a day's bucket (the first day ascending, the last descending)
    events = _events()
    assert all(o.ok for o in bucketed.put_events(events))
    window = {"start": T0, "end": T0 + timedelta(days=3)}
    first = bucketed.query_events("OPS_LOG", limit=7, descending=descending, **window)
    day = 2 if descending else 0
    assert [i["id"] for i in first.items] == [
        f"e{day}-{i}" for i in (range(6, -1, -1) if descending else range(7))
    ]
    assert first.cursor is not None
    # When an event is written in that bucket just past the cursor (after the day's last
    # event ascending, before its first descending), then the next page is read
    edge = T0 + timedelta(days=day, hours=23) if not descending else T0 + timedelta(days=day)
    late = Event(key="OPS_LOG", id="late", ts=edge, data={"n": -1})
    (outcome,) = bucketed.put_events([late])
    assert outcome.ok and outcome.key == f"OPS_LOG#2026-06-2{2 + day}"
    rest: list[str] = []
    cursor = first.cursor
    while cursor is not None:
        page = bucketed.query_events(
            "OPS_LOG", limit=7, descending=descending, cursor=cursor, **window
        )
        rest.extend(i["id"] for i in page.items)
        cursor = page.cursor
    # Then the new event is the next page's first, and the read holds every event once
    assert rest[0] == "late"
    everything = sorted([*events, late], key=lambda e: e.sort_key, reverse=descending)
    assert [i["id"] for i in first.items] + rest == [e.id for e in everything]


def test_a_window_inside_one_bucket_reads_one_bucket(bucketed: Dynashard) -> None:
    assert all(o.ok for o in bucketed.put_events(_events()))
    page = bucketed.query_events(
        "OPS_LOG", start=T0 + timedelta(days=1, hours=5), end=T0 + timedelta(days=1, hours=10)
    )
    assert [i["id"] for i in page.items] == ["e1-3", "e1-4"]
    assert page.shards_queried == 1 and page.cursor is None


def test_open_window_on_a_bucketed_family_is_refused(bucketed: Dynashard) -> None:
    with pytest.raises(InvalidInputError) as info:
        bucketed.query_events("OPS_LOG", end=T0)
    assert info.value.field == "from"


class FailingQueries:
    """Delegates to a real client; Query of one physical key fails."""

    def __init__(self, inner: Any, pk: str) -> None:
        self.inner = inner
        self.pk = pk

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def query(self, **request: Any) -> Any:
        if request["ExpressionAttributeValues"][":pk"]["S"] == self.pk:
            error = {"Error": {"Code": "InternalServerError", "Message": "boom"}}
            raise ClientError(error, "Query")  # type: ignore[arg-type]
        return self.inner.query(**request)


def test_failed_shard_in_a_bucket_fails_or_is_named(bucketed: Dynashard, ddb_client: Any) -> None:
    assert all(o.ok for o in bucketed.put_events(_events()))
    ds = Dynashard(bucketed.config, client=FailingQueries(ddb_client, "OPS_LOG#2026-06-23#0"))  # type: ignore[arg-type]
    try:
        with pytest.raises(ShardQueryError) as info:
            ds.query_events("OPS_LOG", start=T0, end=T0 + timedelta(days=3))
        assert "OPS_LOG#2026-06-23#0" in info.value.failures
        page = ds.query_events(
            "OPS_LOG", start=T0, end=T0 + timedelta(days=3), allow_partial=True, limit=100
        )
        assert page.missing_shards == ["OPS_LOG#2026-06-23#0"]
        # the other buckets are served, in order, without the failed shard's items
        assert [i["id"] for i in page.items] == [f"e{d}-{i}" for d in (0, 2) for i in range(7)]
    finally:
        ds.close()


def test_the_scaler_grows_the_hot_bucket_key_alone() -> None:
    # Given today's OPS_LOG bucket throttled on its one shard, yesterday's cool
    from dynashard.planning.scaling import HotKey, handle_alarm
    from tests.unit.library.planning.test_scaling import (
        FakeHotKeys,
        FakeShards,
        Limits,
        write_alarm,
    )

    hot = FakeHotKeys(
        [HotKey("OPS_LOG#2026-06-23#0", 1000.0, 9_600), HotKey("OPS_LOG#2026-06-22#0", 50.0, 0)]
    )
    shards = FakeShards()
    # When the write key-range alarm is handled
    outcome = handle_alarm(write_alarm(), shards, hot, Limits())
    # Then the bucket key is the logical key that grows; the cool bucket stays at 1
    assert [(g.key, g.current) for g in outcome.grown] == [("OPS_LOG#2026-06-23", 2)]
    assert [s.key for s in outcome.skipped] == ["OPS_LOG#2026-06-22"]


# --- the families' logic over a fake store of units (dynamodb/bucketed_family.py) ------


class FakeUnits:
    """A FamilyUnitStore in memory; counts its calls."""

    def __init__(self, stored: dict[str, str] | None = None) -> None:
        self.units = dict(stored or {})
        self.pins: list[str] = []

    def stored(self, key: str) -> str | None:
        return self.units.get(key)

    def pin(self, key: str, unit: TimeBucket) -> str:
        self.pins.append(key)
        return self.units.setdefault(key, unit.value)


def test_families_pin_the_unit_once_and_refuse_another() -> None:
    from dynashard.dynamodb.bucketed_family import BucketedFamilies, FamilyUnitCache

    units, cache = FakeUnits(), FamilyUnitCache()
    families = BucketedFamilies(FAMILIES, units, cache)
    event = Event(key="OPS_LOG", id="a", ts=T0)
    assert families.write_key(event) == "OPS_LOG#2026-06-22"
    assert families.write_key(event) == "OPS_LOG#2026-06-22"
    assert units.pins == ["OPS_LOG"]  # learnt once, then from the cache
    assert families.write_key(Event(key="PLAIN", id="a", ts=T0)) == "PLAIN"
    # a configuration that says hour now: the day stored first holds, the write is refused
    hourly = BucketedFamilies(parse_bucketed_keys("OPS_LOG=hour"), units, cache)
    with pytest.raises(InvalidInputError) as info:
        hourly.write_key(event)
    assert info.value.field == "bucketed_keys" and "day" in str(info.value)
    assert hourly.read_unit("OPS_LOG", hourly.families[0]) is TimeBucket.DAY
    assert hourly.read_unit("NEW", hourly.families[0]) is TimeBucket.HOUR  # never written


def test_families_refuse_events_one_by_one_and_name_an_unknown_unit() -> None:
    from dynashard.dynamodb.bucketed_family import BucketedFamilies
    from dynashard.errors import MetadataError

    units = FakeUnits({"OPS_LOG": "hour", "THREAT#x": "fortnight"})
    families = BucketedFamilies(FAMILIES, units)
    sent: list[list[str]] = []

    def write(events: Any) -> list[Any]:
        from dynashard.dynamodb.writer import WriteOutcome

        sent.append([e.key for e in events])
        return [WriteOutcome(e.id, e.key, True) for e in events]

    events = [
        Event(key="OPS_LOG", id="a", ts=T0),  # stored hour, configured day: refused
        Event(key="PLAIN", id="b", ts=T0),
        Event(key="THREAT#x", id="c", ts=T0),  # an unknown stored unit: not permanent
    ]
    outcomes = families.put_events(events, write)
    assert sent == [["PLAIN"]]
    assert [(o.ok, o.permanent, o.field) for o in outcomes] == [
        (False, True, "bucketed_keys"),
        (True, False, None),
        (False, False, None),
    ]
    assert "MetadataError" in str(outcomes[2].error) and "fortnight" in str(outcomes[2].error)
    with pytest.raises(MetadataError):
        families.read_unit("THREAT#x", FAMILIES[2])
    assert families.put_events([], write) == [] and sent == [["PLAIN"]]
