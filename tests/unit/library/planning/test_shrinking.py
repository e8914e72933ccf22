"""Shrinking: the pure policy, the sweep over ports, the metadata round trip (moto), the adapter."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import boto3
import pytest
from botocore.stub import Stubber
from hypothesis import given
from hypothesis import strategies as st

from dynashard.cloudwatch.insights import InsightRuleOfferedLoad
from dynashard.core.load import write_load_part
from dynashard.core.shard_info import WRITE_LOAD_GROWTH, GrowthResult, ShardInfo
from dynashard.core.strategies import Strategy
from dynashard.dynamodb.metadata_store import DynamoDBMetadataStore
from dynashard.dynamodb.shard_metadata import ShardMetadata
from dynashard.errors import InvalidInputError, MetadataError
from dynashard.planning.shards import plan_shard_count
from dynashard.planning.shrinking import (
    HISTORY_PERIOD_S,
    LoadHistory,
    low_water_utilization,
    plan_shrink,
    shrink_cool_keys,
)
from infra.table_specs import METADATA_TABLE

NOW = datetime(2013, 1, 1, 12, 0, tzinfo=UTC)
LONG_AGO = int(NOW.timestamp()) - 3 * 3600


@dataclass(frozen=True)
class Settings:
    default_shards: int = 1
    max_shards: int = 1000
    partition_wcu: float = 1000.0
    partition_rcu: float = 3000.0
    target_utilization: float = 0.8
    shrink_utilization: float | None = 0.5
    shrink_cool_period_s: float = 1800.0
    cooldown_s: float = 60.0


def info(n: int, last_updated: int = LONG_AGO, key: str = "DEPARTURES#JFK") -> ShardInfo:
    return ShardInfo(key, n, last_updated, ((0, 1), (last_updated, n)))


# --- the pure policy -------------------------------------------------------------------------
def test_a_cool_key_shrinks_in_one_step_to_what_its_peak_needs() -> None:
    # Given 8 shards of 1,000 WCU/s and a peak of 1,500 WCU/s (below 8 x 1000 x 0.5)
    plan = plan_shrink(info(8), 1500.0, NOW.timestamp(), Settings())
    # Then it shrinks to ceil(1500 / 800) = 2, not to 7
    assert (plan.current, plan.target, plan.shrinks, plan.reason) == (8, 2, True, "cool")


def test_a_key_at_the_growth_threshold_neither_grows_nor_shrinks() -> None:
    # Given 4 shards carrying exactly their planned 80% (3,200 WCU/s)
    load = 4 * 1000.0 * 0.8
    # Then growth plans no more shards, and shrinking keeps it
    assert plan_shard_count(4, load, 1000.0, 0.8) == 4
    assert not plan_shrink(info(4), load, NOW.timestamp(), Settings()).shrinks


def test_a_key_at_the_low_water_mark_is_kept_just_below_it_shrinks() -> None:
    at_mark = 4 * 1000.0 * 0.5
    kept = plan_shrink(info(4), at_mark, NOW.timestamp(), Settings())
    assert not kept.shrinks and "not below the low-water mark 2000.0" in kept.reason
    assert plan_shrink(info(4), at_mark - 1, NOW.timestamp(), Settings()).target == 3


def test_the_cooldown_is_honoured() -> None:
    changed = int(NOW.timestamp()) - 30
    plan = plan_shrink(info(8, last_updated=changed), 0.0, NOW.timestamp(), Settings())
    assert not plan.shrinks and "cooldown 60 s" in plan.reason
    later = plan_shrink(info(8, last_updated=changed), 0.0, NOW.timestamp() + 31, Settings())
    assert later.target == 1


def test_never_below_the_default_count() -> None:
    plan = plan_shrink(info(8), 0.0, NOW.timestamp(), Settings(default_shards=3))
    assert plan.target == 3
    at_default = plan_shrink(info(3), 0.0, NOW.timestamp(), Settings(default_shards=3))
    assert not at_default.shrinks and "default" in at_default.reason


def test_a_zero_low_water_mark_turns_shrinking_off_and_counters_are_kept() -> None:
    off = plan_shrink(info(8), 0.0, NOW.timestamp(), Settings(shrink_utilization=0.0))
    assert not off.shrinks and "off" in off.reason
    counter = plan_shrink(info(8, key="COUNTER#flights"), 0.0, NOW.timestamp(), Settings())
    assert not counter.shrinks and "counters" in counter.reason


def test_an_ordered_key_keeps_the_count_of_its_range_layout() -> None:
    # Given an ordered key of 8 range shards that no event writer reports load for
    ordered = ShardInfo("INDEX#TAILNUM", 8, LONG_AGO, ((LONG_AGO, 8),), strategy=Strategy.ORDERED)
    # When the sweep plans it at zero offered load
    plan = plan_shrink(ordered, 0.0, NOW.timestamp(), Settings())
    # Then it keeps its 8 shards
    assert (plan.shrinks, plan.target) == (False, 8) and "ordered" in plan.reason


def test_the_low_water_mark_defaults_to_half_the_target_and_must_stay_below_it() -> None:
    assert low_water_utilization(Settings(shrink_utilization=None)) == 0.4
    with pytest.raises(InvalidInputError, match="shrink_utilization"):
        plan_shrink(info(8), 0.0, NOW.timestamp(), Settings(shrink_utilization=0.8))
    with pytest.raises(InvalidInputError, match="peak_units_per_s"):
        plan_shrink(info(8), -1.0, NOW.timestamp(), Settings())


@given(
    n=st.integers(2, 64),
    peak=st.floats(0, 100_000, allow_nan=False),
    default=st.integers(1, 4),
    low=st.sampled_from([0.2, 0.4, 0.5, 0.7]),
)
def test_a_shrink_never_goes_below_what_the_load_needs_nor_triggers_growth(
    n: int, peak: float, default: int, low: float
) -> None:
    settings = Settings(default_shards=default, shrink_utilization=low)
    plan = plan_shrink(info(n), peak, NOW.timestamp(), settings)
    # a key already at or below the default keeps its count; shrinking never raises N
    assert min(default, n) <= plan.target <= n
    if plan.shrinks:
        # the load fits the new count at the planned utilization: no growth follows,
        assert plan.target >= plan_shard_count(1, peak, 1000.0, 0.8)
        assert plan_shard_count(plan.target, peak, 1000.0, 0.8) == plan.target
        # and it was below the low-water mark of the old count
        assert peak < n * 1000.0 * low


# --- the history of a top-N report -----------------------------------------------------------
def test_a_key_missing_from_a_report_is_bounded_by_the_smallest_total() -> None:
    report = {"A": (6000.0, [3000.0, 3000.0]), "B": (1200.0, [1200.0, 0.0])}
    history = LoadHistory.from_report(NOW, NOW, 60, report)
    assert history.peak("A") == 50.0 and history.peak("B") == 20.0
    assert history.peak("C") == 20.0  # at most 1,200 units in the window, so <= 20 WCU/s
    assert history.gaps == ()


# --- the sweep over ports ----------------------------------------------------------------------
class SeriesHistory:
    """A LoadHistorySource over per-minute offered WCU: key -> {minute start: units}."""

    def __init__(self, series: dict[str, dict[datetime, float]]) -> None:
        self.series = series
        self.calls: list[tuple[datetime, datetime, int]] = []

    def peak_offered_wcu(self, start: datetime, end: datetime, period_s: int) -> LoadHistory:
        self.calls.append((start, end, period_s))
        peaks = {
            key: max((u for t, u in points.items() if start <= t < end), default=0.0) / period_s
            for key, points in self.series.items()
        }
        return LoadHistory(start, end, period_s, peaks)


class FakeShrinker:
    def __init__(self, infos: list[ShardInfo], fail: set[str] | None = None) -> None:
        self.infos = infos
        self.fail = fail or set()
        self.calls: list[tuple[str, int]] = []

    def sharded_keys(self) -> list[ShardInfo]:
        return list(self.infos)

    def shrink(self, key: str, target: int) -> GrowthResult:
        self.calls.append((key, target))
        if key in self.fail:
            raise MetadataError("injected")
        current = next(i.number_of_shards for i in self.infos if i.key == key)
        return GrowthResult(key, current, target, True, "shrunk")


def test_a_key_cool_for_less_than_the_cool_period_is_not_shrunk() -> None:
    # Given JFK at 5,000 WCU/s for one minute 20 minutes ago, cool since; EWR always cool
    hot_minute = NOW - timedelta(minutes=20)
    history = SeriesHistory(
        {"DEPARTURES#JFK": {hot_minute: 5000.0 * 60}, "DEPARTURES#EWR": {hot_minute: 60.0}}
    )
    port = FakeShrinker([info(8, key="DEPARTURES#JFK"), info(8, key="DEPARTURES#EWR")])
    # When the sweep looks back 30 minutes
    outcome = shrink_cool_keys(NOW, port, history, Settings())
    # Then it read that window per minute, kept JFK (5,000 WCU/s 20 min ago) and shrank EWR
    assert history.calls == [(NOW - timedelta(minutes=30), NOW, HISTORY_PERIOD_S)]
    assert port.calls == [("DEPARTURES#EWR", 1)]
    assert [k.key for k in outcome.kept] == ["DEPARTURES#JFK"]
    # and with a 10-minute cool period the hot minute is out of the window: JFK shrinks too
    port.calls.clear()
    shrink_cool_keys(NOW, port, history, Settings(shrink_cool_period_s=600.0))
    assert sorted(port.calls) == [("DEPARTURES#EWR", 1), ("DEPARTURES#JFK", 1)]


def test_a_failed_shrink_is_reported_and_the_others_still_shrink() -> None:
    port = FakeShrinker([info(4, key="A"), info(4, key="B")], fail={"A"})
    minute = NOW - timedelta(minutes=5)
    history = SeriesHistory({"A": {minute: 60.0}, "B": {minute: 60.0}})
    outcome = shrink_cool_keys(NOW, port, history, Settings())
    assert outcome.errors == ("A",)
    assert [(s.key, s.previous, s.current) for s in outcome.shrunk] == [("B", 4, 1)]
    assert outcome.to_dict()["kept"] == [{"key": "A", "reason": "error: injected"}]


def test_no_candidate_reads_no_load() -> None:
    history = SeriesHistory({})
    assert shrink_cool_keys(NOW, FakeShrinker([]), history, Settings()).candidates == 0
    assert history.calls == []


def test_a_key_absent_from_the_load_report_is_unknown_and_kept() -> None:
    # Given two cool-looking keys, only one of which the write-load report names
    minute = NOW - timedelta(minutes=5)
    history = SeriesHistory({"DEPARTURES#EWR": {minute: 60.0}})
    port = FakeShrinker([info(8, key="DEPARTURES#EWR"), info(8, key="DEPARTURES#JFK")])
    # When the sweep runs
    outcome = shrink_cool_keys(NOW, port, history, Settings())
    # Then only the reported key shrinks; the absent one is kept, and the report says why
    assert port.calls == [("DEPARTURES#EWR", 1)]
    [kept] = outcome.kept
    assert kept.key == "DEPARTURES#JFK" and "unknown, not idle" in kept.reason


def test_a_key_missing_from_a_truncated_report_is_not_shrunk_on_its_bound() -> None:
    # Given a report cut at its top N: a missing key is bounded, but not measured
    history = LoadHistory(NOW, NOW, 60, {"A": 5.0}, unreported_units_per_s=1.0)
    assert history.peak("B") == 1.0  # the bound is still there to report
    plan = plan_shrink(
        info(8, key="B"), history.peak_units_per_s.get("B"), NOW.timestamp(), Settings()
    )
    assert not plan.shrinks and "unknown" in plan.reason


def grown_on_the_report(n: int, key: str) -> ShardInfo:
    """A key the scaler grew on the write-load report's figure (its writes are logged)."""
    grown_for = frozenset({WRITE_LOAD_GROWTH})
    return ShardInfo(key, n, LONG_AGO, ((0, 1), (LONG_AGO, n)), grown_for=grown_for)


