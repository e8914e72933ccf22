"""The read planner (pure): base-table shard fan-out or GSI1 bucket fan-out."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dynashard.core.buckets import TimeBucket, time_bucket, window_buckets
from dynashard.core.capacity import query_read_units
from dynashard.core.shard_info import ShardInfo
from dynashard.errors import InvalidInputError
from dynashard.planning.reads import (
    MAX_GSI1_REQUESTS,
    ReadPath,
    gsi1_shard_count,
    path_cost,
    plan_read,
)

DAY = ["2013-01-01"]


def test_narrow_window_on_many_shard_key_with_cool_bucket_reads_gsi1() -> None:
    # Given a key that was hot once (32 base shards) and a window in one cool bucket
    plan = plan_read(base_shards=32, buckets=DAY, gsi1_shards=[1], consistent=False)
    # Then one GSI1 query beats 32 base-table queries, and the plan says so
    assert plan.path is ReadPath.GSI1
    assert plan.requests == 1
    assert plan.alternative is not None and plan.alternative.requests == 32
    assert plan.expected_rcu < plan.alternative.expected_rcu
    assert "1 eventually consistent GSI1 queries" in plan.reason
    assert plan.to_json() == {
        "path": "gsi1",
        "requests": 1,
        "expected_rcu": 12.5,
        "reason": plan.reason,
    }


def test_consistent_forces_the_base_table() -> None:
    plan = plan_read(base_shards=32, buckets=DAY, gsi1_shards=[1], consistent=True)
    assert plan.path is ReadPath.BASE
    assert plan.requests == 32
    assert plan.reason.startswith("consistent=true")


def test_consistent_with_path_gsi1_is_refused() -> None:
    with pytest.raises(InvalidInputError) as info:
        plan_read(base_shards=4, buckets=DAY, gsi1_shards=[1], consistent=True, path="gsi1")
    assert info.value.field == "consistent"


def test_window_over_many_buckets_reads_the_base_table() -> None:
    # Given 30 day buckets of a key with 8 shards, each bucket cool (G = 1)
    buckets = [f"2013-01-{d:02d}" for d in range(1, 31)]
    plan = plan_read(base_shards=8, buckets=buckets, gsi1_shards=[1] * 30, consistent=False)
    # Then 8 base queries beat 1 + 29 GSI1 queries (a page may reach every bucket)
    assert plan.path is ReadPath.BASE
    assert plan.requests == 8
    assert plan.alternative is not None and plan.alternative.requests == 30
    assert "up to 30 over 30 bucket(s)" in plan.reason


def test_page_order_decides_which_bucket_a_page_starts_in() -> None:
    # Given a cool old bucket (G = 1) and two hot ones (G = 32) of a 32-shard key
    buckets, counts = ["2013-01-01", "2013-01-02", "2013-01-03"], [1, 32, 32]
    # Then an ascending page starts in the cool bucket: 1 + 2 queries beat 32
    up = plan_read(base_shards=32, buckets=buckets, gsi1_shards=counts, consistent=False)
    assert (up.path, up.requests) == (ReadPath.GSI1, 3)
    # And a descending one starts in a hot bucket: 32 + 2 queries lose to 32
    down = plan_read(
        base_shards=32, buckets=buckets, gsi1_shards=counts, consistent=False, descending=True
    )
    assert (down.path, down.requests) == (ReadPath.BASE, 32)


def test_present_key_shape_wins_one_bucket_by_half_the_rcu() -> None:
    # G(bucket) = the key's largest count: as many requests, eventually consistent
    plan = plan_read(base_shards=8, buckets=DAY, gsi1_shards=[8], consistent=False)
    assert plan.path is ReadPath.GSI1
    assert plan.alternative is not None
    assert plan.expected_rcu == plan.alternative.expected_rcu / 2
    two = plan_read(
        base_shards=8, buckets=[*DAY, "2013-01-02"], gsi1_shards=[8, 8], consistent=False
    )
    assert two.path is ReadPath.BASE


def test_forced_paths_and_unavailable_gsi1() -> None:
    base = plan_read(base_shards=2, buckets=DAY, gsi1_shards=[1], consistent=False, path="base")
    assert base.path is ReadPath.BASE and base.reason.startswith("path=base")
    gsi = plan_read(base_shards=1, buckets=DAY * 1, gsi1_shards=[4], consistent=False, path="gsi1")
    assert gsi.path is ReadPath.GSI1 and gsi.requests == 4
    auto = plan_read(base_shards=2, buckets=None, consistent=False, gsi1_unavailable="no window")
    assert auto.path is ReadPath.BASE and "no window" in auto.reason
    with pytest.raises(InvalidInputError) as info:
        plan_read(base_shards=2, buckets=None, consistent=False, path="gsi1")
    assert info.value.field == "path"
    with pytest.raises(InvalidInputError) as bad:
        plan_read(base_shards=2, buckets=None, consistent=False, path="lsi")
    assert bad.value.field == "path"


def test_read_capacity_follows_the_developer_guide() -> None:
    # 1 RCU per 4 KB strongly consistent, half eventually consistent, at least one unit
    assert query_read_units(0, consistent=True) == 1.0
    assert query_read_units(4096, consistent=True) == 1.0
    assert query_read_units(4097, consistent=True) == 2.0
    assert query_read_units(4097, consistent=False) == 1.0
    # 32 queries of ~3 KB each: the per-query minimum dominates
    assert path_cost(32, 100_000, True).expected_rcu == 32.0


def test_window_buckets_cross_month_and_year() -> None:
    start = datetime(2013, 11, 15, tzinfo=UTC)
    end = datetime(2014, 2, 1, tzinfo=UTC)
    assert window_buckets(start, end, TimeBucket.MONTH, limit=MAX_GSI1_REQUESTS) == [
        "2013-11",
        "2013-12",
        "2014-01",
    ]
    hours = window_buckets(
        start, start + timedelta(minutes=61), TimeBucket.HOUR, limit=MAX_GSI1_REQUESTS
    )
    assert hours == ["2013-11-15T00", "2013-11-15T01"]
    assert (
        window_buckets(start, end, TimeBucket.HOUR, limit=MAX_GSI1_REQUESTS) is None
    )  # over MAX_GSI1_REQUESTS
    with pytest.raises(InvalidInputError):
        window_buckets(end, start, TimeBucket.DAY, limit=MAX_GSI1_REQUESTS)


@given(
    start=st.datetimes(
        min_value=datetime(2000, 1, 1), max_value=datetime(2030, 1, 1), timezones=st.just(UTC)
    ),
    span=st.timedeltas(min_value=timedelta(microseconds=1), max_value=timedelta(days=40)),
    unit=st.sampled_from(list(TimeBucket)),
)
def test_window_buckets_are_exactly_the_buckets_of_the_window(
    start: datetime, span: timedelta, unit: TimeBucket
) -> None:
    end = start + span
    labels = window_buckets(start, end, unit, limit=MAX_GSI1_REQUESTS)
    if labels is None:
        assert unit is TimeBucket.HOUR and span > timedelta(hours=MAX_GSI1_REQUESTS - 2)
        return
    # the first and last instants of the window are in the first and last buckets
    assert labels[0] == time_bucket(start, unit)
    assert labels[-1] == time_bucket(end - timedelta(microseconds=1), unit)
    # strictly increasing, no gaps: every hour of the window falls in a listed bucket
    assert labels == sorted(set(labels))
    probe = start
    while probe < end:
        assert time_bucket(probe, unit) in labels
        probe += timedelta(hours=1)


def test_gsi1_shard_count_of_the_present_key_shape_is_the_largest_count() -> None:
    info = ShardInfo("K", 2, 10, ((0, 1), (5, 32), (10, 2)))
    assert gsi1_shard_count(info, "2013-01-01") == 32


def test_a_forced_base_path_with_no_bucket_to_compare_is_the_base_table() -> None:
    plan = plan_read(base_shards=4, buckets=[], consistent=False, path="base")
    assert (plan.path, plan.requests) == (ReadPath.BASE, 4)
    with pytest.raises(InvalidInputError, match="path"):
        plan_read(base_shards=4, buckets=[], consistent=False, path="gsi1")
