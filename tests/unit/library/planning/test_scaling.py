"""The scaler's policy (planning.scaling): alarms, load per logical key, growth, the report."""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from dynashard import names
from dynashard.core.retry import Backoff
from dynashard.core.shard_info import GrowthResult, ShardInfo
from dynashard.core.throttling import READ_KEY_RANGE_METRIC, WRITE_KEY_RANGE_METRIC
from dynashard.errors import CooldownActiveError, DynashardError, MetadataError
from dynashard.lambda_kit.settings import FunctionSettings
from dynashard.planning import scaling
from dynashard.planning.scaling import (
    Alarm,
    AlarmOutcome,
    HotKey,
    KeyGrowth,
    KeySkip,
    alarm_from_notification,
    alarm_kind,
    handle_alarm,
)
from dynashard.planning.shards import PARTITION_RCU_LIMIT, PARTITION_WCU_LIMIT

ALARM_TIME = datetime(2024, 2, 17, 11, 53, 8, 431000, tzinfo=UTC)
TABLE = "dynashard-data"


@dataclass(frozen=True)
class Limits:
    """A :class:`~dynashard.planning.scaling.ScalingSettings` with the library's defaults."""

    data_table: str = TABLE
    partition_wcu: float = PARTITION_WCU_LIMIT
    partition_rcu: float = PARTITION_RCU_LIMIT
    target_utilization: float = 0.8
    max_shards: int = 1000
    write_max_attempts: int = Backoff().max_attempts


class FakeHotKeys:
    """A HotKeySource returning fixed keys and recording its calls."""

    def __init__(self, keys: list[HotKey]) -> None:
        self.keys = keys
        self.calls: list[tuple[str, str | None, datetime, datetime]] = []

    def hot_keys(
        self, table_name: str, index_name: str | None, start: datetime, end: datetime
    ) -> list[HotKey]:
        self.calls.append((table_name, index_name, start, end))
        return list(self.keys)


class FakeOfferedLoad:
    """An OfferedLoadSource returning fixed figures and recording its calls."""

    def __init__(self, offered: dict[str, float]) -> None:
        self.offered = offered
        self.calls: list[tuple[datetime, datetime]] = []

    def offered_wcu(self, start: datetime, end: datetime) -> dict[str, float]:
        self.calls.append((start, end))
        return dict(self.offered)


class FakeShards:
    """A ScalerPort over a dict of counts; ``grow_raises`` fails chosen keys; ``caps`` per key."""

    def __init__(
        self,
        shards: dict[str, int] | None = None,
        grow_raises: dict[str, Exception] | None = None,
        caps: dict[str, int] | None = None,
    ) -> None:
        self.shards = dict(shards or {})
        self.grow_raises = dict(grow_raises or {})
        self.caps = dict(caps or {})
        self.grow_calls: list[tuple[str, int]] = []
        self.reasons: dict[str, str | None] = {}

    def shard_info(self, key: str) -> ShardInfo:
        return ShardInfo(key, self.shards.get(key, 1), 0, (), max_shards=self.caps.get(key))

    def grow(self, key: str, target: int, *, reason: str | None = None) -> GrowthResult:
        self.grow_calls.append((key, target))
        self.reasons[key] = reason
        if key in self.grow_raises:
            raise self.grow_raises[key]
        previous = self.shards.get(key, 1)
        self.shards[key] = max(previous, target)
        changed = target > previous
        return GrowthResult(key, previous, self.shards[key], changed, "grown" if changed else "x")


def write_alarm(**changes: Any) -> Alarm:
    """The sample alarm: the data table's write key-range alarm, one minute."""
    alarm = Alarm(
        name="dynashard-data-write-key-range-throttles",
        state="ALARM",
        timestamp=ALARM_TIME,
        window_s=60,
        metric_names=(WRITE_KEY_RANGE_METRIC,),
        table_name=TABLE,
    )
    return replace(alarm, **changes)


def jfk_hot() -> FakeHotKeys:
    return FakeHotKeys(
        [
            HotKey("DEPARTURES#JFK#0", 900.0, 120),
            HotKey("DEPARTURES#JFK#1", 950.0, 80),
            HotKey("DEPARTURES#EWR#0", 100.0, 0),
        ]
    )