class PartHistories:
    """A LoadHistorySource of two parts of the key space, as the adapter joins them."""

    def __init__(self, parts: list[LoadHistory]) -> None:
        self.parts = parts

    def peak_offered_wcu(self, start: datetime, end: datetime, period_s: int) -> LoadHistory:
        return LoadHistory.from_parts(self.parts)


def test_a_key_grown_on_the_report_and_left_out_of_it_shrinks_on_its_parts_bound() -> None:
    # Given two parts: part 1's report was cut at a key of 600 units in the window (at
    # most 10 WCU/s for any key it left out), part 0's at 480,000 (8,000 WCU/s)
    cool, also_cool = "COOL", "HOT"  # both in part 1 of 2
    assert write_load_part(cool, 2) == write_load_part(also_cool, 2) == 1
    in_part_0 = next(f"K{i}" for i in range(100) if write_load_part(f"K{i}", 2) == 0)
    history = PartHistories(
        [
            LoadHistory(NOW, NOW, 60, {"BUSY": 9000.0}, 8000.0),
            LoadHistory(NOW, NOW, 60, {"WARM": 10.0}, 10.0),
        ]
    )
    port = FakeShrinker(
        [
            grown_on_the_report(5, cool),  # left out of its part, which bounds it
            grown_on_the_report(5, in_part_0),  # left out of a part that says little
            info(5, key=also_cool),  # left out, but not known to be logged
        ]
    )
    # When the sweep runs
    outcome = shrink_cool_keys(NOW, port, history, Settings())
    # Then only the key its own part bounds below the mark shrinks, planned on the bound
    assert port.calls == [(cool, 1)]
    (shrunk,) = outcome.shrunk
    assert shrunk.bounded and shrunk.peak_units_per_s == 10.0
    assert shrunk.to_dict()["bounded"] is True
    kept = {k.key: k.reason for k in outcome.kept}
    assert kept[in_part_0].startswith("bound (absent from its write-load report) 8000.0 WCU/s")
    assert "unknown, not idle" in kept[also_cool]


