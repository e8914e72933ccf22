"""The growth-config benchmark's pure parts: the second act's key figures and the rule."""

from __future__ import annotations

from typing import Any

from bench.growth_config import better, key_figures, scaler_rounds, shard_steps


def mode(
    act_met: int,
    recovery: float | None,
    throttles: int,
    hot_met: int = 6,
    fraction: float = 0.1,
    kept: bool = True,
) -> dict[str, Any]:
    return {
        "act2": {
            "targets_met": act_met,
            "recovery_emulated_s": recovery,
            "throttle_events": {"key_range": throttles},
            "machine": {"kept_schedule": kept},
        },
        "hot_key": {"targets_met": hot_met, "mean_throttled_fraction": fraction},
    }


def test_more_second_act_targets_met_wins_before_recovery_time() -> None:
    verdict = better({"in_band_off": mode(4, 140.0, 900), "in_band_on": mode(3, 60.0, 100)})
    assert verdict["mode"] == "in_band_off"
    assert verdict["decided_by"] == "second-act targets met"


def test_then_hot_key_targets_then_recovery_then_throttles() -> None:
    assert better({"a": mode(4, 90.0, 10, hot_met=5), "b": mode(4, 150.0, 10)})["mode"] == "b"
    faster = better({"a": mode(4, 90.0, 900), "b": mode(4, 120.0, 100)})
    assert (faster["mode"], faster["decided_by"]) == ("a", "second-act recovery, emulated s")
    # never recovered is worse than any recovery
    assert better({"a": mode(4, None, 10), "b": mode(4, 300.0, 900)})["mode"] == "b"
    quieter = better({"a": mode(4, 90.0, 900), "b": mode(4, 90.0, 100)})
    assert (quieter["mode"], quieter["decided_by"]) == ("b", "second-act key-range throttle events")


def test_a_late_schedule_or_a_full_tie_chooses_no_mode() -> None:
    late = better({"a": mode(4, 90.0, 10, kept=False), "b": mode(2, None, 900)})
    assert late["mode"] is None and late["decided_by"] == "schedule"
    assert better({"a": mode(4, 90.0, 10), "b": mode(4, 90.0, 10)})["mode"] is None


def test_key_figures_count_scaler_rounds_to_n_star_and_who_grew_each_step() -> None:
    alarms = [
        {"alarm": "w", "via": "alarm", "at_s": 40.0, "grown": [{"key": "K", "current": 4}]},
        {"alarm": "i", "via": "alarm", "at_s": 40.1, "grown": []},  # same round
        {"alarm": "w", "via": "sweep", "at_s": 70.0, "grown": [{"key": "K", "current": 6}]},
        {"alarm": "i", "via": "sweep", "at_s": 70.0, "grown": []},  # same sweep
        {"alarm": "w", "via": "sweep", "at_s": 100.0, "grown": []},
    ]
    schedule = {
        "target_shards": 6,
        "shards_reached": [
            {"count": 1, "since_s": 0.0},
            {"count": 2, "since_s": 20.0},  # no scaler run reported it: a writer
            {"count": 4, "since_s": 40.5},
            {"count": 6, "since_s": 70.5},
        ],
        "reached_target_at_s": 70.5,
        "max_shards": 6,
    }
    assert scaler_rounds(alarms, speed=2.0) == [40.0, 70.0, 100.0]
    got = key_figures("K", schedule, alarms, speed=2.0)
    assert got["scaler_rounds_to_n_star"] == 2
    assert got["max_n_over_n_star"] == 1.0
    assert got["reached_n_star_at_emulated_s"] == 141.0
    assert [g["by"] for g in got["grown_by"]] == ["in_band", "scaler", "scaler"]


def test_a_key_writers_grew_to_n_star_before_the_first_alarm_took_no_round() -> None:
    alarms = [{"alarm": "w", "via": "alarm", "at_s": 40.0, "grown": []}]
    schedule = {
        "target_shards": 2,
        "shards_reached": [{"count": 1, "since_s": 0.0}, {"count": 2, "since_s": 3.0}],
        "reached_target_at_s": 3.0,
        "max_shards": 2,
    }
    got = key_figures("K", schedule, alarms, speed=2.0)
    assert got["scaler_rounds_to_n_star"] == 0
    assert got["grown_by"] == [{"count": 2, "at_emulated_s": 6.0, "by": "in_band"}]
    # writers got it there 3 emulated s into the first round: that round; 40 s in: the next
    assert (
        key_figures("K", {**schedule, "reached_target_at_s": 41.5}, alarms, 2.0)[
            "scaler_rounds_to_n_star"
        ]
        == 1
    )
    assert (
        key_figures("K", {**schedule, "reached_target_at_s": 60.0}, alarms, 2.0)[
            "scaler_rounds_to_n_star"
        ]
        == 2
    )
    never = {**schedule, "reached_target_at_s": None, "target_shards": 4}
    assert key_figures("K", never, alarms, speed=2.0)["scaler_rounds_to_n_star"] is None


def test_shard_steps_keep_only_changes() -> None:
    timeline = {"t_s": [0, 10, 20, 30], "shards": [1, 1, 2, 2]}
    assert shard_steps(timeline) == [{"t_s": 0, "shards": 1}, {"t_s": 20, "shards": 2}]


def test_each_mode_states_its_in_band_setting_to_the_demo() -> None:
    # never the stack's default: a mode that left it out would measure whatever the
    # stack deploys, and both modes could end up the same
    from pathlib import Path

    from bench.growth_config import act2_command

    on = act2_command(True, Path("r.json"), None)
    off = act2_command(False, Path("r.json"), 2.0)
    assert on[on.index("--in-band-growth") + 1] == "on"
    assert off[off.index("--in-band-growth") + 1] == "off"
    assert off[-2:] == ["--speed", "2"]
