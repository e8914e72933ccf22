"""One scaler run (planning.sweep): ports are built only when there is work for them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from dynashard import names
from dynashard.lambda_kit.settings import FunctionSettings
from dynashard.planning import sweep
from dynashard.planning.scaling import Alarm, AlarmOutcome, HotKey
from dynashard.planning.sweep import ScalerRun

NOW = datetime(2024, 2, 17, 12, 0, tzinfo=UTC)
SETTINGS = FunctionSettings(**{names.ENV_DATA_TABLE: "data", names.ENV_METADATA_TABLE: "meta"})


def never() -> Any:
    pytest.fail("a port was built with nothing to do")


class HotKeys:
    """A hot-key source that reports the same keys for every window."""

    def __init__(self, *keys: HotKey) -> None:
        self.keys = list(keys)

    def hot_keys(self, *args: Any) -> list[HotKey]:
        return self.keys


def grow_from_one(facade: Any, key: str, alarm: Alarm, hot: HotKey, offered_load: Any) -> ScalerRun:
    """Set ``key`` to N = 1 at NOW, then run a sweep on ``alarm`` reporting ``hot``."""
    facade.metadata.clock = NOW.timestamp
    facade.set_shard_count(key, 1)
    return sweep.sweep(
        NOW,
        [alarm],
        port=lambda: facade,
        hot_keys=lambda: HotKeys(hot),
        offered_load=offered_load,
        history=None,
        shrinker=never,
        settings=SETTINGS,
    )


def sweep_when_cool(facade: Any, history: Any) -> ScalerRun:
    """Run an alarm-free sweep past the cooldown and the cool period, on ``history`` only."""
    later = NOW + timedelta(seconds=SETTINGS.cooldown_s + SETTINGS.shrink_cool_period_s)
    facade.metadata.clock = lambda: later.timestamp()
    return sweep.sweep(
        later,
        [],
        port=never,
        hot_keys=never,
        offered_load=never,
        history=history,
        shrinker=lambda: facade,
        settings=SETTINGS,
    )


def test_a_sweep_with_nothing_due_and_no_history_builds_no_port() -> None:
    run = sweep.sweep(
        NOW,
        [],
        port=never,
        hot_keys=never,
        offered_load=never,
        history=None,
        shrinker=never,
        settings=SETTINGS,
    )
    assert run.alarms == () and run.errors == [] and run.grown == []
    assert run.to_dict(False, NOW)["alarms"] == []
    assert run.to_dict(False, NOW)["sweep"] == NOW.isoformat()


def test_an_alarm_not_in_alarm_state_is_reported_as_ignored() -> None:
    built: list[str] = []

    def port(name: str) -> Any:
        built.append(name)
        return object()

    alarm = Alarm(name="throttles", state="OK", timestamp=NOW, window_s=60)
    run = sweep.sweep(
        NOW,
        [alarm],
        port=lambda: port("metadata"),
        hot_keys=lambda: port("hot keys"),
        offered_load=lambda: None,
        history=None,
        shrinker=never,
        settings=SETTINGS,
    )
    assert built == []  # an ignored alarm builds no port (no client at cold start)
    report = run.to_dict(True, NOW)
    assert report["alarm"] == "throttles" and "not ALARM" in report["ignored"]


def test_the_ports_are_built_once_for_the_first_alarm_that_can_grow_keys() -> None:
    # Given an ignored alarm, then two alarms in ALARM on key-range throttling
    built: list[str] = []

    def port(name: str) -> Any:
        built.append(name)
        return object()

    throttled = ("WriteKeyRangeThroughputThrottleEvents",)
    ok = Alarm(name="calm", state="OK", timestamp=NOW, window_s=60, metric_names=throttled)
    hot = [
        Alarm(name=f"hot{i}", state="ALARM", timestamp=NOW, window_s=60, metric_names=throttled)
        for i in (1, 2)
    ]
    handled: list[str] = []

    def handle(alarm: Alarm, *ports: Any, **_: Any) -> AlarmOutcome:
        handled.append(alarm.name)
        assert ports[:2] == (facade, source)
        return AlarmOutcome(alarm.name, alarm.state)

    # When the sweep runs
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sweep, "handle_alarm", handle)
        facade, source = object(), object()
        run = sweep.sweep(
            NOW,
            [ok, *hot],
            port=lambda: port("metadata") and facade,
            hot_keys=lambda: port("hot keys") and source,
            offered_load=lambda: None,
            history=None,
            shrinker=never,
            settings=SETTINGS,
        )

    # Then the ports are built once, and every alarm has its outcome, in order
    assert built == ["metadata", "hot keys"]
    assert handled == ["hot1", "hot2"]
    assert [a.alarm for a in run.alarms] == ["calm", "hot1", "hot2"]
    assert "not ALARM" in (run.alarms[0].ignored or "")


def test_a_key_grown_by_a_read_alarm_is_not_shrunk_straight_back(facade: Any) -> None:
    # Given the scaler's settings (cooldown 60 s) over moto, and a read key-range alarm
    # on a key that is read-hot and written a little
    from dynashard.core.throttling import READ_KEY_RANGE_METRIC
    from dynashard.planning.shrinking import LoadHistory

    class WritesOnly:
        """The write-load report: the key was offered 1 WCU/s at peak."""

        def peak_offered_wcu(self, start: datetime, end: datetime, period_s: int) -> LoadHistory:
            return LoadHistory(start, end, period_s, {"READS": 1.0})

    alarm = Alarm(
        name="reads",
        state="ALARM",
        timestamp=NOW,
        window_s=60,
        metric_names=(READ_KEY_RANGE_METRIC,),
    )
    grown = grow_from_one(facade, "READS", alarm, HotKey("READS#0", 3000.0, 500), lambda: None)
    assert [g.key for g in grown.grown] == ["READS"]
    # When the next sweeps run, past the cooldown, with only the write-load report
    run = sweep_when_cool(facade, WritesOnly())
    # Then the key keeps the count its reads needed
    assert run.shrink.shrunk == ()
    assert "grown for read" in run.shrink.kept[0].reason
    assert facade.shard_info("READS").number_of_shards == grown.grown[0].current
    assert facade.shard_info("READS").grown_for == frozenset({"read"})


def test_a_key_grown_on_the_write_load_report_shrinks_once_its_part_bounds_it_cool(
    facade: Any,
) -> None:
    # Given a write key-range alarm on a key the writers' report names (moto's table)
    from dynashard.core.throttling import WRITE_KEY_RANGE_METRIC
    from dynashard.planning.shrinking import LoadHistory

    class Offered:
        def offered_wcu(self, start: datetime, end: datetime) -> dict[str, float]:
            return {"TENANT#7": 240_000.0}  # 4,000 WCU/s over the alarm's minute

    class LeftOut:
        """Two parts' reports: neither names the key; each cut at 600 units (10 WCU/s)."""

        def peak_offered_wcu(self, start: datetime, end: datetime, period_s: int) -> LoadHistory:
            parts = [LoadHistory(start, end, period_s, {"OTHER": 10.0}, 10.0)] * 2
            return LoadHistory.from_parts(parts)

    alarm = Alarm(
        name="writes",
        state="ALARM",
        timestamp=NOW,
        window_s=60,
        metric_names=(WRITE_KEY_RANGE_METRIC,),
    )
    grown = grow_from_one(facade, "TENANT#7", alarm, HotKey("TENANT#7#0", 1000.0, 6000), Offered)
    # Then it grew on the offered basis, and the metadata table says so
    assert [(g.key, g.basis) for g in grown.grown] == [("TENANT#7", "offered")]
    assert facade.shard_info("TENANT#7").grown_for == frozenset({"write-load"})
    # When a sweep past the cool period finds it left out of its part's report
    run = sweep_when_cool(facade, LeftOut())
    # Then it shrank to what the bound needs, planned on the bound
    assert [s.to_dict() for s in run.shrink.shrunk] == [
        {
            "key": "TENANT#7",
            "previous": grown.grown[0].current,
            "current": 1,
            "peak_units_per_s": 10.0,
            "bounded": True,
        }
    ]