def test_a_history_that_states_no_bound_shrinks_no_key_it_leaves_out() -> None:
    # Given a history that names no key and says nothing of the others (the default bound,
    # as the sandbox's rule gives before it has watched a whole cool period)
    history = PartHistories([LoadHistory(NOW, NOW, 60, {})])
    port = FakeShrinker([grown_on_the_report(5, "COOL")])
    # Then even a key grown on the write-load report is unknown, and kept
    outcome = shrink_cool_keys(NOW, port, history, Settings())
    assert port.calls == [] and "unknown, not idle" in outcome.kept[0].reason


def test_a_key_the_report_names_is_planned_on_its_peak_not_a_bound() -> None:
    history = PartHistories([LoadHistory(NOW, NOW, 60, {"COOL": 900.0}, 10.0)])
    port = FakeShrinker([grown_on_the_report(5, "COOL")])
    (shrunk,) = shrink_cool_keys(NOW, port, history, Settings()).shrunk
    assert (shrunk.current, shrunk.bounded) == (2, False)
    assert "bounded" not in shrunk.to_dict()


def test_a_report_that_names_nobody_bounds_nothing() -> None:
    # a report that names nobody is no evidence (issue 38, bug 9): no bound, and a gap
    for active in (None, []):
        empty = LoadHistory.from_report(NOW, NOW, 60, {}, active, rule="r")
        assert empty.peak("C") == math.inf and empty.peak_units_per_s == {}
        assert empty.gap("C").startswith("r: the report names no contributor")


