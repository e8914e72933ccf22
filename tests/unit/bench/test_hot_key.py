"""The hot-key benchmark's pure parts: the clock speed per load and the targets."""

from __future__ import annotations

from typing import Any

import pytest

from bench.hot_key import (
    BACKOFF_BASE_S,
    BACKOFF_CAP_S,
    LIMIT,
    MAX_WALL_EVENTS_PER_S,
    SPEED,
    speed_for,
    targets,
    writer_backoff,
)


@pytest.mark.parametrize("k", [1, 4, 16, 64, 256])
def test_a_run_never_offers_more_events_per_wall_second_than_the_cap(k: int) -> None:
    speed = speed_for(k)
    assert speed <= SPEED
    assert k * LIMIT * speed <= MAX_WALL_EVENTS_PER_S + 1e-9
    # and the writers' back-off stays the same in emulated seconds
    backoff = writer_backoff(speed)
    assert backoff.base_s * speed == pytest.approx(BACKOFF_BASE_S)
    assert backoff.cap_s * speed == pytest.approx(BACKOFF_CAP_S)


def run(k: int, goodput: float | None, scaler_runs: int, final: int, needed: int) -> dict[str, Any]:
    return {
        "mode": "adaptive",
        "load_factor": k,
        "goodput_ratio": goodput,
        "scaler_runs": scaler_runs,
        "shards_final": final,
        "shards_needed": needed,
    }


def test_targets_hold_each_load_factor_to_goodput_one_run_and_overgrowth() -> None:
    runs = [
        run(16, 0.985, 1, 23, 20),
        run(64, 0.94, 1, 121, 80),
        {**run(64, 0.1, 0, 1, 80), "mode": "naive"},  # not adaptive: ignored
    ]
    got = {name: t["met"] for name, t in targets(runs).items()}
    assert got == {
        "adaptive_goodput_k16": True,
        "adaptive_scaler_runs_k16": True,
        "adaptive_shards_over_needed_k16": True,
        "adaptive_goodput_k64": False,  # 0.94 < 0.95
        "adaptive_scaler_runs_k64": True,
        "adaptive_shards_over_needed_k64": False,  # 121 / 80 > 1.5
    }
    assert targets(runs)["adaptive_shards_over_needed_k64"]["measured"] == 1.512


def test_two_scaler_runs_or_too_few_shards_miss_and_absent_factors_are_left_out() -> None:
    got = targets([run(16, None, 2, 19, 20)])
    assert set(got) == {
        "adaptive_goodput_k16",
        "adaptive_scaler_runs_k16",
        "adaptive_shards_over_needed_k16",
    }
    assert not any(t["met"] for t in got.values())
