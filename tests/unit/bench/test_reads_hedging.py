"""The reads benchmark's hedging section: its targets and its REPORT.md rendering."""

from __future__ import annotations

from typing import Any

from bench.reads import hedging_targets
from bench.report import reads_hedging


def run(reader: str, shards: int, p50: float, p99: float, rcu: float) -> dict[str, Any]:
    return {
        "reader": reader,
        "shards": shards,
        "window": "day",
        "p50_ms": p50,
        "p99_ms": p99,
        "rcu": rcu,
    }


def test_hedging_targets_compare_p99_with_unsharded_and_rcu_with_hedging_off() -> None:
    # Given an unsharded p99 of 20 ms, and at N = 32 a hedged p99 of 28 ms for 4 % more RCU
    runs = [
        run("unsharded", 1, 10.0, 20.0, 10.0),
        *(run("hedging-off", n, 15.0, 50.0, 25.0) for n in (1, 8, 64)),
        *(run("hedging-on", n, 15.0, 40.0, 27.0) for n in (1, 8, 64)),
        run("hedging-off", 32, 20.0, 60.0, 30.0),
        run("hedging-on", 32, 20.0, 28.0, 31.2),
    ]
    # When the targets are computed
    targets = hedging_targets(runs)
    # Then both are met, and each N has its row
    at = targets["by_shards"]["32"]
    assert at["p99_on_over_unsharded"] == 1.4 and at["rcu_overhead"] == 0.04
    assert targets["met"] == {
        "p99_at_32_hedged_within_1.5x_unsharded": True,
        "rcu_at_32_within_5pct": True,
    }
    assert list(targets["by_shards"]) == ["1", "8", "32", "64"]
    # And the report renders the table and judges the same two targets
    lines, report_targets = reads_hedging({"targets": targets, "hedger": {"hedges": 3}})
    assert any(line.startswith("| 32 |") for line in lines)
    assert [(t.name, t.met) for t in report_targets] == [
        ("hedged_p99_over_unsharded[day@32]", True),
        ("hedging_rcu_overhead[day@32]", True),
    ]


def test_a_missed_hedging_target_is_reported_missed() -> None:
    runs = [
        run("unsharded", 1, 10.0, 20.0, 10.0),
        run("hedging-off", 32, 20.0, 60.0, 30.0),
        run("hedging-on", 32, 20.0, 45.0, 33.0),
    ]
    targets = hedging_targets(runs)
    assert targets["met"] == {
        "p99_at_32_hedged_within_1.5x_unsharded": False,
        "rcu_at_32_within_5pct": False,
    }
    _, report_targets = reads_hedging({"targets": targets})
    assert [t.met for t in report_targets] == [False, False]
    assert all(t.margin for t in report_targets)
    assert reads_hedging({}) == ([], [])