def test_parts_join_their_keys_and_keep_their_own_bounds() -> None:
    a = LoadHistory(NOW, NOW, 60, {"A": 5.0}, 2.0)
    b = LoadHistory(NOW, NOW, 60, {"B": 9.0}, 0.0)
    joined = LoadHistory.from_parts([a, b])
    assert dict(joined.peak_units_per_s) == {"A": 5.0, "B": 9.0}
    assert joined.part_bounds == (2.0, 0.0) and joined.unreported_units_per_s == 2.0
    for key in ("COOL", "K0", "K1", "K2"):
        assert joined.bound(key) == (2.0, 0.0)[write_load_part(key, 2)]
    assert LoadHistory.from_parts([a]) is a
    with pytest.raises(ValueError, match="no part"):
        LoadHistory.from_parts([])


def grown_for_reads(n: int, key: str = "DEPARTURES#JFK") -> ShardInfo:
    return ShardInfo(key, n, LONG_AGO, ((0, 1), (LONG_AGO, n)), grown_for=frozenset({"read"}))


class ReadSeries:
    """A ReadLoadHistorySource over fixed peaks, RCU/s."""

    def __init__(self, peaks: dict[str, float]) -> None:
        self.peaks = peaks
        self.calls: list[tuple[datetime, datetime, int]] = []

    def peak_read_rcu(self, start: datetime, end: datetime, period_s: int) -> LoadHistory:
        self.calls.append((start, end, period_s))
        return LoadHistory(start, end, period_s, dict(self.peaks))


def test_a_key_grown_for_reads_is_not_shrunk_on_write_load_alone() -> None:
    # Given a key grown to 8 by a read key-range alarm, with little write load
    minute = NOW - timedelta(minutes=5)
    history = SeriesHistory({"DEPARTURES#JFK": {minute: 60.0}})
    port = FakeShrinker([grown_for_reads(8)])
    # When the sweep runs without any read-load figure
    outcome = shrink_cool_keys(NOW, port, history, Settings())
    # Then it is kept: the write report cannot tell that its reads cooled down
    assert port.calls == []
    assert "grown for read" in outcome.kept[0].reason


def test_read_load_keeps_a_read_hot_key_and_sizes_a_cooled_one() -> None:
    minute = NOW - timedelta(minutes=5)
    history = SeriesHistory({"HOT": {minute: 60.0}, "COOL": {minute: 60.0}})
    port = FakeShrinker([grown_for_reads(8, "HOT"), grown_for_reads(8, "COOL")])
    # Given reads: HOT at 15,000 RCU/s (over 8 x 3000 x 0.5 = 12,000), COOL at 5,000 RCU/s
    reads = ReadSeries({"HOT": 15_000.0, "COOL": 5_000.0})
    outcome = shrink_cool_keys(NOW, port, history, Settings(), read_history=reads)
    # Then HOT is kept on its reads, COOL shrinks to what its reads need: ceil(5000 / 2400)
    assert port.calls == [("COOL", 3)]
    assert [k.key for k in outcome.kept] == ["HOT"] and "RCU/s" in outcome.kept[0].reason
    assert reads.calls == [(NOW - timedelta(minutes=30), NOW, HISTORY_PERIOD_S)]


