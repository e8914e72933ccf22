"""The fleet simulation: workloads, policies and the per-second loop, in emulated time.

Each emulated second every logical key is offered write units (1-WCU requests); its
writers spread them evenly over the shards their cached count names (a cache turns over
within ``metadata_cache_ttl_s`` of a change, linearly; under dynashard a throttled key's
writers drop entries older than the library's ``ShardMetadata.throttle_refresh_s``); a
key whose busiest shard gets more than a key range takes goes through the emulator's own
token buckets (:meth:`sandbox.emulator.limits.Limiter.admit_requests`), and what they
refuse is retried the next second, up to ``write_max_attempts`` attempts, then lost. Every
minute the figures go to :class:`~bench.fleet.cloud.Figures`; the alarm of
``infra.alarm_specs.SCALER_ALARMS`` is evaluated (:meth:`AlarmSpec.is_breaching`) and
the scaler runs: the library's own :func:`dynashard.planning.sweep.sweep` (growth and
shrink) on :class:`~dynashard.dynamodb.shard_metadata.ShardMetadata` over an in-memory
table, with the library's Contributor Insights adapters over a fake CloudWatch: the
hot-key reports, and the write-load rules as the stack deploys them
(:class:`WriteLoadRules`: one per part of the key space, read part by part by
:class:`~dynashard.cloudwatch.insights.InsightRuleOfferedLoad`).

Workloads (:func:`workload`): (a) Zipf, (b) churn, (c) flash crowd, (d) diurnal, (e) a
30-day backfill. (d) and (e) change over hours and days: after their first hour they
step 10 s and 60 s at a time (:meth:`Run.step`, a step standing for that many equal
seconds), and the per-key figures keep only the minutes a report can ask for.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

import numpy as np

from bench.fleet.cloud import (
    EPOCH0,
    FakeCloudWatch,
    FakeDynamoDB,
    Figures,
    MemoryMetadataStore,
    Minute,
    write_load_masks,
)
from dynashard.cloudwatch.insights import ContributorInsightsHotKeySource, InsightRuleOfferedLoad
from dynashard.core.load import write_load_rules
from dynashard.core.throttling import WRITE_KEY_RANGE_METRIC
from dynashard.dynamodb.shard_metadata import ShardMetadata
from dynashard.lambda_kit.settings import FunctionSettings
from dynashard.planning import scaling, shards, sweep
from infra.alarm_specs import SCALER_ALARMS, SWEEP_RATE_MINUTES
from sandbox.emulator.limits import Limiter, Operation, Resource

#: The policies, side by side.
POLICIES = ("none", "static", "blog", "dynashard", "oracle")
Policy = Literal["none", "static", "blog", "dynashard", "oracle"]
#: The article's static N (its usage example's 20, as in bench/ingest.py).
STATIC_N = 20
#: The table-level write alarm: the only one this simulation can breach (no reads, no GSI).
WRITE_ALARM = next(s for s in SCALER_ALARMS if s.metric_name == WRITE_KEY_RANGE_METRIC)

#: The library's planning functions the simulation calls (a test checks they are the library's).
PLANNERS: dict[str, Callable[..., Any]] = {
    "sweep": sweep.sweep,
    "loads_by_logical_key": shards.loads_by_logical_key,
    "plan_shard_count": shards.plan_shard_count,
}
#: The library's adapter of the write-load rules (a test checks it is the library's).
OFFERED_LOAD: Callable[..., Any] = InsightRuleOfferedLoad


@dataclass(frozen=True)
class WriteLoadRules:
    """The stack's write-load Contributor Insights rules, as the scaler and writers see them.

    Attributes
    ----------
    names : tuple of str
        The rules, part 0 first (the scaler's ``DYNASHARD_WRITE_LOAD_RULE``).
    bodies : tuple of str
        Their bodies (JSON), in the same order.
    writer_parts : int
        The writers' ``DYNASHARD_WRITE_LOAD_PARTS``: the part each line carries.
    """

    names: tuple[str, ...]
    bodies: tuple[str, ...]
    writer_parts: int

    @classmethod
    def of_library(cls, parts: int) -> WriteLoadRules:
        """Return ``parts`` rules as the library writes them (for runs off the template)."""
        import json

        bodies = tuple(json.dumps(b, sort_keys=True) for b in write_load_rules(["fleet"], parts))
        base = "fleet-offered-write-units"
        names = (base,) if parts == 1 else tuple(f"{base}-{i}-of-{parts}" for i in range(parts))
        return cls(names, bodies, parts)


# --- workloads -----------------------------------------------------------------------------
#: The workloads, in the issue's order: (a) zipf, (b) churn, (c) flash, (d) diurnal, (e) backfill.
WORKLOADS = ("zipf", "churn", "flash", "diurnal", "backfill")
#: (b): every CHURN_EVERY_S a new cohort of CHURN_SHARE of the keys runs at CHURN_LEVEL x a
#: partition for CHURN_HOT_S (so two cohorts are hot at once).
CHURN_EVERY_S, CHURN_HOT_S, CHURN_SHARE, CHURN_LEVEL = 600, 1200, 0.01, 4.0
#: (d): peak over trough of the daily cycle; the hottest key at 64 x a partition at the peak.
DIURNAL_SWING = 5.0
#: (e): the backfill key's level, x a partition, and its minute-to-minute jitter (uniform, +-).
BACKFILL_LEVEL, BACKFILL_JITTER = 20.0, 0.10


@dataclass(frozen=True)
class Workload:
    """Offered WCU/s per logical key over time, seeded.

    Attributes
    ----------
    name : str
        ``zipf`` (a), ``churn`` (b), ``flash`` (c), ``diurnal`` (d) or ``backfill`` (e).
    base : ndarray
        Per key, its steady load, WCU/s (at the daily peak for ``diurnal``).
    seed : int
        Seed of the key ranks, the churn cohorts and the backfill's jitter.
    description : str
        The workload as the report states it.
    flash_key : int or None
        The key of a flash crowd (c).
    cohorts : ndarray or None
        (b): row j is the cohort hot over ``[j x CHURN_EVERY_S, j x CHURN_EVERY_S +
        CHURN_HOT_S)``.
    hot_level : float
        (b), (e): the hot key's level, WCU/s.
    day_s : float or None
        (d): the cycle's length, seconds (trough at 0, peak at ``day_s / 2``).
    backfill_key : int or None
        (e): the backfill's key.
    backfill_span : tuple of (int, int)
        (e): its first and last-plus-one second.
    jitter : ndarray or None
        (e): the backfill's level factor per minute.
    coarse_after_s : int
        Seconds simulated one by one before :attr:`coarse_step_s` steps start.
    coarse_step_s : int
        Seconds per step after that (1: every second; a divisor of 60).
    """

    name: str
    base: np.ndarray
    seed: int
    description: str
    flash_key: int | None = None
    cohorts: np.ndarray | None = None
    hot_level: float = 0.0
    day_s: float | None = None
    backfill_key: int | None = None
    backfill_span: tuple[int, int] = (0, 0)
    jitter: np.ndarray | None = None
    coarse_after_s: int = 0
    coarse_step_s: int = 1

    def step_s(self, t: int) -> int:
        """Return the seconds the step starting at second ``t`` covers."""
        return 1 if t < self.coarse_after_s else self.coarse_step_s

    def offered(self, t: int, limit: float) -> np.ndarray:
        """Return the load of every key at second ``t``, WCU/s (constant over its step)."""
        load = self.base
        if self.day_s is not None:
            # (d) a cosine from the trough (1 / DIURNAL_SWING of the peak) at 0 to the peak.
            low = 1.0 / DIURNAL_SWING
            phase = 0.5 - 0.5 * math.cos(2.0 * math.pi * t / self.day_s)
            load = self.base * (low + (1.0 - low) * phase)
        if self.flash_key is not None:
            load = load.copy()
            # (c) 0.5 -> 200 x a partition in 60 s, from second 120 on.
            ramp = min(1.0, max(0.0, (t - 120) / 60.0))
            load[self.flash_key] = limit * (0.5 + ramp * (200.0 - 0.5))
        if self.cohorts is not None:
            load = load.copy()
            newest = t // CHURN_EVERY_S
            for j in range(newest - CHURN_HOT_S // CHURN_EVERY_S + 1, newest + 1):
                if j >= 0:
                    rows = self.cohorts[j % len(self.cohorts)]
                    load[rows] = np.maximum(load[rows], self.hot_level)
        if self.backfill_key is not None and self.jitter is not None:
            start, end = self.backfill_span
            if start <= t < end:
                load = load.copy()
                load[self.backfill_key] = self.hot_level * self.jitter[(t - start) // 60]
        return load


def zipf_loads(keys: int, hottest: float, exponent: float, rng: np.random.Generator) -> np.ndarray:
    """Return Zipf loads over ``keys`` keys in a seeded random order, the hottest at ``hottest``."""
    ranks = rng.permutation(keys) + 1
    return hottest / ranks.astype(float) ** exponent


def workload(
    name: str,
    keys: int,
    seed: int,
    limit: float,
    span_s: int = 3600,
    coarse_step_s: int = 1,
    coarse_after_s: int = 3600,
) -> Workload:
    """Build a workload over a run of ``span_s`` seconds.

    Parameters
    ----------
    name : str
        One of :data:`WORKLOADS`.
    keys : int
        Logical keys.
    seed : int
        Seed of the key ranks (and of the churn cohorts and the backfill's jitter).
    limit : float
        A partition's write limit, WCU/s.
    span_s : int
        The run's length: (d)'s cycle is one ``span_s``; (e)'s backfill runs from
        ``min(600, span_s / 10)`` to ``min(3600, span_s / 4)`` before the end.
    coarse_step_s, coarse_after_s : int
        Steps of ``coarse_step_s`` seconds after the first ``coarse_after_s`` seconds.

    Returns
    -------
    Workload
        Seeded: the same arguments give the same loads.
    """
    rng = np.random.default_rng(seed)
    steps = {"coarse_step_s": coarse_step_s, "coarse_after_s": coarse_after_s}
    if coarse_step_s > 1 and 60 % coarse_step_s:
        raise ValueError(f"coarse_step_s must divide 60, got {coarse_step_s}")
    if name == "zipf":
        base = zipf_loads(keys, 64 * limit, 1.1, rng)
        text = f"(a) {keys} keys, Zipf 1.1, the hottest at 64 x {limit:g} WCU/s"
        return Workload(name, base, seed, text, **steps)
    if name == "flash":
        base = zipf_loads(keys, 0.5 * limit, 1.1, rng)
        flash = int(np.argmax(base))
        text = (
            f"(c) {keys} keys, Zipf 1.1 with the hottest at 0.5 x {limit:g} WCU/s; that key "
            "ramps linearly from 0.5 to 200 x a partition over seconds 120..180, then stays"
        )
        return Workload(name, base, seed, text, flash_key=flash, **steps)
    if name == "churn":
        base = zipf_loads(keys, 0.5 * limit, 1.1, rng)
        size = max(1, round(keys * CHURN_SHARE))
        count = max(1, keys // size)
        cohorts = rng.permutation(keys)[: size * count].reshape(count, size)
        text = (
            f"(b) {keys} keys, Zipf 1.1 with the hottest at 0.5 x {limit:g} WCU/s; every "
            f"{CHURN_EVERY_S // 60} minutes from second 0 a new cohort of {size} keys "
            f"({CHURN_SHARE:.0%}, seeded, none hot before) runs at {CHURN_LEVEL:g} x a "
            f"partition ({CHURN_LEVEL * limit:g} WCU/s) for {CHURN_HOT_S // 60} minutes, "
            "then back to its Zipf load (two cohorts hot at once)"
        )
        level = CHURN_LEVEL * limit
        return Workload(name, base, seed, text, cohorts=cohorts, hot_level=level, **steps)
    if name == "diurnal":
        base = zipf_loads(keys, 64 * limit, 1.1, rng)
        hours = span_s / 3600
        text = (
            f"(d) {keys} keys, (a)'s Zipf loads times a daily cosine of {hours:g} h: the "
            f"trough (1/{DIURNAL_SWING:g} of the peak, hottest key at "
            f"{64 / DIURNAL_SWING:g} x {limit:g} WCU/s) at second 0, the peak (hottest at "
            f"64 x) at {hours / 2:g} h"
        )
        return Workload(name, base, seed, text, day_s=float(span_s), **steps)
    if name == "backfill":
        base = zipf_loads(keys, 0.5 * limit, 1.1, rng)
        key = int(rng.integers(keys))
        start = min(600, span_s // 10)
        end = span_s - min(3600, span_s // 4)
        minutes = -(-(end - start) // 60)
        jitter = 1.0 + BACKFILL_JITTER * (2.0 * rng.random(max(1, minutes)) - 1.0)
        text = (
            f"(e) {keys} keys, Zipf 1.1 with the hottest at 0.5 x {limit:g} WCU/s; one key "
            f"(K{key:05d}) backfills at {BACKFILL_LEVEL:g} x a partition "
            f"({BACKFILL_LEVEL * limit:g} WCU/s, times a seeded factor uniform in "
            f"1 +- {BACKFILL_JITTER:g} drawn per minute) from second {start} for "
            f"{(end - start) / 86400:g} days, then stops ({(span_s - end) // 60} minutes "
            "left to watch it shrink)"
        )
        return Workload(
            name,
            base,
            seed,
            text,
            hot_level=BACKFILL_LEVEL * limit,
            backfill_key=key,
            backfill_span=(start, end),
            jitter=jitter,
            **steps,
        )
    raise ValueError(f"unknown workload {name!r}")


# --- the run --------------------------------------------------------------------------------
@dataclass
class Run:
    """One workload under one policy: the state and the tallies."""

    policy: Policy
    load: Workload
    settings: FunctionSettings
    in_band: bool
    delay_minutes: int = 1
    write_load: WriteLoadRules = field(default_factory=lambda: WriteLoadRules.of_library(1))
    keys: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        k = len(self.load.base)
        self.keys = [f"K{i:05d}" for i in range(k)]
        self.index = {key: i for i, key in enumerate(self.keys)}
        self.limit = self.settings.partition_wcu
        self.attempts = self.settings.write_max_attempts
        self.ttl = max(1e-9, self.settings.metadata_cache_ttl_s)
        start = STATIC_N if self.policy == "static" else self.settings.default_shards
        self.n_old = np.full(k, start, dtype=np.int64)
        self.n_new = self.n_old.copy()
        self.t_change = np.full(k, -1e9)
        # seconds a key's writers are ahead of the cache lifetime: a throttled writer
        # drops an entry older than the library's throttle_refresh_s (dynashard only)
        self.boost = np.zeros(k)
        self.n_meta = self.n_old.copy()
        self.backlog: dict[int, list[float]] = {}
        self.now = float(EPOCH0)
        keep = math.ceil(self.settings.shrink_cool_period_s / 60) + self.delay_minutes + 5
        self.figures = Figures(self.keys, self.delay_minutes, max(60, keep))
        self.limiter = Limiter(partition_wcu=self.limit)
        self.table = Resource(self.settings.data_table)
        self.store = MemoryMetadataStore(self._changed)
        for key in self.keys:  # writers create every key's item on its first write
            self.store.create(key, int(start), EPOCH0)
        self.store.reads = self.store.writes = 0
        self.meta = ShardMetadata(
            self.store,
            default_shards=self.settings.default_shards,
            max_shards=self.settings.max_shards,
            cooldown_s=self.settings.cooldown_s,
            cache_ttl_s=self.settings.metadata_cache_ttl_s,
            clock=lambda: self.now,
            sleep=lambda _s: None,
        )
        rules = self.write_load
        masks = write_load_masks(
            self.keys, dict(zip(rules.names, rules.bodies, strict=True)), rules.writer_parts
        )
        self.cloudwatch = FakeCloudWatch(self.figures, self.settings.data_table, masks)
        self.dynamodb = FakeDynamoDB(self.settings.data_table)
        self.alarm_state = "OK"
        self.invocations = 0
        self.scaler_runs: list[dict[str, Any]] = []
        # tallies
        self.offered = np.zeros(k)
        self.written = np.zeros(k)
        self.throttled_requests = 0.0
        self.lost = 0.0
        self.shard_seconds = 0.0
        self.peak = np.zeros(k)
        self.first_need = np.full(k, -1)
        self.last_throttled = np.full(k, -1)
        self.streak = np.zeros(k, dtype=np.int64)
        self.max_streak = np.zeros(k, dtype=np.int64)
        self.ci_calls_per_minute: list[int] = []
        # per minute: offered and written units, and the watched key's count in force
        self.watched = self.load.flash_key if self.load.flash_key is not None else None
        if self.load.backfill_key is not None:
            self.watched = self.load.backfill_key
        self.minute_offered: list[float] = []
        self.minute_written: list[float] = []
        self.watched_n: list[int] = []
        self._offered_now = self._written_now = 0.0

    # the writers' counts follow the metadata table, through their caches
    def _changed(self, key: str, previous: int, count: int, now: int) -> None:
        i = self.index[key]
        self.n_old[i] = self._writers_count(i)
        self.n_new[i] = count
        self.t_change[i] = self.now
        self.boost[i] = 0.0
        self.n_meta[i] = count

    def _writers_count(self, i: int) -> int:
        f = (self.now - self.t_change[i] + self.boost[i]) / self.ttl
        return int(self.n_new[i] if f >= 1 else self.n_old[i])

    def _cache_share(self, dt: int) -> np.ndarray:
        """Return the share of writers on the new count over the step (0..1, per key).

        One second: the share at its start. A longer step: the share's mean over it (a
        change reaches the writers linearly over the cache's lifetime).
        """
        a = (self.now - self.t_change + self.boost) / self.ttl
        if dt == 1:
            return np.clip(a, 0.0, 1.0)
        b = a + dt / self.ttl

        def integral(x: np.ndarray) -> np.ndarray:  # of clip(x, 0, 1)
            return np.where(x <= 0, 0.0, np.where(x < 1, 0.5 * x * x, x - 0.5))

        return np.asarray((integral(b) - integral(a)) / (b - a))

    def step(self, t: int, minute: Minute, dt: int = 1) -> None:
        """Simulate seconds ``t .. t + dt - 1`` as ``dt`` equal seconds.

        A step of more than one second stands for that many seconds of its first one:
        the same load, the same counts, the same admissions (a key range's bucket holds
        one second, so equal seconds admit equally) and the retries of one second
        carried to the next step.
        """
        self.now = float(EPOCH0 + t)
        load = self.load.offered(t, self.limit)
        if self.policy == "oracle":
            need = np.maximum(
                1, np.ceil(load / (self.limit * self.settings.target_utilization))
            ).astype(np.int64)
            self.n_old = self.n_new = self.n_meta = need
            self.t_change = np.full(len(load), -1e9)
        f = self._cache_share(dt)
        w_lo = (1 - f) / self.n_old + f / self.n_new
        w_hi = np.where(self.n_new > self.n_old, f / self.n_new, (1 - f) / self.n_old)
        n_lo = np.minimum(self.n_old, self.n_new)
        n_hi = np.maximum(self.n_old, self.n_new)
        self.offered += load * dt
        self._offered_now += float(load.sum()) * dt
        minute.offered += load * dt
        self.shard_seconds += float(self.n_meta.sum()) * dt
        self.peak = np.maximum(self.peak, load)
        needs = (load > self.limit) & (self.first_need < 0)
        self.first_need[needs] = t
        hot = np.flatnonzero(load * w_lo > self.limit * (1 - 1e-9))
        hot_set = set(hot.tolist()) | set(self.backlog)
        cold = np.ones(len(load), dtype=bool)
        cold[list(hot_set)] = False
        written = np.where(cold, load, 0.0)
        minute.cons_lo += np.where(cold, load * w_lo * dt, 0.0)
        minute.cons_hi += np.where(cold, load * w_hi * dt, 0.0)
        throttled_now: list[int] = []
        for i in sorted(hot_set):
            classes = [float(load[i]), *self.backlog.get(i, [0.0] * (self.attempts - 1))]
            attempts = sum(classes)
            shard_counts = [
                round(attempts * (w_lo[i] if s < n_lo[i] else w_hi[i])) for s in range(n_hi[i])
            ]
            admitted_lo = admitted_hi = 0
            for s, count in enumerate(shard_counts):
                got = self.limiter.admit_requests(
                    Operation.WRITE, self.table, f"{self.keys[i]}#{s}", 1.0, count, self.now
                )
                if s < n_lo[i]:
                    admitted_lo += got
                else:
                    admitted_hi += got
            asked = max(1, sum(shard_counts))
            share = (admitted_lo + admitted_hi) / asked
            rejected = [c * (1 - share) for c in classes]
            written[i] = attempts * share
            self.lost += rejected[-1] * dt
            refused = sum(rejected)
            self.throttled_requests += refused * dt
            minute.throttle_events += refused * dt
            lo_count = sum(shard_counts[: n_lo[i]])
            hi_count = sum(shard_counts[n_lo[i] :])
            minute.cons_lo[i] += admitted_lo / max(1, n_lo[i]) * dt
            minute.thr_lo[i] += (lo_count - admitted_lo) / max(1, n_lo[i]) * dt
            if n_hi[i] > n_lo[i]:
                minute.cons_hi[i] += admitted_hi / (n_hi[i] - n_lo[i]) * dt
                minute.thr_hi[i] += (hi_count - admitted_hi) / (n_hi[i] - n_lo[i]) * dt
            carried = [0.0, *rejected[:-1]][1:]
            if sum(carried) > 0.5:
                self.backlog[i] = carried
            else:
                self.backlog.pop(i, None)
            if refused > 0.5:
                throttled_now.append(i)
        self.written += written * dt
        self._written_now += float(written.sum()) * dt
        minute.n_lo, minute.n_hi = n_lo.copy(), n_hi.copy()
        mask = np.zeros(len(load), dtype=bool)
        mask[throttled_now] = True
        self.last_throttled[mask] = t + dt - 1
        self.streak = np.where(mask, self.streak + dt, 0)
        self.max_streak = np.maximum(self.max_streak, self.streak)
        if self.policy == "dynashard":
            # ShardMetadata.refresh_after_throttle: every writer whose entry is older
            # than throttle_refresh_s reads the count again; cache reads were spread
            # evenly over the lifetime, so all but that share are on the new count
            self.boost[mask] = max(0.0, self.ttl - self.meta.throttle_refresh_s)
        if self.in_band and self.policy == "dynashard":
            for i in throttled_now:
                self.meta.request_growth(self.keys[i])

    # --- the scaler ---------------------------------------------------------------------
    def _alarm(self, end_minute: int) -> scaling.Alarm:
        end = datetime.fromtimestamp(EPOCH0 + 60 * (end_minute + 1), UTC)
        alarm = scaling.Alarm(
            name=f"fleet-{WRITE_ALARM.id}",
            state=scaling.ALARM_STATE,
            timestamp=datetime.fromtimestamp(self.now, UTC),
            window_s=WRITE_ALARM.period_s,
            metric_names=(WRITE_ALARM.metric_name,),
            table_name=self.settings.data_table,
        )
        start = datetime.fromtimestamp(EPOCH0 + 60 * end_minute, UTC)
        return scaling.with_evaluated_window(alarm, (start, end))

    def minute_end(self, minute_index: int) -> None:
        """Evaluate the alarm and run the scaler as the stack does, at a minute's end."""
        calls_before = self.cloudwatch.calls["GetInsightRuleReport"]
        self.minute_offered.append(self._offered_now)
        self.minute_written.append(self._written_now)
        self._offered_now = self._written_now = 0.0
        if self.watched is not None:
            self.watched_n.append(int(self.n_meta[self.watched]))
        published = minute_index - self.delay_minutes
        if self.policy in ("blog", "dynashard") and published >= 0:
            first = max(0, published + 1 - WRITE_ALARM.evaluation_periods)
            points = [self.figures.throttle_events[m] or None for m in range(first, published + 1)]
            breaching = WRITE_ALARM.is_breaching(points)
            alarm = self._alarm(published)
            if breaching and self.alarm_state != "ALARM":
                self._invoke([alarm], shrink=False)  # the alarm action, on the state change
            self.alarm_state = "ALARM" if breaching else "OK"
            if (minute_index + 1) % SWEEP_RATE_MINUTES == 0:  # the schedule's sweep
                self._invoke([alarm] if breaching else [], shrink=True)
        self.ci_calls_per_minute.append(
            self.cloudwatch.calls["GetInsightRuleReport"] - calls_before
        )

    def _invoke(self, due: list[scaling.Alarm], shrink: bool) -> None:
        self.invocations += 1
        hot_keys = ContributorInsightsHotKeySource(self.cloudwatch, self.dynamodb)  # type: ignore[arg-type]
        offered = OFFERED_LOAD(self.write_load.names, self.cloudwatch)
        port = _Port(self.meta)
        now = datetime.fromtimestamp(self.now, UTC)
        if self.policy == "blog":
            for alarm in due:
                grow_one_per_cooldown(alarm, port, hot_keys)
            return
        run = PLANNERS["sweep"](
            now,
            due,
            port=lambda: port,
            hot_keys=lambda: hot_keys,
            offered_load=lambda: offered,
            history=offered if shrink else None,
            shrinker=lambda: port,
            settings=self.settings,
        )
        if run.grown or run.shrink.shrunk:
            self.scaler_runs.append(
                {
                    "t_s": int(self.now - EPOCH0),
                    "grown": len(run.grown),
                    "shrunk": len(run.shrink.shrunk),
                    "shrunk_on_bound": sum(1 for s in run.shrink.shrunk if s.bounded),
                }
            )


class _Port:
    """ScalerPort and ShrinkPort over the library's ShardMetadata (as the facade does)."""

    def __init__(self, meta: ShardMetadata) -> None:
        self.meta = meta

    def shard_info(self, key: str) -> Any:
        return self.meta.for_reader(key)

    def grow(self, key: str, target: int, *, reason: Any = None) -> Any:
        return self.meta.grow(key, target, reason=reason)

    def shrink(self, key: str, target: int) -> Any:
        return self.meta.shrink(key, target)

    def sharded_keys(self) -> Any:
        return self.meta.sharded_keys()


def grow_one_per_cooldown(
    alarm: scaling.Alarm, port: _Port, hot_keys: ContributorInsightsHotKeySource
) -> None:
    """The AWS blog's policy: every throttled key Contributor Insights names gets N + 1.

    The same alarm, hot-key report, mapping and conditional update (cooldown) as the
    library's; only the target differs: ``N + 1`` rather than what the load needs.
    """
    table = alarm.table_name or ""
    hot = hot_keys.hot_keys(table, alarm.index_name, alarm.start, alarm.end)
    throttled = [h for h in hot if h.throttled_events > 0]
    loads, _ = PLANNERS["loads_by_logical_key"](throttled)
    for key in loads:
        info = port.shard_info(key)
        if info.stored:
            port.grow(key, info.number_of_shards + 1, reason="write")


def simulate(
    policy: Policy,
    load: Workload,
    seconds: int,
    settings: FunctionSettings,
    in_band: bool,
    delay_minutes: int = 1,
    write_load: WriteLoadRules | None = None,
) -> Run:
    """Run one workload under one policy for ``seconds`` emulated seconds.

    ``write_load``: the stack's write-load rules; default one rule over every key.
    """
    rules = write_load if write_load is not None else WriteLoadRules.of_library(1)
    run = Run(policy, load, settings, in_band, delay_minutes, rules)
    k = len(load.base)
    for m in range(math.ceil(seconds / 60)):
        z = [np.zeros(k) for _ in range(5)]
        minute = Minute(z[0], z[1], z[2], z[3], z[4], np.ones(k, np.int64), np.ones(k, np.int64))
        run.figures.add(m, minute)
        t = 60 * m
        while t < min(seconds, 60 * (m + 1)):
            dt = min(load.step_s(t), min(seconds, 60 * (m + 1)) - t)
            run.step(t, minute, dt)
            t += dt
        run.figures.throttle_events.append(minute.throttle_events)
        run.now = float(EPOCH0 + 60 * (m + 1))
        run.figures.now = run.now
        run.minute_end(m)
    return run
