"""The acts: the replay on fixed shard counts, then hot partitions grown by the scaler.

First act (:func:`first_act`): DynamoDB Local direct, tables created from ``infra/``,
the functions' environment pointed at them and the shard counts fixed (8 per origin
key, 4 per counter); the whole data set replayed as fast as acknowledged, then read back
and checked.

Second act (:func:`second_act`): through the partition emulator, every key from one
shard; each origin key offered a known multiple of its partition's write limit on an
open-loop schedule (:mod:`sandbox.scenarios.demo.hot_act`), throttled, alarmed and grown by the
real scaler (:mod:`sandbox.scenarios.demo.growth`), then read back and checked; its timeline and
chart are :mod:`sandbox.scenarios.demo.timeline`.
"""

from __future__ import annotations

import argparse
import threading
import time
from collections.abc import Sequence
from typing import Any

from dynashard import names
from sandbox.harness.dataset import CARRIER_COUNTER, Departure
from sandbox.harness.delivery import IngestStats
from sandbox.harness.handlers import Handlers
from sandbox.scenarios.demo.hot_act import (
    MAX_LAG_WALL_S,
    act_scale,
    growth_checks,
    key_targets,
    run_open_loop,
    write_units_per_event,
)
from sandbox.scenarios.demo.report import build_report, replay_live, status_progress
from sandbox.scenarios.demo.verify import (
    ReadResult,
    check_counters,
    plan_reads,
    read_back,
    shard_counts,
)

#: Processes of the first act's read-back: one per year read (3 origins, both orders),
#: each with the query function's own environments, as Lambda runs concurrent
#: invocations. The second act reads in threads: its emulator charges this process's
#: clients (and its reads are bound by the emulated read capacity, not by CPU).
READ_PROCESSES = 6
#: Shard counts fixed before the replay (growth comes with the partition emulator).
ORIGIN_SHARDS = 8
COUNTER_SHARDS = 4
#: Emulated seconds of offered load after the first throttle before the second act judges
#: whether throughput recovered: the target below and a 30 s margin.
RECOVERY_JUDGED_AFTER_S = 180.0
#: Emulated seconds from the first throttle within which written events/s must keep up
#: with offered ones (at least 0.95 of them) from then on.
RECOVERY_TARGET_S = 150.0
#: Departures of each origin key the second act offers, the first in time order (the
#: first weeks of 2013). Throttled, every refused item costs the sandbox's one Python
#: process a request's worth of CPU again (about 1 ms per item attempt, measured), so the
#: act offers what a 2-core machine with one core busy keeps on schedule; the first act
#: replays the whole data set.
HOT_EVENTS_PER_KEY = 12_000


def fix_shard_counts(
    endpoint_url: str, data_table: str, metadata_table: str, counts: dict[str, int]
) -> None:
    """Set the shard counts before the replay, through the library's operator path.

    Parameters
    ----------
    endpoint_url : str
        DynamoDB endpoint.
    data_table, metadata_table : str
        Table names.
    counts : dict of str to int
        Logical key -> shard count.
    """
    from dynashard import Dynashard, DynashardConfig
    from sandbox.engines.dynamodb_local import local_client

    ds = Dynashard(
        DynashardConfig(
            data_table=data_table, metadata_table=metadata_table, endpoint_url=endpoint_url
        ),
        client=local_client(endpoint_url),
    )
    for key, count in counts.items():
        ds.set_shard_count(key, count)


