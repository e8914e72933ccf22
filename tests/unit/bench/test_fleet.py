"""The fleet simulation: a one-minute-scale version, and its policies are the library's own."""

from __future__ import annotations

from typing import Any

import pytest

from bench.fleet import sim
from bench.fleet.run import default_settings, run_all, targets
from dynashard.planning import shards, sweep


@pytest.fixture(scope="module")
def short_run() -> dict[str, Any]:
    # Given 500 keys for 10 emulated minutes (the flash crowd ramps over minute 3)
    return run_all(500, 10, 28, default_settings(), in_band=False)


def test_the_simulation_calls_the_librarys_planners_not_copies() -> None:
    assert sim.PLANNERS["sweep"] is sweep.sweep
    assert sim.PLANNERS["loads_by_logical_key"] is shards.loads_by_logical_key
    assert sim.PLANNERS["plan_shard_count"] is shards.plan_shard_count


def test_dynashards_decisions_follow_the_librarys_planning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given the library's shard-count planning patched to never grow a key
    from dynashard.planning import scaling

    monkeypatch.setattr(scaling, "plan_shard_count", lambda current, *a, **k: current)
    # When dynashard runs the Zipf workload
    patched = run_all(300, 3, 28, default_settings(), False, ["zipf"])
    ds = patched["zipf"]["policies"]["dynashard"]
    # Then nothing grows, so it writes no more than no sharding at all
    assert ds["scaler_runs_that_changed_n"] == 0
    assert ds["goodput"] == patched["zipf"]["policies"]["none"]["goodput"]


def test_goodput_oracle_then_dynashard_then_no_sharding_on_zipf(short_run: dict[str, Any]) -> None:
    zipf = short_run["zipf"]["policies"]
    assert zipf["oracle"]["goodput"] >= zipf["dynashard"]["goodput"] > zipf["none"]["goodput"]
    assert zipf["oracle"]["throttled_requests"] == 0
    assert zipf["dynashard"]["scaler_runs_that_changed_n"] > 0


def test_the_flash_crowd_key_stops_throttling_under_dynashard(short_run: dict[str, Any]) -> None:
    flash = short_run["flash"]["policies"]
    stop = flash["dynashard"]["time_to_stop_throttling_s"]
    assert flash["dynashard"]["keys_needing_more_than_one_partition"] == 1
    assert stop["still_throttling_at_end"] == 0 and stop["max"] is not None
    # ... while without sharding it never does
    assert flash["none"]["time_to_stop_throttling_s"]["still_throttling_at_end"] == 1


def test_the_report_states_its_workloads_and_seeds(short_run: dict[str, Any]) -> None:
    for body in short_run.values():
        assert body["seed"] == 28 and "Zipf 1.1" in body["workload"]
    found = targets(short_run)
    assert "zipf: goodput >= 0.99" in found and all("met" in t for t in found.values())


def test_the_same_seed_gives_the_same_figures() -> None:
    once = run_all(200, 2, 7, default_settings(), False, ["zipf"])
    again = run_all(200, 2, 7, default_settings(), False, ["zipf"])
    strip = {
        p: {k: v for k, v in f.items() if k != "wall_s"}
        for p, f in once["zipf"]["policies"].items()
    }
    strip2 = {
        p: {k: v for k, v in f.items() if k != "wall_s"}
        for p, f in again["zipf"]["policies"].items()
    }
    assert strip == strip2
