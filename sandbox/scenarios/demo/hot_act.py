"""The second act's load: what each key is offered, the open-loop run, the growth verdict.

Each origin key is offered a stated multiple of its partition's (scaled) write limit,
so the shard count it needs, ``N*``, is known in advance (:func:`key_targets`, with the
limit's scale from :func:`act_scale`). :func:`plan_open_loop` and :func:`run_open_loop`
offer the departures on that schedule (:mod:`sandbox.scenarios.demo.openloop`) with a live line;
:func:`growth_checks` judges each key's growth against its ``N*``.
"""

from __future__ import annotations

import argparse
import functools
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from sandbox.harness.dataset import Departure
from sandbox.harness.delivery import (
    BATCH_SIZE,
    COUNTER_CHUNK,
    MAX_RECEIVES,
    IngestStats,
    send_counter,
)
from sandbox.harness.handlers import Handlers
from sandbox.scenarios.demo.report import live_status, status_progress

#: Wall seconds a scheduled delivery may start late before the machine is judged unable
#: to offer the load.
MAX_LAG_WALL_S = 5.0
#: Concurrent invocations of each ingest handler in the second act (Lambda scales them
#: with the load; throttled invocations last seconds).
OPEN_LOOP_WORKERS = 48


def write_units_per_event(departures: Sequence[Departure], per_key: int = 1_000) -> float:
    """Return the largest write units of an event's item, over a sample of each key's.

    Parameters
    ----------
    departures : sequence of Departure
        The source.
    per_key : int
        Events measured per logical key (evenly spaced).

    Returns
    -------
    float
        WCU of the largest item measured (the library's own item, shard 0).
    """
    from dynashard.core.buckets import TimeBucket
    from dynashard.core.capacity import write_units
    from dynashard.dynamodb.writer import build_item
    from dynashard.model import Event

    by_key: dict[str, list[Departure]] = {}
    for d in departures:
        by_key.setdefault(d.key, []).append(d)
    largest = 1
    for deps in by_key.values():
        for d in deps[:: max(1, len(deps) // per_key)]:
            _, size = build_item(Event.model_validate(d.event), 0, TimeBucket.DAY)
            largest = max(largest, write_units(size))
    return float(largest)


def act_scale(departures: Sequence[Departure], args: argparse.Namespace, units: float) -> float:
    """Return the limit scale at which the busiest key's events last ``args.duration``.

    Parameters
    ----------
    departures : sequence of Departure
        The source.
    args : argparse.Namespace
        ``load`` and ``duration`` (emulated seconds).
    units : float
        WCU per event (:func:`write_units_per_event`).

    Returns
    -------
    float
        ``events of the busiest key x WCU per event / (duration x load x 1,000)``.
    """
    from dynashard.planning.shards import PARTITION_WCU_LIMIT

    busiest = max(Counter(d.key for d in departures).values())
    return float(busiest * units / (args.duration * args.load * PARTITION_WCU_LIMIT))


def ingest_visibility_timeout_s(loop: Any) -> float:
    """Return the visibility timeout of the queue that feeds the SQS handler, in seconds.

    Emulated seconds before SQS delivers a failed record again, as the synthesized
    template sets it on the ingest queue (``VisibilityTimeout``: six times the function
    timeout, ``infra/constructs/ingest.py``), read from the loop's twin.

    Parameters
    ----------
    loop : GrowthLoop
        The started growth loop (its ``twin`` holds the template).

    Returns
    -------
    float
        Seconds.

    Raises
    ------
    RuntimeError
        If the loop has not started (no twin yet).
    """
    from sandbox.twin.sources import SQS_HANDLER

    if loop.twin is None:
        raise RuntimeError("the growth loop has no twin: start it before the replay")
    queue = loop.twin.spec.queues[loop.twin.source_of(SQS_HANDLER)]
    return float(queue.visibility_timeout_s)


def key_targets(
    departures: Sequence[Departure], args: argparse.Namespace, settings: Any, units: float
) -> dict[str, dict[str, Any]]:
    """State the second act's schedule per origin key, and the count each key needs.

    Parameters
    ----------
    departures : sequence of Departure
        The source.
    args : argparse.Namespace
        ``load`` (k: times the partition limit offered per key).
    settings : GrowthSettings
        The emulated limit and the target utilization.
    units : float
        WCU per event (:func:`write_units_per_event`).

    Returns
    -------
    dict
        Key -> ``{"events", "wcu_per_event", "offered_events_per_s",
        "offered_wcu_per_s", "load_x_limit", "target_shards"}`` (rates per emulated
        second; ``target_shards`` is ``N*``).
    """
    from sandbox.scenarios.demo.openloop import target_shards

    counts = Counter(d.key for d in departures)
    offered_wcu = args.load * settings.partition_wcu
    return {
        key: {
            "events": n,
            "wcu_per_event": units,
            "offered_events_per_s": round(offered_wcu / units, 3),
            "offered_wcu_per_s": round(offered_wcu, 3),
            "load_x_limit": args.load,
            "target_shards": target_shards(
                offered_wcu, settings.partition_wcu, settings.target_utilization
            ),
        }
        for key, n in sorted(counts.items())
    }


def plan_open_loop(
    handlers: Handlers,
    departures: Sequence[Departure],
    schedule: Any,
    speed: float,
    stats: IngestStats,
) -> tuple[list[Any], list[tuple[float, Callable[[], Any]]]]:
    """Cut the replay into deliveries and counter increments, due from second 0.

    Parameters
    ----------
    handlers : Handlers
        The handlers (bound into the counter increments).
    departures : sequence of Departure
        The source, in replay order.
    schedule : OfferSchedule
        Events per emulated second per key.
    speed : float
        Emulated seconds per wall second.
    stats : IngestStats
        Counts the counter increments go to.

    Returns
    -------
    tuple of (list of Delivery, list of (float, callable))
        The deliveries (:func:`sandbox.scenarios.demo.openloop.plan_deliveries`) and the counter
        increments (one per carrier per chunk of :data:`COUNTER_CHUNK` departures, due
        with the chunk's last departure), due in wall seconds after the act's start.
    """
    from sandbox.scenarios.demo.openloop import plan_deliveries

    # Events through SQS only: the sandbox runs API invocations one at a time (see
    # sandbox/local_aws/lambda_runtime.py), so a throttled POST /events, which retries for seconds,
    # would hold every other API call. Act 1 sends its share through the API.
    deliveries = plan_deliveries(departures, schedule, 0.0, speed, BATCH_SIZE, api_every=0)
    dues = schedule.dues(departures)
    increments: list[tuple[float, Callable[[], Any]]] = []
    for chunk_no, start in enumerate(range(0, len(departures), COUNTER_CHUNK)):
        chunk = departures[start : start + COUNTER_CHUNK]
        due = max(dues[start : start + len(chunk)]) / speed
        for carrier, count in sorted(Counter(d.carrier for d in chunk).items()):
            key = f"demo-{chunk_no}-{carrier}"
            increments.append(
                (due, functools.partial(send_counter, handlers, carrier, count, key, stats))
            )
    return deliveries, increments


def run_open_loop(
    console: Any,
    handlers: Handlers,
    departures: Sequence[Departure],
    schedule: Any,
    stats: IngestStats,
    loop: Any,
    shards: Callable[[], dict[str, int]],
) -> tuple[Any, Any]:
    """Replay the departures on the schedule with a live line; return its figures.

    The schedule's second 0 is the start of the act's clock (an emulated minute
    boundary), so the first alarm's minute holds the schedule's first minute. The
    deliveries are planned and the SQS handler's environments provisioned first.

    Parameters
    ----------
    console : rich.console.Console
        Where the progress goes.
    handlers : Handlers
        The handlers.
    departures : sequence of Departure
        The source.
    schedule : OfferSchedule
        Events per emulated second per key.
    stats : IngestStats
        Counts, filled in.
    loop : GrowthLoop
        The started growth loop (throttle figures, clock).
    shards : callable
        ``() -> {key: shard count}`` for the timeline.

    Returns
    -------
    tuple of (OpenLoopStats, Timeline)
        Per-key counts and the schedule's lateness; the once-a-second timeline of
        offered (first deliveries) and written events, throttles and shard counts.
    """
    from sandbox.scenarios.demo.openloop import OpenLoopReplay
    from sandbox.scenarios.demo.timeline import Timeline

    speed = loop.settings.speed
    deliveries, increments = plan_open_loop(handlers, departures, schedule, speed, stats)
    replay = OpenLoopReplay(
        handlers,
        stats,
        speed=speed,
        visibility_timeout_s=ingest_visibility_timeout_s(loop),
        max_receives=MAX_RECEIVES,
        max_lag_s=MAX_LAG_WALL_S * speed,
        workers=OPEN_LOOP_WORKERS,
        api_workers=OPEN_LOOP_WORKERS,
    )
    provision = getattr(handlers.sqs, "provision", None)  # a LocalFunction's
    if provision is not None:
        provision(OPEN_LOOP_WORKERS)
    start_wall = loop.clock.origin
    for delivery in deliveries:
        delivery.due_wall += start_wall
    increments = [(start_wall + due, call) for due, call in increments]
    with status_progress(console, "act 2") as progress:
        task = progress.add_task("act 2", total=len(departures), status="")
        timeline = Timeline(
            counts=lambda: (replay.loop_stats.offered(), stats.written),
            throttles=loop.throttle_reasons,
            shards=shards,
            on_sample=lambda row: progress.update(task, status=live_status(row)),
            key_counts=replay.loop_stats.key_counts,
        )
        with timeline:
            replay.run(
                deliveries, increments, on_progress=lambda n: progress.update(task, advance=n)
            )
    return replay.loop_stats, timeline


def growth_checks(
    targets: dict[str, dict[str, Any]],
    history: dict[str, Any],
    alarms: Sequence[dict[str, Any]],
    speed: float,
) -> tuple[dict[str, bool], dict[str, Any]]:
    """Judge the growth of each origin key against its ``N*``.

    Parameters
    ----------
    targets : dict
        :func:`key_targets` output.
    history : dict
        :func:`sandbox.scenarios.demo.growth.shard_history` output (``since_s`` wall seconds).
    alarms : sequence of dict
        :meth:`sandbox.scenarios.demo.growth.GrowthLoop.alarm_history` (``at_s`` wall seconds).
    speed : float
        Emulated seconds per wall second.

    Returns
    -------
    tuple of (dict, dict)
        The checks (``every_key_reached_target_within_two_scaler_runs``,
        ``no_key_grew_past_1_5_target``) and per key ``{"shards_reached",
        "reached_target_at_s", "max_shards"}`` (``reached_target_at_s`` wall seconds).
    """
    from infra.alarm_specs import SWEEP_RATE_MINUTES

    first_alarm = next((a["at_s"] for a in alarms if a["via"] == "alarm"), None)
    # The first alarm's run and the sweep that follows it (plus the run's own time).
    deadline = None if first_alarm is None else first_alarm + (SWEEP_RATE_MINUTES * 60 + 10) / speed
    per_key: dict[str, Any] = {}
    reached_all = deadline is not None
    within_cap = True
    for key, target in targets.items():
        steps = history.get(key, [])
        reached_at = next(
            (h["since_s"] for h in steps if h["count"] >= target["target_shards"]), None
        )
        top = max((h["count"] for h in steps), default=0)
        per_key[key] = {
            "shards_reached": steps,
            "reached_target_at_s": reached_at,
            "max_shards": top,
        }
        reached_all = reached_all and reached_at is not None and reached_at <= (deadline or 0.0)
        within_cap = within_cap and top <= 1.5 * target["target_shards"]
    checks = {
        "every_key_reached_target_within_two_scaler_runs": reached_all,
        "no_key_grew_past_1_5_target": within_cap,
    }
    return checks, per_key
