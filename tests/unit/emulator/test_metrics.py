"""Per-minute counters and the Contributor-Insights-like top-N."""

from __future__ import annotations

import pytest

from sandbox.emulator.limits import Operation, Resource
from sandbox.emulator.metrics import CONSUMED_WCU, Metrics, minute_of

T = Resource("t")
W = Operation.WRITE


def test_counters_are_summed_per_minute() -> None:
    metrics = Metrics()
    metrics.add(CONSUMED_WCU, T, 2.0, ts=60.0)
    metrics.add(CONSUMED_WCU, T, 3.0, ts=119.9)
    metrics.add(CONSUMED_WCU, T, 4.0, ts=120.0)
    metrics.add(CONSUMED_WCU, Resource("t", "GSI1"), 100.0, ts=60.0)
    assert metrics.series(CONSUMED_WCU, T, 0, 600) == {60: 5.0, 120: 4.0}
    assert metrics.total(CONSUMED_WCU, T, 120, 180) == 4.0
    assert minute_of(119.9) == 60


def test_top_keys_rank_by_consumed_and_by_throttled() -> None:
    metrics = Metrics()
    for _ in range(3):
        metrics.record_key(W, T, "hot", 10.0, units=2.0)
    metrics.record_key(W, T, "warm", 10.0, units=1.0)
    metrics.record_key(W, T, "hot", 10.0, throttled=True)
    metrics.record_key(W, T, "cold", 10.0, throttled=True)
    metrics.record_key(W, T, "cold", 10.0, throttled=True)
    accessed = metrics.top_keys(W, T, 0, 60, by="accessed")
    assert [(r.key, r.consumed_units, r.requests) for r in accessed] == [
        ("hot", 6.0, 3),
        ("warm", 1.0, 1),
    ]
    throttled = metrics.top_keys(W, T, 0, 60, by="throttled", n=1)
    assert [(r.key, r.throttled_events) for r in throttled] == [("cold", 2)]


def test_contributor_modes() -> None:
    metrics = Metrics()
    metrics.record_key(W, T, "k", 0.0, units=1.0)
    assert set(metrics.contributors("THROTTLED_KEYS", W, T, 0, 60)) == {"most_throttled"}
    views = metrics.contributors("ACCESSED_AND_THROTTLED_KEYS", W, T, 0, 60)
    assert [r.key for r in views["most_accessed"]] == ["k"]
    with pytest.raises(ValueError, match="unknown"):
        metrics.contributors("ALL", W, T, 0, 60)  # type: ignore[arg-type]


def test_old_minutes_are_dropped() -> None:
    metrics = Metrics(retention_minutes=2)
    metrics.add(CONSUMED_WCU, T, 1.0, ts=0.0)
    metrics.add(CONSUMED_WCU, T, 1.0, ts=600.0)
    assert metrics.series(CONSUMED_WCU, T, 0, 1000) == {600: 1.0}


def test_throttle_reasons_are_totals_that_outlive_the_minutes() -> None:
    metrics = Metrics(retention_minutes=1)
    metrics.add_throttle_reason("TableWriteKeyRangeThroughputExceeded")
    metrics.add_throttle_reason("IndexWriteKeyRangeThroughputExceeded", 2)
    metrics.add_throttle_reason("TableWriteKeyRangeThroughputExceeded")
    metrics.add(CONSUMED_WCU, T, 1.0, ts=6000.0)  # rolls every earlier minute away
    assert metrics.throttle_reasons() == {
        "IndexWriteKeyRangeThroughputExceeded": 2,
        "TableWriteKeyRangeThroughputExceeded": 2,
    }
    metrics.reset()
    assert metrics.throttle_reasons() == {}
