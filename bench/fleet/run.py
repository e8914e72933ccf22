"""``python -m bench fleet``: every workload under every policy, figures and targets, JSON."""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.fleet.sim import POLICIES, STATIC_N, Policy, Run, simulate, workload
from bench.machine import load_average, machine, print_targets, utc_now, write_result
from dynashard import names
from dynashard.lambda_kit.settings import FunctionSettings

RESULT = Path(__file__).resolve().parents[1] / "results" / "fleet.json"
WORKLOADS = ("zipf", "flash")


def deployed_settings() -> tuple[FunctionSettings, bool]:
    """Return the scaler's settings as the stack deploys them, and in-band growth (writers)."""
    from sandbox.env_vars import deployed_in_band_growth, local_twin

    twin = local_twin()
    env = twin.function_environment(twin.function_spec("functions.scaler.app:handler").logical_id)
    return FunctionSettings.model_validate(env), deployed_in_band_growth()


def default_settings() -> FunctionSettings:
    """Return the library's default settings (for tests that must not synthesize the stack)."""
    return FunctionSettings.model_validate(
        {names.ENV_DATA_TABLE: "dynashard-data", names.ENV_METADATA_TABLE: "dynashard-shards"}
    )


def _pct(values: list[float], q: float) -> float | None:
    return None if not values else round(float(np.percentile(values, q)), 1)


def figures(run: Run, seconds: int, oracle: Run | None) -> dict[str, Any]:
    """Return one run's figures (shard-seconds also counted above one shard per key)."""
    base = float(len(run.keys) * seconds)
    extra = run.shard_seconds - base
    oracle_extra = None if oracle is None else oracle.shard_seconds - base
    offered = float(run.offered.sum())
    needing = np.flatnonzero(run.peak > run.limit)
    recovery: list[float] = []
    never = 0
    for i in needing:
        if run.last_throttled[i] < 0:
            recovery.append(0.0)
        elif run.last_throttled[i] >= seconds - 1:
            never += 1
        else:
            recovery.append(float(run.last_throttled[i] + 1 - run.first_need[i]))
    streaks = run.max_streak[needing] if len(needing) else np.zeros(1)
    minutes = max(1, len(run.ci_calls_per_minute))
    return {
        "goodput": round(float(run.written.sum()) / offered, 4) if offered else None,
        "offered_wcu": round(offered),
        "written_wcu": round(float(run.written.sum())),
        "lost_wcu": round(run.lost),
        "throttled_requests": round(run.throttled_requests),
        "keys_needing_more_than_one_partition": len(needing),
        "time_to_stop_throttling_s": {
            "p50": _pct(recovery, 50),
            "p99": _pct(recovery, 99),
            "max": max(recovery) if recovery else None,
            "still_throttling_at_end": never,
        },
        "longest_throttled_streak_s": int(streaks.max()),
        "keys_throttled_over_180s_in_a_row": int((streaks > 180).sum()),
        "shard_seconds": round(run.shard_seconds),
        "shard_seconds_vs_oracle": (
            round(run.shard_seconds / oracle.shard_seconds, 3) if oracle else None
        ),
        "extra_shard_seconds_vs_oracle": (round(extra / oracle_extra, 3) if oracle_extra else None),
        "scaler_invocations": run.invocations,
        "scaler_runs_that_changed_n": len(run.scaler_runs),
        "insights_calls_per_minute": {
            "mean": round(sum(run.ci_calls_per_minute) / minutes, 2),
            "max": max(run.ci_calls_per_minute, default=0),
        },
        "metadata_table": {"reads": run.store.reads, "writes": run.store.writes},
    }


def run_all(
    keys: int,
    minutes: float,
    seed: int,
    settings: FunctionSettings,
    in_band: bool,
    workloads: Sequence[str] = WORKLOADS,
    delay_minutes: int = 1,
) -> dict[str, Any]:
    """Run every workload under every policy; return the result document's body."""
    seconds = int(minutes * 60)
    out: dict[str, Any] = {}
    for name in workloads:
        load = workload(name, keys, seed, settings.partition_wcu)
        runs: dict[str, Run] = {}
        walls: dict[str, float] = {}
        order: list[Policy] = ["oracle", "none", "static", "blog", "dynashard"]
        for policy in order:
            t0 = time.perf_counter()
            runs[policy] = simulate(policy, load, seconds, settings, in_band, delay_minutes)
            walls[policy] = round(time.perf_counter() - t0, 1)
        oracle = runs["oracle"]
        out[name] = {
            "workload": load.description,
            "seed": seed,
            "policies": {
                p: {**figures(runs[p], seconds, oracle), "wall_s": walls[p]} for p in POLICIES
            },
        }
    return out


