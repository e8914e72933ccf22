"""Naive datetimes mean UTC at every entry point that takes one (issue 26, defect 8).

A naive and an aware datetime in one call name two instants; the library compares them
as such (:func:`dynashard.core.times.as_utc`) instead of raising Python's bare
``TypeError`` ("can't compare offset-naive and offset-aware datetimes").
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from dynashard import Dynashard, DynashardConfig, Event
from dynashard.cloudwatch.insights import InsightRuleOfferedLoad, insight_rule_totals
from dynashard.core.buckets import TimeBucket, window_buckets
from dynashard.core.families import parse_bucketed_keys, window_bucket_keys
from dynashard.core.times import as_utc
from dynashard.errors import InvalidInputError
from infra.table_specs import DATA_TABLE, METADATA_TABLE

T0 = datetime(2013, 1, 1, 10, tzinfo=UTC)
NAIVE_T0 = T0.replace(tzinfo=None)
EST = timezone(timedelta(hours=-5))
#: (start, end) pairs naming the same window [T0, T0 + 2 h): naive/aware in each order.
MIXED = [
    pytest.param(NAIVE_T0, T0 + timedelta(hours=2), id="naive-start"),
    pytest.param(T0, NAIVE_T0 + timedelta(hours=2), id="naive-end"),
    pytest.param(NAIVE_T0, (T0 + timedelta(hours=2)).astimezone(EST), id="naive-start-est-end"),
    pytest.param(NAIVE_T0, NAIVE_T0 + timedelta(hours=2), id="both-naive"),
]


def test_as_utc_takes_naive_as_utc_and_converts_aware() -> None:
    assert as_utc(NAIVE_T0, "from") == T0 and as_utc(NAIVE_T0, "from").tzinfo is UTC
    assert as_utc(T0.astimezone(EST), "to") == T0 and as_utc(T0.astimezone(EST), "to").tzinfo is UTC
    assert as_utc(None, "from") is None
    with pytest.raises(InvalidInputError, match=r"^from: must be a datetime"):
        as_utc("2013-01-01", "from")  # type: ignore[call-overload]


@pytest.fixture
def ds(ddb_client: Any) -> Iterator[Dynashard]:
    facade = Dynashard(
        DynashardConfig(
            DATA_TABLE.default_name,
            METADATA_TABLE.default_name,
            max_workers=4,
            bucketed_keys=parse_bucketed_keys("OPS=hour"),
        ),
        client=ddb_client,
    )
    facade.set_shard_count("K", 3)
    # ten events per key, an hour apart from T0 - 2 h: e2 and e3 fall in [T0, T0 + 2 h)
    events = [
        Event(key=k, id=f"e{i}", ts=T0 + timedelta(hours=i - 2))
        for k in ("K", "OPS")
        for i in range(10)
    ]
    assert all(outcome.ok for outcome in facade.put_events(events))
    yield facade
    facade.close()


@pytest.mark.parametrize(("start", "end"), MIXED)
@pytest.mark.parametrize(
    ("key", "options"),
    [
        pytest.param("K", {}, id="auto-consistent"),
        pytest.param("K", {"path": "base", "consistent": False}, id="base"),
        pytest.param("K", {"path": "gsi1", "consistent": False}, id="gsi1"),
        pytest.param("K", {"path": "auto", "consistent": False}, id="auto-planned"),
        pytest.param("OPS", {}, id="bucketed-family"),
    ],
)
def test_a_read_with_naive_and_aware_bounds_reads_the_utc_window(
    ds: Dynashard, key: str, options: dict[str, Any], start: datetime, end: datetime
) -> None:
    # Given events at T0 - 2 h .. T0 + 7 h, hourly
    # When a read's window mixes a naive (UTC) and an aware bound
    page = ds.query_events(key, start=start, end=end, **options)
    # Then it reads [T0, T0 + 2 h) in UTC, like the all-aware read, and raises nothing
    assert [item["id"] for item in page.items] == ["e2", "e3"]
    descending = ds.query_events(key, start=start, end=end, descending=True, **options)
    assert [item["id"] for item in descending.items] == ["e3", "e2"]


@pytest.mark.parametrize(("start", "end"), MIXED)
def test_bucket_windows_take_naive_as_utc(start: datetime, end: datetime) -> None:
    assert window_buckets(start, end, TimeBucket.HOUR, limit=10) == window_buckets(
        T0, T0 + timedelta(hours=2), TimeBucket.HOUR, limit=10
    )
    assert window_bucket_keys("OPS", TimeBucket.HOUR, start, end) == window_bucket_keys(
        "OPS", TimeBucket.HOUR, T0, T0 + timedelta(hours=2)
    )


def test_an_empty_mixed_window_is_an_input_error_not_a_type_error() -> None:
    with pytest.raises(InvalidInputError, match=r"^from: "):
        window_buckets(T0, NAIVE_T0, TimeBucket.HOUR, limit=10)


def test_contributor_insights_windows_take_naive_as_utc() -> None:
    client = boto3.client("cloudwatch", region_name="us-east-1")
    report: dict[str, Any] = {"Contributors": [], "ApproximateUniqueCount": 0}
    with Stubber(client) as stub:
        stub.add_response("get_insight_rule_report", report)
        stub.add_response("get_insight_rule_report", report)
        assert insight_rule_totals(client, "rule", NAIVE_T0, T0 + timedelta(minutes=5), 10) == {}
        history = InsightRuleOfferedLoad("rule", client).peak_offered_wcu(
            T0, NAIVE_T0 + timedelta(minutes=5), 60
        )
    # an empty report is no evidence (issue 38, bug 9): no key taken for idle
    assert history.peak("ANY") == float("inf") and history.gap("ANY")
    assert history.start == T0 and history.end == T0 + timedelta(minutes=5)
