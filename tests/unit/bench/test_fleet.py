"""The fleet simulation: a one-minute-scale version, and its policies are the library's own."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bench import charts
from bench.fleet import sim
from bench.fleet.run import default_settings, run_all, targets
from dynashard.cloudwatch.insights import InsightRuleOfferedLoad
from dynashard.dynamodb.shard_metadata import ShardMetadata
from dynashard.planning import shards, sweep


@pytest.fixture(scope="module")
def short_run() -> dict[str, Any]:
    # Given 500 keys for 10 emulated minutes (the flash crowd ramps over minute 3)
    return run_all(500, 10, 28, default_settings(), in_band=False, workloads=["zipf", "flash"])


def test_the_simulation_calls_the_librarys_planners_not_copies() -> None:
    assert sim.PLANNERS["sweep"] is sweep.sweep
    assert sim.PLANNERS["loads_by_logical_key"] is shards.loads_by_logical_key
    assert sim.PLANNERS["plan_shard_count"] is shards.plan_shard_count
    # and the write-load rules are read by the library's adapter, part by part
    assert sim.OFFERED_LOAD is InsightRuleOfferedLoad


def test_cooled_keys_shrink_on_their_parts_bound_when_the_rule_is_split() -> None:
    # Given churn over 3,000 keys: cohorts of 30 at 4 x a partition, so about 150 keys
    # are busy within one 30-minute cool period, more than one report of 100 can name
    settings = default_settings()
    load = sim.workload("churn", 3000, 28, 1000.0, coarse_step_s=10, coarse_after_s=0)
    first_cohort = load.cohorts[0]  # type: ignore[index]
    runs = {
        parts: sim.simulate(
            "dynashard",
            load,
            3600,
            settings,
            False,
            write_load=sim.WriteLoadRules.of_library(parts),
        )
        for parts in (1, 8)
    }
    # Then with one rule no cooled key shrinks (left out of the report, its bound is a
    # hot key's total); with 8 parts the first cohort, cool since minute 20, is back at
    # one shard by the hour, shrunk on its part's bound
    one, eight = runs[1], runs[8]
    assert sum(r.get("shrunk_on_bound", 0) for r in one.scaler_runs) == 0
    assert (one.n_meta[first_cohort] > 1).all()
    assert sum(r.get("shrunk_on_bound", 0) for r in eight.scaler_runs) >= len(first_cohort) // 2
    assert (eight.n_meta[first_cohort] == 1).all()
    assert eight.shard_seconds < one.shard_seconds
    # ... at the price of one report a part: a sweep reads 8 reports, not 1
    assert max(eight.ci_calls_per_minute) > max(one.ci_calls_per_minute)


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


def test_throttled_writers_reread_counts_as_the_librarys_metadata_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given the Zipf workload's hottest keys, under the library's refresh after throttling
    settings = default_settings()
    load = sim.workload("zipf", 300, 28, settings.partition_wcu)
    refreshed = sim.simulate("dynashard", load, 300, settings, False)
    # When the library's metadata never lets a throttled writer reread early
    monkeypatch.setattr(sim, "ShardMetadata", partial(ShardMetadata, throttle_refresh_s=1e9))
    cached = sim.simulate("dynashard", load, 300, settings, False)
    # Then the hottest key throttles longer, by up to the cache lifetime less the interval
    lag = int(cached.max_streak.max() - refreshed.max_streak.max())
    ttl, refresh = settings.metadata_cache_ttl_s, refreshed.meta.throttle_refresh_s
    assert 10 <= lag <= ttl - refresh


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


def test_churn_makes_a_new_one_percent_hot_every_ten_minutes() -> None:
    # Given the churn workload over 1,000 keys
    load = sim.workload("churn", 1000, 28, 1000.0)
    hot = [set(map(int, (load.offered(t, 1000.0) >= 4000.0).nonzero()[0])) for t in (0, 600, 1200)]
    # Then each 10 minutes adds a cohort of 10 keys (1 %) at 4 x a partition, never hot
    # before, and a cohort stays hot for 20 minutes (two at once)
    assert len(hot[0]) == 10 and len(hot[1]) == 20 and len(hot[2]) == 20
    assert hot[0] < hot[1] and not hot[0] & hot[2]
    assert hot[1] - hot[0] <= hot[2]


def test_the_diurnal_peak_is_five_times_its_trough_and_the_hottest_64x() -> None:
    load = sim.workload("diurnal", 1000, 28, 1000.0, span_s=86_400)
    trough, peak = load.offered(0, 1000.0), load.offered(43_200, 1000.0)
    assert peak.max() == pytest.approx(64_000.0)
    assert (peak / trough) == pytest.approx(np.full(1000, 5.0))


def test_the_backfill_runs_one_key_at_20x_within_its_span() -> None:
    load = sim.workload("backfill", 1000, 28, 1000.0, span_s=86_400)
    start, end = load.backfill_span
    key = load.backfill_key
    assert (start, end) == (600, 86_400 - 3600)
    during = [load.offered(t, 1000.0)[key] for t in range(start, end, 3600)]
    assert all(18_000.0 <= v <= 22_000.0 for v in during)
    assert load.offered(end, 1000.0)[key] == load.base[key] < 1000.0


def test_a_coarse_step_stands_for_as_many_equal_seconds() -> None:
    # Given the Zipf workload under static N (nothing changes over time), stepped every
    # second and every 60 s after the first minute
    settings = default_settings()
    fine = sim.workload("zipf", 300, 28, 1000.0, coarse_after_s=0)
    coarse = sim.workload("zipf", 300, 28, 1000.0, coarse_step_s=60, coarse_after_s=60)
    one = sim.simulate("static", fine, 600, settings, in_band=False)
    sixty = sim.simulate("static", coarse, 600, settings, in_band=False)
    # Then they offer and write the same units, within the retries of the step boundaries
    assert sixty.offered.sum() == pytest.approx(one.offered.sum())
    assert sixty.written.sum() == pytest.approx(one.written.sum(), rel=0.01)
    assert sixty.shard_seconds == one.shard_seconds


def test_the_backfill_keys_count_settles_near_its_need_without_flapping() -> None:
    # Given a backfill of 6 emulated hours (5 h at 20 x), 200 keys, 60 s steps after 1 h
    out = run_all(200, 360, 28, default_settings(), False, ["backfill"], coarse_step_s=60)
    found = targets(out)
    ds = out["backfill"]["policies"]["dynashard"]["watched_key"]
    # Then dynashard's N settles between the oracle's counts and does not change again
    assert found["backfill: N settles near the need and does not flap"]["met"], ds
    # ... and shrinks once the backfill is over
    assert ds["n_end_of_run"] < ds["n_end_of_load"]


def test_the_chart_is_drawn_from_the_result(short_run: dict[str, Any], tmp_path: Path) -> None:
    # Given a result document of the short run
    doc = {"benchmark": "fleet", "date": "d", "parameters": {"seed": 28}, "workloads": short_run}
    path = tmp_path / "fleet.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    # When the charts are drawn, Then the fleet's PNG is written beside it
    assert charts.render(path) == tmp_path / "fleet.png"
    assert (tmp_path / "fleet.png").stat().st_size > 10_000