def test_a_key_grown_for_reads_and_absent_from_the_read_report_is_kept() -> None:
    minute = NOW - timedelta(minutes=5)
    history = SeriesHistory({"DEPARTURES#JFK": {minute: 60.0}})
    port = FakeShrinker([grown_for_reads(8)])
    shrink_cool_keys(NOW, port, history, Settings(), read_history=ReadSeries({}))
    assert port.calls == []


# --- the metadata round trip (moto) ------------------------------------------------------------
def test_shrink_round_trip_through_the_conditional_update(ddb_client: object) -> None:
    store = DynamoDBMetadataStore(METADATA_TABLE.default_name, ddb_client)  # type: ignore[arg-type]
    now = [1_357_000_000.0]
    meta = ShardMetadata(store, default_shards=2, cooldown_s=60.0, clock=lambda: now[0])
    # Given a key grown 1 -> 8, and one at the default
    meta.for_writer("HOT")
    meta.for_writer("COLD")
    meta.grow("HOT", 8)
    # Then the scan finds the sharded key only
    assert [i.key for i in meta.sharded_keys()] == ["HOT"]
    # and a shrink within the cooldown is refused
    assert meta.shrink("HOT", 2).reason == "cooldown"
    now[0] += 120
    # A shrink never raises N, never goes below the default, and is one conditional step
    assert meta.shrink("HOT", 16).reason == "already_smaller"
    result = meta.shrink("HOT", 1)
    assert (result.previous, result.current, result.changed, result.reason) == (
        8,
        2,
        True,
        "shrunk",
    )
    fresh = meta.for_reader("HOT")
    assert fresh.number_of_shards == 2 and sorted(fresh.counts) == [2, 8] and fresh.max_count == 8
    assert [c for _, c in fresh.history] == [2, 8, 2]
    assert meta.sharded_keys() == []  # back at the default
    assert meta.shrink("NEVER", 1).reason == "not_stored"


def test_a_shrink_loses_to_a_racing_change_and_rereads(ddb_client: object) -> None:
    store = DynamoDBMetadataStore(METADATA_TABLE.default_name, ddb_client)  # type: ignore[arg-type]
    now = [1_357_000_000.0]
    meta = ShardMetadata(store, cooldown_s=60.0, clock=lambda: now[0], sleep=lambda _: None)
    meta.for_writer("K")
    meta.grow("K", 8)
    now[0] += 120
    racer = ShardMetadata(store, cooldown_s=60.0, clock=lambda: now[0])
    real_update = store.update

    def update_after_a_racer(key: str, count: int, expected: int, at: int) -> ShardInfo | None:
        store.update = real_update  # type: ignore[method-assign]
        racer.grow("K", 16)  # moves last_updated under the shrinker's feet
        return real_update(key, count, expected, at)

    store.update = update_after_a_racer  # type: ignore[method-assign]
    result = meta.shrink("K", 2)
    # The conditional update failed, the re-read saw the growth within the cooldown
    assert (result.changed, result.reason, meta.for_reader("K").number_of_shards) == (
        False,
        "cooldown",
        16,
    )


def test_a_scan_failure_is_a_metadata_error() -> None:
    client = boto3.client("dynamodb", region_name="us-east-1")
    with Stubber(client) as stub:
        stub.add_client_error("scan", "InternalServerError")
        with pytest.raises(MetadataError, match="scanning"):
            DynamoDBMetadataStore("m", client).scan_sharded(1)


# --- the Contributor Insights adapter (Stubber: moto has no GetInsightRuleReport) -------------
def test_the_adapter_reads_each_keys_peak_minute() -> None:
    client = boto3.client("cloudwatch", region_name="us-east-1")
    start, end = NOW - timedelta(minutes=30), NOW
    response = {
        "KeyLabels": ["logical_key"],
        "AggregationStatistic": "Sum",
        "ApproximateUniqueCount": 3,
        "Contributors": [
            {
                "Keys": ["HOT"],
                "ApproximateAggregateValue": 9000.0,
                "Datapoints": [
                    {"Timestamp": start, "ApproximateValue": 6000.0},
                    {"Timestamp": start + timedelta(minutes=1), "ApproximateValue": 3000.0},
                ],
            },
            {
                "Keys": ["WARM"],
                "ApproximateAggregateValue": 600.0,
                "Datapoints": [{"Timestamp": start, "ApproximateValue": 600.0}],
            },
        ],
        # the rule counted a contributor in every minute of the window: live
        "MetricDatapoints": [
            {"Timestamp": start + timedelta(minutes=m), "UniqueContributors": 1.0}
            for m in range(30)
        ],
    }
    expected = {
        "RuleName": "stack-offered-write-units",
        "StartTime": start,
        "EndTime": end,
        "Period": 60,
        "MaxContributorCount": 100,
        "OrderBy": "Sum",
        "Metrics": ["UniqueContributors"],
    }
    with Stubber(client) as stub:
        stub.add_response("get_insight_rule_report", response, expected)
        history = InsightRuleOfferedLoad("stack-offered-write-units", client).peak_offered_wcu(
            start, end, 60
        )
    assert history.peak("HOT") == 100.0 and history.peak("WARM") == 10.0
    # three contributors, two reported: a third is bounded by WARM's 600 units / 60 s
    assert history.peak("OTHER") == 10.0