def targets(result: dict[str, Any]) -> dict[str, Any]:
    """Return the issue's targets for dynashard, met or missed and by how much."""
    found: dict[str, Any] = {}
    for name, body in result.items():
        pol = body["policies"]
        ds = pol["dynashard"]
        found[f"{name}: goodput >= 0.99"] = {
            "met": (ds["goodput"] or 0) >= 0.99,
            "value": ds["goodput"],
        }
        found[f"{name}: no key needing > 1 partition throttled > 180 s in a row"] = {
            "met": ds["keys_throttled_over_180s_in_a_row"] == 0,
            "value": ds["longest_throttled_streak_s"],
            "keys_over": ds["keys_throttled_over_180s_in_a_row"],
        }
        found[f"{name}: shard-seconds <= 1.25 x oracle"] = {
            "met": (ds["shard_seconds_vs_oracle"] or 99) <= 1.25,
            "value": ds["shard_seconds_vs_oracle"],
            "above_one_shard_per_key": ds["extra_shard_seconds_vs_oracle"],
        }
        others = [p for p in ("none", "static", "blog") if p in pol]
        ahead = all(
            ds["goodput"] > pol[p]["goodput"]
            or (
                ds["goodput"] >= pol[p]["goodput"] and ds["shard_seconds"] < pol[p]["shard_seconds"]
            )
            for p in others
        )
        found[
            f"{name}: ahead of none/static/blog on goodput or on shard-seconds at equal goodput"
        ] = {"met": ahead}
    return found


def main(argv: Sequence[str] | None = None) -> int:
    """Run the fleet simulation and write ``bench/results/fleet.json``."""
    ap = argparse.ArgumentParser(prog="python -m bench fleet", description=__doc__)
    ap.add_argument("--keys", type=int, default=10_000)
    ap.add_argument("--minutes", type=float, default=60.0)
    ap.add_argument("--seed", type=int, default=28)
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--delay-minutes", type=int, default=1, help="CloudWatch publication delay")
    ap.add_argument("--output", type=Path, default=RESULT)
    ns = ap.parse_args(argv)
    load_start, t0 = load_average(), time.perf_counter()
    settings, in_band = deployed_settings()
    result = run_all(
        ns.keys,
        ns.minutes,
        ns.seed,
        settings,
        in_band,
        ns.workloads.split(","),
        ns.delay_minutes,
    )
    found = targets(result)
    wall = time.perf_counter() - t0
    doc = {
        "benchmark": "fleet",
        "date": utc_now(),
        "machine": machine(load_start),
        "wall_s": round(wall, 1),
        "parameters": {
            "keys": ns.keys,
            "minutes": ns.minutes,
            "seed": ns.seed,
            "delay_minutes": ns.delay_minutes,
            "static_n": STATIC_N,
            "in_band_growth_as_deployed": in_band,
            "scaler_settings": settings.model_dump(
                include={
                    "partition_wcu",
                    "target_utilization",
                    "cooldown_s",
                    "metadata_cache_ttl_s",
                    "write_max_attempts",
                    "max_shards",
                    "shrink_cool_period_s",
                }
            ),
        },
        "workloads": result,
        "targets": found,
    }
    write_result(ns.output, doc)
    for name, body in result.items():
        print(name, body["workload"])
        for policy, fig in body["policies"].items():
            print(
                f"  {policy:10s} goodput {fig['goodput']}  throttled {fig['throttled_requests']}"
                f"  stop {fig['time_to_stop_throttling_s']}  shard-s/oracle "
                f"{fig['shard_seconds_vs_oracle']}"
                f" (above 1/key {fig['extra_shard_seconds_vs_oracle']})"
                f"  invocations {fig['scaler_invocations']}"
                f"  CI/min {fig['insights_calls_per_minute']}  wall {fig['wall_s']} s"
            )
    print_targets(found, ns.output, wall)
    return 0
