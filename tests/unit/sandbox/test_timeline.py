"""The second act's timeline: rates, recovery time, report, sampler and chart."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from sandbox.scenarios.demo.timeline import (
    Sample,
    Timeline,
    rate_row,
    time_to_recover_s,
    timeline_report,
    write_chart,
)

KR = "TableWriteKeyRangeThroughputExceeded"


def row(t: float, written: float, throttled: float, offered: float | None = None) -> dict[str, Any]:
    return {
        "t_s": t,
        "offered_per_s": written + throttled if offered is None else offered,
        "written_per_s": written,
        "throttles_per_s": {KR: throttled},
        "key_range_throttles_per_s": throttled,
        "shards": {"K": 1 if throttled else 4},
    }


def test_a_rate_row_is_the_difference_of_two_samples_per_second() -> None:
    a = Sample(1.0, offered=100, written=50, throttles={KR: 10}, shards={"K": 1})
    b = Sample(3.0, offered=500, written=450, throttles={KR: 30, "X": 4}, shards={"K": 2})
    r = rate_row(a, b)
    assert (r["offered_per_s"], r["written_per_s"]) == (200.0, 200.0)
    assert r["throttles_per_s"] == {KR: 10.0, "X": 2.0}
    assert r["key_range_throttles_per_s"] == 10.0
    assert r["shards"] == {"K": 2}


def test_recovery_is_where_writes_keep_up_with_the_offered_load_for_good() -> None:
    # throttled from t=1 to t=5 (written 100 of 300 offered), then keeping up
    rows = [row(t, 100, 40, offered=300) for t in range(1, 6)]
    rows += [row(t, 300, 0) for t in range(6, 40)]
    # the last 10 s window that fell short ends at t=14 (it still holds t=5)
    assert time_to_recover_s(rows, window_s=10) == 13.0


def test_a_backlog_draining_under_throttling_still_counts_as_recovered() -> None:
    rows = [row(t, 100, 40, offered=300) for t in range(1, 6)]
    rows += [row(t, 320, 20, offered=300) for t in range(6, 40)]
    # the redeliveries written on top make up for the short t=5 one window sooner
    assert time_to_recover_s(rows, window_s=10) == 12.0


def test_a_batch_in_flight_at_a_window_end_is_within_the_default_window() -> None:
    # Given a refused batch at t=1, then batches of 60 offered every 3 s (t=4, 7, ...)
    # and each written the second after: every window that ends on an arrival holds one
    # batch not yet written
    rows = [row(1, 0, 60)]
    rows += [
        row(t, 60 if t % 3 == 2 and t > 2 else 0, 0, offered=60 if t % 3 == 1 else 0)
        for t in range(2, 90)
    ]
    # Then a 10 s sum falls short at every arrival (180 written of 240 offered)
    assert time_to_recover_s(rows, window_s=10) is None
    # And the default 30 s sum keeps up once the refused batch has left it: the last
    # short window, (1, 31], holds 10 arrivals and 9 writes
    assert time_to_recover_s(rows) == 30.0


def test_the_report_sums_over_30_emulated_seconds_whatever_the_speed() -> None:
    # Given the rows of the recovery test above, in wall seconds
    rows = [row(t, 100, 40, offered=300) for t in range(1, 6)]
    rows += [row(t, 300, 0) for t in range(6, 40)]
    # When the act ran at 3 emulated seconds per wall second, its 30 emulated s window
    # is 10 wall s: the recovery is the 10 s window's, not the 30 s one's
    assert timeline_report(rows, {KR: 200}, speed=3.0)["time_to_recover_s"] == 13.0
    assert timeline_report(rows, {KR: 200})["time_to_recover_s"] == time_to_recover_s(rows)
    assert time_to_recover_s(rows) != 13.0


def test_no_throttling_or_no_end_of_it_has_no_recovery_time() -> None:
    assert time_to_recover_s([row(t, 300, 0) for t in range(10)]) is None
    assert time_to_recover_s([row(t, 50, 40) for t in range(10)]) is None


def test_a_drain_after_the_offered_load_ends_is_no_recovery() -> None:
    rows = [row(t, 100, 40, offered=300) for t in range(1, 21)]
    rows += [row(t, 80, 0, offered=0) for t in range(21, 31)]
    assert time_to_recover_s(rows, window_s=10) is None


def test_timeline_report_sums_reasons_and_splits_the_written_rate() -> None:
    rows = [row(1, 50, 40), row(2, 60, 40)] + [row(t, 300, 0) for t in range(3, 15)]
    report = timeline_report(rows, {KR: 80, "TableWriteProvisionedThroughputExceeded": 3})
    assert report["throttle_events"] == {
        KR: 80,
        "TableWriteProvisionedThroughputExceeded": 3,
        "key_range": 80,
        "total": 83,
    }
    # the 10 s sums fall short of 0.95 x offered up to t=6 (1,310 of 1,390 written)
    assert report["time_to_recover_s"] == 5.0
    assert report["written_per_s_while_throttled"] == pytest.approx((50 + 60 + 4 * 300) / 6, 0.01)
    assert report["written_per_s_after_recovery"] == 300.0
    assert report["timeline"] == rows


def test_rate_rows_carry_each_keys_offered_and_written_rates() -> None:
    a = Sample(0.0, 0, 0, {}, {}, keys={"A": (0, 0)})
    b = Sample(2.0, 10, 8, {}, {}, keys={"A": (6, 4), "B": (4, 4)})
    assert rate_row(a, b)["keys"] == {
        "A": {"offered_per_s": 3.0, "written_per_s": 2.0},
        "B": {"offered_per_s": 2.0, "written_per_s": 2.0},
    }


def test_timeline_samples_in_a_thread_and_reports_each_row() -> None:
    state = {"n": 0}
    seen: list[dict[str, Any]] = []

    def counts() -> tuple[int, int]:
        state["n"] += 10
        return state["n"], state["n"]

    timeline = Timeline(
        counts, lambda: {KR: 1}, lambda: {"K": 1}, interval_s=0.05, on_sample=seen.append
    )
    with timeline:
        time.sleep(0.3)
    assert len(timeline.samples) >= 3
    assert len(timeline.rows()) == len(timeline.samples) - 1
    assert seen == timeline.rows()
    assert all(r["written_per_s"] > 0 for r in timeline.rows())


def test_the_chart_is_a_png(tmp_path: Path) -> None:
    rows = [row(1, 50, 40), row(2, 300, 0)]
    for r in rows:
        r["keys"] = {"K": {"offered_per_s": 90.0, "written_per_s": r["written_per_s"]}}
    path = write_chart(
        rows, tmp_path / "chart.png", title="t", growths=[{"at_s": 1.5}], targets={"K": 4}
    )
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