def test_the_adapter_reads_each_parts_history_and_bounds_a_key_by_its_own_part() -> None:
    client = boto3.client("cloudwatch", region_name="us-east-1")
    start, end = NOW - timedelta(minutes=30), NOW
    rules = ["stack-offered-write-units-0-of-2", "stack-offered-write-units-1-of-2"]
    live = [
        {"Timestamp": start + timedelta(minutes=m), "UniqueContributors": 1.0} for m in range(30)
    ]
    reports: list[dict[str, object]] = [
        # part 0: cut (500 contributors) at a key of 480,000 units
        {
            "ApproximateUniqueCount": 500,
            "Contributors": [
                {"Keys": ["BUSY"], "ApproximateAggregateValue": 480_000.0, "Datapoints": []}
            ],
            "MetricDatapoints": live,
        },
        # part 1: cut at a key of 600 units
        {
            "ApproximateUniqueCount": 900,
            "Contributors": [
                {
                    "Keys": ["WARM"],
                    "ApproximateAggregateValue": 600.0,
                    "Datapoints": [{"Timestamp": start, "ApproximateValue": 600.0}],
                }
            ],
            "MetricDatapoints": live,
        },
    ]
    with Stubber(client) as stub:
        for rule, report in zip(rules, reports, strict=True):
            stub.add_response(
                "get_insight_rule_report",
                report,
                {
                    "RuleName": rule,
                    "StartTime": start,
                    "EndTime": end,
                    "Period": 60,
                    "MaxContributorCount": 100,
                    "OrderBy": "Sum",
                    "Metrics": ["UniqueContributors"],
                },
            )
        history = InsightRuleOfferedLoad(rules, client).peak_offered_wcu(start, end, 60)
    assert history.peak("WARM") == 10.0 and history.part_bounds == (8000.0, 10.0)
    part_1 = next(f"K{i}" for i in range(100) if write_load_part(f"K{i}", 2) == 1)
    assert history.peak(part_1) == 10.0


# --- an empty or partial write-load report is no evidence (issue 38, bug 9) -------------------
RULE = "stack-offered-write-units"
WINDOW = (NOW - timedelta(minutes=30), NOW)


def minutes(first: int, last: int) -> list[datetime]:
    """The starts of the window's minutes ``first`` to ``last`` (0 is the window's first)."""
    return [WINDOW[0] + timedelta(minutes=m) for m in range(first, last + 1)]


def contributor(key: str, units_per_minute: float, at: list[datetime]) -> dict[str, object]:
    """A report's contributor offered ``units_per_minute`` in each minute of ``at``."""
    return {
        "Keys": [key],
        "ApproximateAggregateValue": units_per_minute * len(at),
        "Datapoints": [{"Timestamp": t, "ApproximateValue": units_per_minute} for t in at],
    }


def report(*contributors: dict[str, object], at: list[datetime] | None = None) -> dict[str, object]:
    """A ``GetInsightRuleReport`` answer; ``at``: the minutes of its own datapoints."""
    named = list(contributors)
    out: dict[str, object] = {
        "KeyLabels": ["logical_key"],
        "AggregationStatistic": "Sum",
        "AggregateValue": sum(float(c["ApproximateAggregateValue"]) for c in named),  # type: ignore[arg-type]
        "ApproximateUniqueCount": len(named),
        "Contributors": named,
    }
    if at is not None:
        out["MetricDatapoints"] = [
            {"Timestamp": t, "UniqueContributors": float(len(named))} for t in at
        ]
    return out


def read_reports(*reports: dict[str, object]) -> LoadHistory:
    """The adapter's history of the window over one report per part (a stubbed CloudWatch)."""
    client = boto3.client("cloudwatch", region_name="us-east-1")
    rules = (
        [RULE]
        if len(reports) == 1
        else [f"{RULE}-{i}-of-{len(reports)}" for i in range(len(reports))]
    )
    with Stubber(client) as stub:
        for answer in reports:
            stub.add_response("get_insight_rule_report", answer)
        return InsightRuleOfferedLoad(rules, client).peak_offered_wcu(*WINDOW, 60)