# --- the alarm --------------------------------------------------------------------------
def _notification(**trigger: Any) -> dict[str, Any]:
    return {
        "AlarmName": "dynashard-data-write-key-range-throttles",
        "NewStateValue": "ALARM",
        "StateChangeTime": "2024-02-17T11:53:08.431+0000",
        "Trigger": {
            "MetricName": WRITE_KEY_RANGE_METRIC,
            "Namespace": "AWS/DynamoDB",
            "Dimensions": [{"value": TABLE, "name": "TableName"}],
            "Period": 60,
            "EvaluationPeriods": 1,
            **trigger,
        },
    }


def test_a_notification_becomes_the_alarm() -> None:
    assert alarm_from_notification(_notification()) == write_alarm()


def test_a_notification_with_a_gsi_dimension_and_several_periods() -> None:
    dims = [
        {"value": TABLE, "name": "TableName"},
        {"value": "GSI1", "name": "GlobalSecondaryIndexName"},
    ]
    alarm = alarm_from_notification(_notification(Dimensions=dims, EvaluationPeriods=3))
    assert alarm.index_name == "GSI1"
    assert alarm.window_s == 180
    assert alarm.start == ALARM_TIME - timedelta(seconds=180)


def test_a_metric_math_notification_names_its_metrics_and_their_dimensions() -> None:
    # Given a metric-math alarm: no MetricName at the top, the metrics in Trigger.Metrics
    metric = {
        "MetricName": READ_KEY_RANGE_METRIC,
        "Dimensions": [{"Name": "TableName", "Value": TABLE}],
    }
    message = _notification(
        MetricName=None,
        Dimensions=[],
        Metrics=[
            {"Id": "e1", "Expression": "m1 * 2"},
            {"Id": "m1", "MetricStat": {"Metric": metric}},
        ],
    )
    alarm = alarm_from_notification(message)
    assert alarm.metric_names == (READ_KEY_RANGE_METRIC,)
    assert alarm.table_name == TABLE
    assert alarm_kind(alarm) == "read"


def test_a_notification_without_a_time_is_looked_at_up_to_now() -> None:
    before = datetime.now(UTC)
    alarm = alarm_from_notification({**_notification(), "StateChangeTime": "not a time"})
    assert before <= alarm.timestamp <= datetime.now(UTC)
    assert alarm.window_s == 60


@pytest.mark.parametrize(
    ("metrics", "kind"),
    [
        ((WRITE_KEY_RANGE_METRIC,), "write"),
        ((READ_KEY_RANGE_METRIC,), "read"),
        ((READ_KEY_RANGE_METRIC, WRITE_KEY_RANGE_METRIC), "write"),
        # Invariant 6: an alarm that names no metric cannot tell a hot key from a table limit
        ((), None),
        (("WriteProvisionedThroughputThrottleEvents",), None),
        (("WriteThrottleEvents", "ReadThrottleEvents"), None),
        # Metric math mixing a key-range metric with table-level throttling
        ((WRITE_KEY_RANGE_METRIC, "WriteThrottleEvents"), None),
        ((READ_KEY_RANGE_METRIC, "ThrottledRequests"), None),
        # A custom metric that borrows DynamoDB's name, and a SEARCH expression
        ((f"MyApp/{WRITE_KEY_RANGE_METRIC}",), None),
        ((WRITE_KEY_RANGE_METRIC, "expression:SEARCH('{AWS/DynamoDB} Throttled', 'Sum')"), None),
    ],
)
def test_alarm_kind(metrics: tuple[str, ...], kind: str | None) -> None:
    assert alarm_kind(write_alarm(metric_names=metrics)) == kind


# --- growth -----------------------------------------------------------------------------
def test_the_hot_key_grows_to_the_planned_count() -> None:
    # Given JFK on 2 shards, both throttled (~2,003 WCU/s wanted), and EWR cool on 1
    shards, hot = FakeShards({"DEPARTURES#JFK": 2}), jfk_hot()
    # When the alarm is handled
    outcome = handle_alarm(write_alarm(), shards, hot, Limits())
    # Then the source was asked about the alarm's table and window
    assert hot.calls == [(TABLE, None, ALARM_TIME - timedelta(seconds=60), ALARM_TIME)]
    # and JFK grows to ceil(2000.5 / (1000 x 0.8)) = 3 (2 shards at the limit, and 200
    # throttled requests / 8 attempts turned away for 1,850 x 60 units consumed), EWR
    # is left alone
    assert shards.grow_calls == [("DEPARTURES#JFK", 3)]
    (jfk,) = outcome.grown
    assert (jfk.key, jfk.previous, jfk.current, jfk.basis) == ("DEPARTURES#JFK", 2, 3, "estimated")
    assert round(jfk.units_per_s, 1) == 2000.5
    assert [s.key for s in outcome.skipped] == ["DEPARTURES#EWR"]
    assert outcome.errors == () and outcome.ignored is None