def test_a_key_grown_on_the_write_load_report_is_not_shrunk_on_an_empty_report(
    facade: Any,
) -> None:
    # Given a key grown on the write-load report's own figure (moto's table)
    from dynashard.core.throttling import WRITE_KEY_RANGE_METRIC
    from dynashard.planning.shrinking import LoadHistory

    class Offered:
        def offered_wcu(self, start: datetime, end: datetime) -> dict[str, float]:
            return {"TENANT#7": 240_000.0}

    class Empty:
        """Two parts' reports that name nobody (rules just renamed, say): no evidence."""

        def peak_offered_wcu(self, start: datetime, end: datetime, period_s: int) -> LoadHistory:
            return LoadHistory.from_parts([LoadHistory.from_report(start, end, period_s, {})] * 2)

    alarm = Alarm(
        name="writes",
        state="ALARM",
        timestamp=NOW,
        window_s=60,
        metric_names=(WRITE_KEY_RANGE_METRIC,),
    )
    grown = grow_from_one(facade, "TENANT#7", alarm, HotKey("TENANT#7#0", 1000.0, 6000), Offered)
    n = grown.grown[0].current
    assert n > 1 and facade.shard_info("TENANT#7").grown_for == frozenset({"write-load"})
    # When a sweep past the cooldown and the cool period reads only empty reports
    run = sweep_when_cool(facade, Empty())
    # Then the key keeps its count: an empty report is not "every key idle"
    assert run.shrink.shrunk == ()
    assert facade.shard_info("TENANT#7").number_of_shards == n
    report = run.to_dict(False, NOW)["shrink"]
    assert [k["key"] for k in report["kept"]] == ["TENANT#7"]
    assert "no evidence" in report["kept"][0]["reason"]
    assert report["no_evidence"] == ["the report names no contributor"] * 2