class Reports:
    """A LoadHistorySource that reads the given reports through the adapter."""

    def __init__(self, *reports: dict[str, object]) -> None:
        self.reports = reports

    def peak_offered_wcu(self, start: datetime, end: datetime, period_s: int) -> LoadHistory:
        assert (start, end, period_s) == (*WINDOW, 60)
        return read_reports(*self.reports)


def test_an_empty_write_load_report_shrinks_no_key() -> None:
    # Given three keys grown on the write-load report, long out of their cooldown, and a
    # report that names nobody (a rule just created or renamed, INFO lines not logged,
    # a disabled rule, or Contributor Insights lagging all look like this)
    keys = ["TENANT#1", "TENANT#2", "TENANT#3"]
    port = FakeShrinker([grown_on_the_report(8, k) for k in keys])
    empty = {"Contributors": [], "ApproximateUniqueCount": 0, "AggregateValue": 0.0}
    # When the sweep reads it
    outcome = shrink_cool_keys(NOW, port, Reports(empty), Settings())
    # Then no key shrinks: absence of evidence is not evidence of idleness
    assert port.calls == []
    assert outcome.shrunk == ()
    assert [k.key for k in outcome.kept] == keys
    assert all(
        "no evidence" in k.reason and "names no contributor" in k.reason for k in outcome.kept
    )
    # and the sweep says which report was no evidence
    (gap,) = outcome.no_evidence
    assert gap.startswith(f"{RULE}: the report names no contributor")
    assert outcome.to_dict()["no_evidence"] == [gap]


def test_a_report_that_misses_the_start_of_the_window_is_no_evidence() -> None:
    # Given a rule renamed 5 minutes ago (changing write_load_parts renames every rule):
    # its report names COOL at 60 units a minute, but only since then
    recent = minutes(25, 29)
    answer = report(contributor("COOL", 60.0, recent), at=recent)
    port = FakeShrinker([grown_on_the_report(8, "COOL")])
    # When the sweep reads it over its 30-minute cool period
    outcome = shrink_cool_keys(NOW, port, Reports(answer), Settings())
    # Then COOL is kept: its first 25 minutes were not counted
    assert port.calls == []
    assert "did not count the whole window" in outcome.kept[0].reason


def test_a_report_whose_rule_stopped_counting_is_no_evidence() -> None:
    # Given a rule that counted the first 10 minutes of the window and nothing since
    # (disabled, or the ingest functions' INFO lines no longer logged)
    early = minutes(0, 9)
    answer = report(contributor("COOL", 60.0, early), at=early)
    port = FakeShrinker([grown_on_the_report(8, "COOL"), grown_on_the_report(8, "GONE")])
    outcome = shrink_cool_keys(NOW, port, Reports(answer), Settings())
    assert port.calls == []
    assert all("stopped counting" in k.reason for k in outcome.kept)


def test_a_live_report_still_shrinks_the_keys_it_shows_cool() -> None:
    # Given a report live over the whole window: BUSY at 300,000 units a minute, COOL at
    # 60 (1 WCU/s); a third key, grown on the report, left out of it
    whole = minutes(0, 29)
    answer = report(
        contributor("BUSY", 300_000.0, whole), contributor("COOL", 60.0, whole), at=whole
    )
    port = FakeShrinker(
        [
            grown_on_the_report(8, "BUSY"),
            grown_on_the_report(8, "COOL"),
            grown_on_the_report(8, "GONE"),
        ]
    )
    outcome = shrink_cool_keys(NOW, port, Reports(answer), Settings())
    # Then COOL shrinks on its peak, GONE on the report's floor (COOL's 1,800 units over
    # the window: at most 30 WCU/s in any minute), BUSY is kept
    assert sorted(port.calls) == [("COOL", 1), ("GONE", 1)]
    gone = next(s for s in outcome.shrunk if s.key == "GONE")
    assert gone.bounded and gone.peak_units_per_s == 30.0
    assert outcome.no_evidence == ()
    assert "no_evidence" not in outcome.to_dict()


def test_a_key_absent_from_a_live_report_is_bounded_by_its_floor_not_0() -> None:
    # Given a live report that names two keys and counts two contributors: whole, as far
    # as its approximate unique count says
    whole = minutes(0, 29)
    answer = report(
        contributor("BUSY", 300_000.0, whole), contributor("WARM", 600.0, whole), at=whole
    )
    history = read_reports(answer)
    # Then a key it leaves out is bounded by the smallest total it names (18,000 units
    # in the window: 300 WCU/s at most in one minute), never taken for idle
    assert history.peak("WARM") == 10.0
    assert history.bound("OTHER") == history.peak("OTHER") == 300.0
    # and a key grown on the report with a low-water mark below that bound is kept
    port = FakeShrinker([grown_on_the_report(2, "OTHER")])  # mark 2 x 1000 x 0.5 = 1,000
    assert shrink_cool_keys(NOW, port, Reports(answer), Settings()).shrunk[0].current == 1
    port = FakeShrinker([grown_on_the_report(2, "OTHER")])
    low = Settings(shrink_utilization=0.1)  # mark 2 x 1000 x 0.1 = 200 < 300
    outcome = shrink_cool_keys(NOW, port, Reports(answer), low)
    assert port.calls == [] and "300.0 WCU/s is not below" in outcome.kept[0].reason