def test_gsi1_buckets_are_separate_loads_and_the_busiest_sets_the_count() -> None:
    # Given a GSI1 alarm whose minute spans midnight UTC: JFK's 2 shards throttled in the
    # old day's bucket, then its 2 shards in the new day's (THROTTLED_KEYS mode)
    hot = FakeHotKeys(
        [
            HotKey(f"DEPARTURES#JFK#{day}#{shard}", 0.0, 80)
            for day in ("2013-01-01", "2013-01-02")
            for shard in (0, 1)
        ]
    )
    shards = FakeShards({"DEPARTURES#JFK": 2})
    # When the alarm is handled
    handle_alarm(write_alarm(index_name="GSI1"), shards, hot, Limits())
    # Then N carries one bucket at 2 shards x 1,000 WCU/s (+ 160 / 8 / 60 turned away):
    # ceil(2000.3 / 800) = 3, not the 5 that summing both buckets' 4 shards would ask
    assert shards.grow_calls == [("DEPARTURES#JFK", 3)]


def test_an_index_alarm_grows_the_logical_key_behind_the_gsi1_keys() -> None:
    hot = FakeHotKeys([HotKey("DEPARTURES#JFK#2013-01-01#0", 0.0, 48_000)])
    shards = FakeShards()
    handle_alarm(write_alarm(index_name="GSI1"), shards, hot, Limits())
    # The index was asked, and the logical key (not "{logical}#{bucket}") grows (one
    # GSI1 key at its limit plus 48,000 / 60 s / 8 attempts = 1,100 units/s)
    assert hot.calls[0][1] == "GSI1"
    assert shards.grow_calls == [("DEPARTURES#JFK", 2)]


def test_growth_respects_the_limit_and_the_headroom() -> None:
    # Given the sandbox's scaled-down partition limit of 50 WCU/s, half of it planned
    shards = FakeShards()
    hot = FakeHotKeys([HotKey("HOT#0", 50.0, 60)])
    handle_alarm(write_alarm(), shards, hot, Limits(partition_wcu=50, target_utilization=0.5))
    # Then the count is planned from 50.1 units/s against 25 per shard
    assert shards.grow_calls == [("HOT", 3)]


def test_growth_is_capped_at_max_shards() -> None:
    shards = FakeShards()
    hot = FakeHotKeys([HotKey("HOT#0", 50.0, 150 * 60 * 4)])
    outcome = handle_alarm(
        write_alarm(), shards, hot, Limits(partition_wcu=50, write_max_attempts=4, max_shards=3)
    )
    assert shards.grow_calls == [("HOT", 3)]
    assert outcome.grown[0].current == 3


def test_growth_is_capped_at_the_keys_own_max_shards() -> None:
    # Given JFK on 1 shard with a cap of its own of 2, hot enough for 3
    shards, hot = FakeShards({"DEPARTURES#JFK": 1}, caps={"DEPARTURES#JFK": 2}), jfk_hot()
    # When the alarm is handled
    outcome = handle_alarm(write_alarm(), shards, hot, Limits())
    # Then the plan stops at the key's cap
    assert shards.grow_calls == [("DEPARTURES#JFK", 2)]
    assert [(g.key, g.current) for g in outcome.grown] == [("DEPARTURES#JFK", 2)]


def test_a_key_at_its_own_cap_is_skipped_as_capped() -> None:
    shards = FakeShards({"DEPARTURES#JFK": 2}, caps={"DEPARTURES#JFK": 2})
    outcome = handle_alarm(write_alarm(), shards, jfk_hot(), Limits())
    assert shards.grow_calls == []
    [skip] = [s for s in outcome.skipped if s.key == "DEPARTURES#JFK"]
    assert skip.reason.startswith("capped") and "cap 2" in skip.reason


def test_growth_plans_from_the_offered_load_with_the_writers_retry_budget() -> None:
    # Given writers with 4 attempts, and one shard offered 4 x its 50 WCU/s for the
    # alarm's minute: 150 writes/s turned away, each throttled 4 times
    shards = FakeShards()
    hot = FakeHotKeys([HotKey("HOT#0", 50.0, 150 * 60 * 4)])
    outcome = handle_alarm(
        write_alarm(), shards, hot, Limits(partition_wcu=50, write_max_attempts=4)
    )
    # Then the key grows in one step to what 200 units/s need at 40 per shard: 5
    assert shards.grow_calls == [("HOT", 5)]
    assert outcome.grown[0].units_per_s == pytest.approx(200.0)


