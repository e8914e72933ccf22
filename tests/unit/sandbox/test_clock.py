"""The accelerated clock: emulated time at ``speed`` times wall time."""

from __future__ import annotations

import pytest

from sandbox.clock import AcceleratedClock

T0 = 1_800_000_000.0  # a minute boundary (divisible by 60)


def test_accelerated_clock_runs_speed_times_faster() -> None:
    wall = [100.0]
    clock = AcceleratedClock(speed=10.0, start=T0, monotonic=lambda: wall[0])
    assert clock() == T0
    wall[0] += 6.0
    assert clock() == T0 + 60.0
    assert clock.wall_seconds(60.0) == 6.0
    with pytest.raises(ValueError):
        AcceleratedClock(speed=0)