def test_an_empty_part_keeps_its_keys_and_a_live_part_still_bounds_its_own() -> None:
    # Given two parts: part 0 live over the window (WARM at 60 units a minute), part 1
    # empty (its rule just created)
    in_0 = next(f"K{i}" for i in range(100) if write_load_part(f"K{i}", 2) == 0)
    in_1 = next(f"K{i}" for i in range(100) if write_load_part(f"K{i}", 2) == 1)
    whole = minutes(0, 29)
    live = report(contributor("WARM", 60.0, whole), at=whole)
    empty = report(at=[])
    port = FakeShrinker([grown_on_the_report(8, in_0), grown_on_the_report(8, in_1)])
    outcome = shrink_cool_keys(NOW, port, Reports(live, empty), Settings())
    # Then the key of the live part shrinks on its part's floor; the other is kept
    assert port.calls == [(in_0, 1)]
    assert [k.key for k in outcome.kept] == [in_1] and "no evidence" in outcome.kept[0].reason
    (gap,) = outcome.no_evidence
    assert gap.startswith(f"{RULE}-1-of-2: the report names no contributor and has no datapoint")


def test_the_adapter_asks_for_the_rules_own_datapoints() -> None:
    client = boto3.client("cloudwatch", region_name="us-east-1")
    whole = minutes(0, 29)
    expected = {
        "RuleName": RULE,
        "StartTime": WINDOW[0],
        "EndTime": WINDOW[1],
        "Period": 60,
        "MaxContributorCount": 100,
        "OrderBy": "Sum",
        "Metrics": ["UniqueContributors"],
    }
    with Stubber(client) as stub:
        stub.add_response(
            "get_insight_rule_report", report(contributor("A", 60.0, whole), at=whole), expected
        )
        history = InsightRuleOfferedLoad(RULE, client).peak_offered_wcu(*WINDOW, 60)
    assert history.gaps == () and history.peak("A") == 1.0


def test_datapoints_that_count_nothing_do_not_show_the_rule_live() -> None:
    # A contributor named with zero-valued datapoints, and rule datapoints with no
    # contributor, before the last 5 minutes: the rule counted only since then
    whole, recent = minutes(0, 29), minutes(25, 29)
    quiet = {
        "Keys": ["A"],
        "ApproximateAggregateValue": 300.0,
        "Datapoints": [
            {"Timestamp": t, "ApproximateValue": 60.0 if t in recent else 0.0} for t in whole
        ],
    }
    answer = report(quiet)
    answer["MetricDatapoints"] = [
        {"Timestamp": t, "UniqueContributors": 1.0 if t in recent else 0.0} for t in whole
    ]
    assert "did not count the whole window" in read_reports(answer).gap("A")


@pytest.mark.parametrize(
    ("first_s", "last_s", "evidence"),
    [
        (0, 1740, True),  # every minute of the window
        (59, 1740, True),  # first datapoint inside the first period
        (60, 1740, False),  # first datapoint in the second period
        (0, 1800 - 60 - 300, True),  # newest period ended 300 s before the end: allowed
        (0, 1800 - 60 - 301, False),  # 301 s: stopped counting
    ],
)
def test_report_gap_edges(first_s: int, last_s: int, evidence: bool) -> None:
    from dynashard.planning.shrinking import REPORT_LAG_S, report_gap

    assert REPORT_LAG_S == 300.0
    start, end = WINDOW
    active = [start + timedelta(seconds=first_s), start + timedelta(seconds=last_s)]
    assert (report_gap(start, end, 60, 1, active) == "") is evidence
    assert report_gap(start, end, 60, 0, active) == "the report names no contributor"
    assert report_gap(start, end, 60, 1, []) == "the report has no datapoint in the window"
    assert report_gap(start, end, 60, 1, None) == ""  # a source without a time series


def test_a_named_key_of_a_history_with_a_gap_is_kept_whatever_its_peak() -> None:
    history = LoadHistory(NOW, NOW, 60, {"COOL": 1.0}, 1.0, gaps=("said so",))
    port = FakeShrinker([info(8, key="COOL")])
    outcome = shrink_cool_keys(NOW, port, PartHistories([history]), Settings())
    assert port.calls == [] and "(said so)" in outcome.kept[0].reason
    assert outcome.no_evidence == ("said so",)