def test_writes_are_planned_from_the_offered_load_the_writers_reported() -> None:
    # Given one shard throttled at 50 WCU/s (retries make the estimate a lower bound),
    # and writers that report 12,000 WCU offered in the alarm's minute (200 WCU/s)
    shards = FakeShards()
    hot = FakeHotKeys([HotKey("HOT#0", 50.0, 60), HotKey("COUNTER#C#0", 50.0, 600)])
    offered = FakeOfferedLoad({"HOT": 12_000.0, "COLD": 60.0})
    limits = Limits(partition_wcu=50, target_utilization=0.5)
    # When the alarm is handled
    outcome = handle_alarm(write_alarm(), shards, hot, limits, offered)
    # Then the rule was asked about the alarm's window, HOT grows in one step to
    # ceil(200 / 25) = 8 on the offered basis, the counter (not in the writers' report)
    # on the estimate, and COLD (offered, but not hot) is left alone
    assert offered.calls == [(ALARM_TIME - timedelta(seconds=60), ALARM_TIME)]
    grown = {g.key: (g.current, g.basis) for g in outcome.grown}
    assert grown["HOT"] == (8, "offered")
    assert grown["COUNTER#C"][1] == "estimated"
    assert "COLD" not in grown
    # and the key the writers' report named is recorded as grown on it ("write-load": a
    # later report that leaves it out bounds its load), the estimated one as "write"
    assert shards.reasons == {"HOT": "write-load", "COUNTER#C": "write"}


def test_no_hot_keys_do_not_ask_for_the_offered_load() -> None:
    offered = FakeOfferedLoad({"HOT": 12_000.0})
    outcome = handle_alarm(write_alarm(), FakeShards(), FakeHotKeys([]), Limits(), offered)
    assert offered.calls == [] and outcome.grown == () and outcome.skipped == ()


def test_read_alarms_never_ask_for_the_offered_write_load() -> None:
    offered = FakeOfferedLoad({"DEPARTURES#JFK": 1e9})
    alarm = write_alarm(metric_names=(READ_KEY_RANGE_METRIC,))
    handle_alarm(alarm, FakeShards({"DEPARTURES#JFK": 2}), jfk_hot(), Limits(), offered)
    assert offered.calls == []


def test_a_read_key_range_alarm_plans_against_the_read_limit() -> None:
    shards = FakeShards()
    alarm = write_alarm(metric_names=(READ_KEY_RANGE_METRIC,))
    handle_alarm(alarm, shards, FakeHotKeys([HotKey("R#0", 2500.0, 0)]), Limits())
    # 2,500 RCU/s is over 3,000 x 0.8 = 2,400 RCU/s per shard: 2 shards (the WCU limit would say 4)
    assert shards.grow_calls == [("R", 2)]


def test_an_alarm_without_a_table_asks_about_the_configured_one() -> None:
    hot = FakeHotKeys([])
    handle_alarm(write_alarm(table_name=None), FakeShards(), hot, Limits(data_table="other"))
    assert hot.calls[0][0] == "other"


def test_a_key_that_fits_its_count_is_skipped_with_its_load() -> None:
    shards = FakeShards({"HOT": 4})
    outcome = handle_alarm(
        write_alarm(), shards, FakeHotKeys([HotKey("HOT#0", 900.0, 0)]), Limits()
    )
    assert shards.grow_calls == []
    assert outcome.skipped == (KeySkip("HOT", "900 units/s fits 4 shard(s)"),)


# --- what is not acted on ---------------------------------------------------------------
def test_an_ok_state_is_ignored() -> None:
    shards, hot = FakeShards(), jfk_hot()
    outcome = handle_alarm(write_alarm(state="OK"), shards, hot, Limits())
    assert outcome == AlarmOutcome(
        "dynashard-data-write-key-range-throttles", "OK", ignored="state is OK, not ALARM"
    )
    assert hot.calls == [] and shards.grow_calls == []


def test_non_key_range_throttling_does_not_grow() -> None:
    # Given an alarm on provisioned-throughput throttling (a table limit, not a hot key)
    alarm = write_alarm(metric_names=("WriteProvisionedThroughputThrottleEvents",))
    shards, hot = FakeShards(), jfk_hot()
    outcome = handle_alarm(alarm, shards, hot, Limits())
    # Then nothing is grown: more shards do not relieve a table limit
    assert outcome.ignored is not None and "not key-range" in outcome.ignored
    assert hot.calls == [] and shards.grow_calls == []