def read_and_check(
    console: Any,
    handlers: Handlers,
    departures: Sequence[Departure],
    workers: int,
    processes: int = 0,
) -> tuple[list[ReadResult], dict[str, dict[str, int]], dict[str, int]]:
    """Read everything back, check the counters and read the shard counts.

    Parameters
    ----------
    console : rich.console.Console
        Where the status line goes.
    handlers : Handlers
        The handlers.
    departures : sequence of Departure
        The source.
    workers : int
        Concurrent reads.
    processes : int
        Reading processes (:func:`read_back`); 0 reads in threads of this process.

    Returns
    -------
    tuple
        :func:`read_back`, :func:`check_counters` and :func:`shard_counts` results.
    """
    keys = act_keys(departures)
    # The bar counts items, advanced once per page (the year reads take minutes each);
    # quiet when the console is not a terminal (logs, tests).
    reads_planned = len(plan_reads(departures))
    with status_progress(console, "read-back", quiet_unless_terminal=True) as progress:
        task = progress.add_task("read-back", total=None, status="planning")
        lock = threading.Lock()
        totals = {"reads": 0, "mismatches": 0}

        def done(result: ReadResult) -> None:
            with lock:
                totals["reads"] += 1
                totals["mismatches"] += result.mismatches + result.duplicates
                status = f"{totals['reads']}/{reads_planned} reads, {totals['mismatches']:,} wrong"
            progress.update(task, status=status)

        reads = read_back(
            handlers,
            departures,
            max(2, workers // 2),
            on_done=done,
            on_start=lambda total: progress.update(task, total=total, status="reading"),
            on_page=lambda n: progress.update(task, advance=n),
            processes=processes,
        )
        progress.update(task, status="counters")
        counters = check_counters(handlers, departures)
        progress.update(task, status="shard counts")
        shards = shard_counts(handlers, keys)
        progress.update(task, status="done")
    return reads, counters, shards


def act_keys(departures: Sequence[Departure]) -> list[str]:
    """Return the logical keys of a replay: origin keys, then carrier counters' keys.

    A counter named ``CARRIER#XX`` lives under the logical key ``COUNTER#CARRIER#XX``
    (:func:`dynashard.counter_key`); that is the key whose shard count applies to it.

    Parameters
    ----------
    departures : sequence of Departure
        The source.

    Returns
    -------
    list of str
        Sorted origin keys followed by sorted counter keys (``COUNTER#CARRIER#XX``).
    """
    from dynashard import counter_key

    origin_keys = sorted({d.key for d in departures})
    counter_keys = sorted(
        {counter_key(CARRIER_COUNTER.format(carrier=d.carrier)) for d in departures}
    )
    return [*origin_keys, *counter_keys]


def first_act(
    args: argparse.Namespace, console: Any, endpoint: str, departures: Sequence[Departure]
) -> dict[str, Any]:
    """Replay on fixed shard counts (8 per origin, 4 per counter) against DynamoDB directly.

    Parameters
    ----------
    args : argparse.Namespace
        :func:`sandbox.scenarios.demo.cli.parse_args` output.
    console : rich.console.Console
        Where progress goes.
    endpoint : str
        DynamoDB Local's endpoint.
    departures : sequence of Departure
        The source.

    Returns
    -------
    dict
        The act's report (:func:`build_report`).
    """
    from sandbox.engines.dynamodb_local import local_client
    from sandbox.env_vars import function_environment, patched_environ, reset_function_caches
    from sandbox.tables import create_tables, data_and_metadata

    console.rule("First act: fixed shard counts, DynamoDB Local direct")
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    suffix = "" if args.endpoint is None else f"-demo-{int(time.time())}"
    data_table, metadata_table = data_and_metadata(
        create_tables(local_client(endpoint), suffix=suffix)
    )
    keys = act_keys(departures)
    env = function_environment(endpoint, data_table=data_table, metadata_table=metadata_table)
    with patched_environ(env):
        reset_function_caches()
        try:
            fix_shard_counts(
                endpoint,
                data_table,
                metadata_table,
                {k: ORIGIN_SHARDS if k.startswith("DEPARTURES#") else COUNTER_SHARDS for k in keys},
            )
            handlers = Handlers.load()
            timings["setup"] = time.perf_counter() - t0
            console.print(f"tables {data_table}, {metadata_table} at {endpoint}")
            t0 = time.perf_counter()
            stats = IngestStats(offered=len(departures))
            replay_live(console, handlers, departures, args.workers, stats, "replaying")
            timings["ingest"] = time.perf_counter() - t0
            t0 = time.perf_counter()
            reads, counters, shards = read_and_check(
                console, handlers, departures, args.workers, processes=args.read_processes
            )
            timings["read_back"] = time.perf_counter() - t0
        finally:
            reset_function_caches()
    return build_report(departures, stats, reads, counters, shards, handlers, timings)


def default_in_band_growth() -> bool:
    """Return the functions' own default of in-band growth (when no variable sets it).

    Returns
    -------
    bool
        ``FunctionSettings.in_band_growth``'s default.
    """
    from dynashard.lambda_kit.settings import FunctionSettings

    return bool(FunctionSettings.model_fields["in_band_growth"].default)


def second_act(
    args: argparse.Namespace, console: Any, endpoint: str, departures: Sequence[Departure]
) -> dict[str, Any]:
    """Offer the departures on an open-loop schedule through the emulator, from one shard.

    Each origin key is offered ``args.load`` times its partition's (scaled) write limit,
    so the count it needs, ``N*``, is known in advance; the scaler, planning from the
    writers' offered load, must grow every key to ``N*`` within two runs of the first
    alarm, no key past ``1.5 x N*``, and written events/s must keep up with offered
    ones (at least 0.95 of them) within :data:`RECOVERY_TARGET_S` emulated seconds of the
    first throttle.

    Parameters
    ----------
    args : argparse.Namespace
        :func:`sandbox.scenarios.demo.cli.parse_args` output (``speed``, ``scale``, ``load``,
        ``target_utilization``, ``in_band_growth``).
    console : rich.console.Console
        Where progress goes.
    endpoint : str
        DynamoDB Local's endpoint (the emulator's upstream).
    departures : sequence of Departure
        The source.

    Returns
    -------
    dict
        The act's report: :func:`build_report` plus ``growth`` (the settings),
        ``schedule`` (per key: offered events/s, ``N*``, counts reached and when),
        ``throttle_events``, ``time_to_recover_s`` (wall) and
        ``time_to_recover_emulated_s``, ``shard_history``, ``alarms``, ``timeline``,
        ``chart`` and ``machine`` (how late the schedule ran), with the act's checks.
    """
    from dynashard import Dynashard, DynashardConfig
    from sandbox.engines.dynamodb_local import local_client
    from sandbox.env_vars import patched_environ, reset_function_caches
    from sandbox.scenarios.demo.growth import GrowthLoop, GrowthSettings, shard_history
    from sandbox.scenarios.demo.openloop import OfferSchedule
    from sandbox.scenarios.demo.timeline import timeline_report, write_chart
    from sandbox.tables import create_tables, data_and_metadata

    units = write_units_per_event(departures)
    settings = GrowthSettings(
        scale=args.scale if args.scale is not None else act_scale(departures, args, units),
        speed=args.speed,
        in_band_growth=args.in_band_growth,
        target_utilization=args.target_utilization,
    )
    targets = key_targets(departures, args, settings, units)
    console.rule(
        f"Second act: {args.load:g} x the limit of {settings.partition_wcu:g} WCU/s per key, "
        f"x{settings.speed:g} time"
    )
    schedule = OfferSchedule({k: t["offered_events_per_s"] for k, t in targets.items()})
    console.print(
        "offered per key: "
        + ", ".join(
            f"{k.removeprefix('DEPARTURES#')} {t['offered_events_per_s']:g}/s "
            f"(N* {t['target_shards']})"
            for k, t in targets.items()
        )
    )
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    data_table, metadata_table = data_and_metadata(
        create_tables(local_client(endpoint), suffix=f"-hot-{int(time.time())}")
    )
    keys = act_keys(departures)
    origin_keys = [k for k in keys if k.startswith("DEPARTURES#")]
    # Reads the shard counts directly from DynamoDB Local: uncharged, fresh.
    observer = Dynashard(DynashardConfig(data_table, metadata_table), client=local_client(endpoint))
    stats = IngestStats(offered=len(departures))
    with GrowthLoop(endpoint, data_table, metadata_table, settings) as loop:
        env = loop.function_environment()
        with patched_environ(env):
            reset_function_caches()
            try:
                handlers = Handlers.load(loop.twin)
                timings["setup"] = time.perf_counter() - t0
                t0 = time.perf_counter()
                loop_stats, timeline = run_open_loop(
                    console,
                    handlers,
                    departures,
                    schedule,
                    stats,
                    loop,
                    shards=lambda: {
                        k: observer.shard_info(k).number_of_shards for k in origin_keys
                    },
                )
                timings["ingest"] = time.perf_counter() - t0
                throttles = loop.throttle_reasons()
                # The act judges growth under the write load; the read-back only checks
                # the data (its throttled reads are retried), so no scaler runs on it.
                loop.stop_scaling()
                t0 = time.perf_counter()
                reads, counters, shards = read_and_check(
                    console, handlers, departures, args.workers
                )
                timings["read_back"] = time.perf_counter() - t0
            finally:
                loop.stop_scaling()  # no scaler run on the outer environment's settings
                reset_function_caches()
        history = shard_history(observer, keys, loop)
        alarms = loop.alarm_history()
        tap_errors = loop.log_tap_errors()
        twin = loop.twin
        assert twin is not None
        loop_template = twin.source.path.name
        loop_overrides = dict(sorted(twin.overrides.items()))
        iam_checked = {twin.function_name(fid): r.checked for fid, r in twin.roles.items()}
    report = build_report(departures, stats, reads, counters, shards, handlers, timings)
    rows = timeline.rows()
    chart = write_chart(
        rows,
        args.report.with_suffix(".png"),
        title=(
            f"dynashard second act: {len(departures):,} departures, {args.load:g} x "
            f"{settings.partition_wcu:g} WCU/s per key, x{settings.speed:g} time"
        ),
        growths=[a for a in alarms if a["grown"]],
        targets={k: t["target_shards"] for k, t in targets.items()},
    )
    extra = timeline_report(rows, throttles, speed=settings.speed)
    growth, per_key = growth_checks(targets, history, alarms, settings.speed)
    kept = loop_stats.late_deliveries == 0
    checks = {
        **report["checks"],
        "key_range_throttling_seen": extra["throttle_events"]["key_range"] > 0,
        # The alarm's action and the sweep may run in the same minute; either may grow.
        "alarm_fired_and_scaler_grew": any(a["via"] == "alarm" for a in alarms)
        and any(a["grown"] for a in alarms),
        "every_origin_key_grew": all(shards.get(k, 0) > 1 for k in origin_keys),
        **growth,
        "no_timeline_errors": not timeline.errors and not tap_errors,
        # A scaler run that raised (Lambda would retry it) is a fault, not a figure.
        "no_scaler_errors": all(a["error"] is None for a in alarms),
        "machine_kept_schedule": kept,
    }
    recover_wall = extra["time_to_recover_s"]
    recover_emulated = None if recover_wall is None else round(recover_wall * settings.speed, 1)
    first = extra["first_throttle_s"]
    last_offered = max((r["t_s"] for r in rows if r["offered_per_s"] > 0), default=None)
    loaded_s = (
        (last_offered - first) * settings.speed
        if first is not None and last_offered is not None
        else 0.0
    )
    if loaded_s >= RECOVERY_JUDGED_AFTER_S:
        checks["throughput_recovered"] = (
            recover_emulated is not None and recover_emulated <= RECOVERY_TARGET_S
        )
    else:
        report["recovery_not_judged"] = (
            f"the replay offered load {loaded_s:.0f} emulated s after the first throttle; "
            f"recovery is judged after {RECOVERY_JUDGED_AFTER_S:.0f} s"
        )
    machine = {
        "kept_schedule": kept,
        "max_lag_s": round(loop_stats.max_lag_s, 2),
        "max_lag_allowed_s": MAX_LAG_WALL_S * settings.speed,
        "late_deliveries": loop_stats.late_deliveries,
        "late_by_path": dict(loop_stats.late_by_via),
        "scheduled_deliveries": loop_stats.scheduled_deliveries,
    }
    report.update(
        ok=all(checks.values()),
        checks=checks,
        growth={
            **loop.settings.to_json(),
            # What the functions ran with: the act's setting, else the deployed one.
            "in_band_growth": env.get(
                names.ENV_IN_BAND_GROWTH, str(default_in_band_growth()).lower()
            )
            == "true",
            "in_band_growth_from": "the act"
            if settings.in_band_growth is not None
            else "the stack",
        },
        template={
            "path": loop_template,
            "local_overrides": loop_overrides,
            "iam_checked_calls": iam_checked,
        },
        schedule={k: {**t, **per_key.get(k, {})} for k, t in targets.items()},
        machine=machine,
        events_delivered=stats.delivered,
        shard_history=history,
        alarms=alarms,
        chart=str(chart),
        **extra,
        time_to_recover_emulated_s=recover_emulated,
        recovery_target_emulated_s=RECOVERY_TARGET_S,
    )
    if not kept:
        report["machine_could_not_offer_the_load"] = (
            f"{loop_stats.late_deliveries} of {loop_stats.scheduled_deliveries} scheduled "
            f"deliveries started more than {MAX_LAG_WALL_S:g} wall s late (the latest "
            f"{loop_stats.max_lag_s:.1f} emulated s): this machine could not offer the load, "
            "so the growth figures say nothing about dynashard"
        )
    report["errors"] = [*report["errors"], *timeline.errors, *tap_errors]
    return report