@pytest.mark.parametrize(
    ("metrics", "named"),
    [
        ((), "names no metric"),
        ((WRITE_KEY_RANGE_METRIC, "WriteThrottleEvents"), "['WriteThrottleEvents']"),
    ],
)
def test_an_alarm_not_only_about_key_range_throttling_grows_nothing_and_says_why(
    metrics: tuple[str, ...], named: str, caplog: pytest.LogCaptureFixture
) -> None:
    # Given an alarm in ALARM that names no metric, or mixes a key-range metric with
    # table-level throttling, and a hot key that is throttled
    shards, hot = FakeShards({"DEPARTURES#JFK": 2}), jfk_hot()
    # When it is handled
    with caplog.at_level(logging.WARNING, logger=scaling.__name__):
        outcome = handle_alarm(write_alarm(metric_names=metrics), shards, hot, Limits())
    # Then nothing is asked nor grown, and the reason is reported and logged
    assert hot.calls == [] and shards.grow_calls == []
    assert outcome.ignored is not None and named in outcome.ignored
    assert "ignored" in outcome.to_dict()
    assert any("alarm ignored" in r.getMessage() for r in caplog.records)


def test_a_notification_mixing_key_range_and_table_throttling_is_not_key_range() -> None:
    # Given a metric-math notification: key-range throttles plus the table's throttles
    def query(qid: str, name: str) -> dict[str, Any]:
        dims = [{"Name": "TableName", "Value": TABLE}]
        metric = {"Namespace": "AWS/DynamoDB", "MetricName": name, "Dimensions": dims}
        return {"Id": qid, "MetricStat": {"Metric": metric}}

    message = _notification(
        MetricName=None,
        Dimensions=[],
        Metrics=[
            {"Id": "e1", "Expression": "m1 + m2"},
            query("m1", WRITE_KEY_RANGE_METRIC),
            query("m2", "WriteThrottleEvents"),
        ],
    )
    alarm = alarm_from_notification(message)
    assert alarm.metric_names == (WRITE_KEY_RANGE_METRIC, "WriteThrottleEvents")
    assert alarm_kind(alarm) is None


def test_a_notification_of_another_namespace_is_not_key_range() -> None:
    alarm = alarm_from_notification(_notification(Namespace="MyApp"))
    assert alarm.metric_names == (f"MyApp/{WRITE_KEY_RANGE_METRIC}",)
    assert alarm_kind(alarm) is None


def test_the_cooldown_is_a_skip_not_an_error() -> None:
    shards = FakeShards(
        {"DEPARTURES#JFK": 2},
        grow_raises={"DEPARTURES#JFK": CooldownActiveError("DEPARTURES#JFK", 42.0)},
    )
    outcome = handle_alarm(write_alarm(), shards, jfk_hot(), Limits())
    assert outcome.grown == () and outcome.errors == ()
    jfk = next(s for s in outcome.skipped if s.key == "DEPARTURES#JFK")
    assert "cooldown" in jfk.reason


class RecordingLog:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any, bool]] = []

    def exception(self, msg: str, *, extra: Any = None) -> None:
        import sys

        self.calls.append((msg, extra, sys.exc_info()[0] is not None))


def test_a_failure_on_one_key_still_grows_the_others_and_is_listed() -> None:
    # Given two hot keys, the first of which cannot be grown
    hot = FakeHotKeys([HotKey("A#0", 0.0, 6000), HotKey("B#0", 0.0, 60)])
    shards = FakeShards(grow_raises={"A": MetadataError()})
    log = RecordingLog()
    # When the alarm is handled
    outcome = handle_alarm(write_alarm(), shards, hot, Limits(), log=log)
    # Then B was still grown, A is an error (skipped with the reason), logged with its
    # exception in hand
    assert shards.shards["B"] == 2
    assert outcome.errors == ("A",)
    assert outcome.skipped[0].key == "A" and outcome.skipped[0].reason.startswith("error: ")
    assert log.calls == [("growth failed", {"key": "A"}, True)]


def test_keys_grow_in_order_of_what_they_lack_not_of_what_they_offer() -> None:
    # Given a giant offered 60,000 WCU/s on 70 shards (it lacks nothing more than a
    # few shards) and a small key offered 2,500 WCU/s on one shard (it lacks 1,500)
    hot = FakeHotKeys([HotKey("GIANT#0", 800.0, 90), HotKey("SMALL#0", 1000.0, 9000)])
    offered = FakeOfferedLoad({"GIANT": 60_000.0 * 60, "SMALL": 2_500.0 * 60})
    shards = FakeShards({"GIANT": 70})
    # When the alarm is handled
    outcome = handle_alarm(write_alarm(), shards, hot, Limits(), offered)
    # Then the small key, which lacks more, is grown first; the giant after it
    assert shards.grow_calls == [("SMALL", 4), ("GIANT", 75)]
    assert [g.key for g in outcome.grown] == ["SMALL", "GIANT"]


def test_a_key_whose_metadata_cannot_be_read_is_an_error_and_the_others_grow() -> None:
    class Unreadable(FakeShards):
        def shard_info(self, key: str) -> ShardInfo:
            if key == "A":
                raise MetadataError()
            return super().shard_info(key)

    # Given two keys to grow, the first of which has metadata that cannot be read
    shards, log = Unreadable(), RecordingLog()
    demands: dict[str, tuple[float, scaling.Basis]] = {
        "A": (5000.0, "offered"),
        "B": (1500.0, "offered"),
    }
    # When they are grown
    grown, skipped, errors = scaling.grow_keys(demands, shards, Limits(), PARTITION_WCU_LIMIT, log)
    # Then B grows, A is an error, skipped with the reason and logged
    assert [g.key for g in grown] == ["B"] and errors == ["A"]
    assert skipped[0].key == "A" and skipped[0].reason.startswith("error: ")
    assert log.calls == [("growth failed", {"key": "A"}, True)]


def test_a_failure_is_logged_to_the_module_logger_by_default(
    caplog: pytest.LogCaptureFixture,
) -> None:
    shards = FakeShards(grow_raises={"A": DynashardError("boom")})
    with caplog.at_level(logging.ERROR, logger="dynashard.planning.scaling"):
        handle_alarm(write_alarm(), shards, FakeHotKeys([HotKey("A#0", 0.0, 6000)]), Limits())
    assert [r.getMessage() for r in caplog.records] == ["growth failed"]
    assert caplog.records[0].exc_info is not None


def test_keys_dynashard_does_not_write_are_reported_as_skipped() -> None:
    hot = FakeHotKeys([HotKey("DEPARTURES#JFK#2024-02-17", 0.0, 10)])
    shards = FakeShards()
    outcome = handle_alarm(write_alarm(), shards, hot, Limits())
    assert outcome.skipped == (
        KeySkip("DEPARTURES#JFK#2024-02-17", "not a partition key dynashard writes"),
    )
    assert shards.grow_calls == []


def test_the_library_settings_model_is_a_scaling_settings() -> None:
    settings = FunctionSettings(
        **{names.ENV_DATA_TABLE: TABLE, names.ENV_METADATA_TABLE: "dynashard-metadata"}
    )
    shards = FakeShards({"DEPARTURES#JFK": 2})
    handle_alarm(write_alarm(), shards, jfk_hot(), settings)
    assert shards.grow_calls == [("DEPARTURES#JFK", 3)]


# --- the report -------------------------------------------------------------------------
def test_the_report_keeps_the_functions_shape() -> None:
    outcome = AlarmOutcome(
        "a",
        "ALARM",
        grown=(KeyGrowth("K", 2, 3, 2000.54, "estimated"),),
        skipped=(KeySkip("E", "cooldown"),),
        errors=("X",),
    )
    assert outcome.to_dict() == {
        "alarm": "a",
        "state": "ALARM",
        "grown": [
            {"key": "K", "previous": 2, "current": 3, "units_per_s": 2000.5, "basis": "estimated"}
        ],
        "skipped": [{"key": "E", "reason": "cooldown"}],
        "errors": ["X"],
    }
    assert list(outcome.to_dict()) == ["alarm", "state", "grown", "skipped", "errors"]


def test_an_ignored_alarm_says_why_last() -> None:
    report = AlarmOutcome("a", "OK", ignored="state is OK, not ALARM").to_dict()
    assert list(report) == ["alarm", "state", "grown", "skipped", "errors", "ignored"]
    assert report["grown"] == [] and report["ignored"] == "state is OK, not ALARM"


def test_the_outcome_is_immutable() -> None:
    outcome = AlarmOutcome("a", "ALARM")
    with pytest.raises(AttributeError):
        outcome.state = "OK"  # type: ignore[misc]
    assert scaling.UNMAPPED_REASON == "not a partition key dynashard writes"
