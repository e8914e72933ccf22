"""The demo's second act: hot partitions reproduced on the emulator, alarmed, grown, healed.

The replay of :mod:`sandbox.demo` runs again, this time through the partition
emulator (:mod:`sandbox.emulator`) with every key starting at one shard. Each origin
key then wants more than a partition's (scaled) key-range limit, so DynamoDB's answer
appears: ``ProvisionedThroughputExceededException`` with
``TableWriteKeyRangeThroughputExceeded`` (and ``IndexWriteKeyRangeThroughputExceeded``
for GSI1). The throttle alarms of the CDK stack (``infra/alarm_specs.py``), evaluated
locally by :class:`sandbox.alarms.LocalAlarm` over the emulator's per-minute figures,
invoke the real scaler handler, which reads the emulator's Contributor-Insights-like
top-N through its :class:`HotKeySource` port and grows the shard counts. Writers pick
the new count up when their cached count expires, and throughput recovers.

This module holds the parts of that act that are not the replay itself:

- :class:`GrowthSettings`: the emulator's scale and the functions' settings for the act;
- :class:`GrowthLoop`: the emulator, the alarms and the scaler, started and stopped
  together on one (optionally accelerated) clock;
- :class:`Timeline`: a once-a-second sampler of offered and written events, throttle
  events by reason and shard counts, the figures of the live display, the report
  (:func:`timeline_report`, :func:`time_to_recover_s`) and the chart (:func:`write_chart`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from dynashard import names
from dynashard.planning import PARTITION_RCU_LIMIT, PARTITION_WCU_LIMIT
from dynashard.throttling import KEY_RANGE_MARKER

if TYPE_CHECKING:
    from dynashard import Dynashard
    from sandbox.alarms import LocalAlarm, LocalSchedule
    from sandbox.clock import AcceleratedClock
    from sandbox.emulator import EmulatorServer
    from sandbox.logs import LocalInsightRule, LogTap


def is_key_range(reason: str) -> bool:
    """Tell whether a ``ThrottlingReason.reason`` is key-range throttling.

    Parameters
    ----------
    reason : str
        E.g. ``TableWriteKeyRangeThroughputExceeded``.

    Returns
    -------
    bool
        True for the four ``...KeyRangeThroughputExceeded`` reasons.
    """
    return reason.endswith(KEY_RANGE_MARKER)


@dataclass(frozen=True)
class GrowthSettings:
    """How hot the second act runs.

    Parameters
    ----------
    scale : float
        Factor on DynamoDB's key-range limits in the emulator: ``0.1`` gives each
        partition key value 100 WCU/s and 300 RCU/s, which the replay exceeds from
        one shard on a laptop.
    speed : float
        Emulated seconds per wall second (``1`` is real time). The emulator, the alarms
        and the scaler's cooldown run on this clock, so a CloudWatch minute passes in
        ``60 / speed`` wall seconds; the writers' cache lifetime is shortened alike.
    cooldown_s : float
        Emulated seconds between two growths of one key (the stack's default, 60).
    metadata_cache_ttl_s : float
        Emulated seconds a writer caches a key's shard count (the stack's default, 30).
    target_utilization : float
        Share of a partition's limit each shard is planned to carry, in (0, 1].
    max_shards : int
        Upper bound of any key's shard count.
    in_band_growth : bool
        Whether throttled writers also grow keys themselves; off by default so that
        the act shows the alarm-driven loop alone.

    Raises
    ------
    ValueError
        If ``scale`` or ``speed`` is not positive.
    """

    scale: float = 0.1
    speed: float = 1.0
    cooldown_s: float = 60.0
    metadata_cache_ttl_s: float = 30.0
    target_utilization: float = 0.8
    max_shards: int = 64
    in_band_growth: bool = False

    def __post_init__(self) -> None:
        if self.scale <= 0 or self.speed <= 0:
            raise ValueError(f"scale and speed must be > 0, got {self.scale}, {self.speed}")

    @property
    def partition_wcu(self) -> float:
        """float: The emulated key-range write limit, WCU per emulated second."""
        return PARTITION_WCU_LIMIT * self.scale

    @property
    def partition_rcu(self) -> float:
        """float: The emulated key-range read limit, RCU per emulated second."""
        return PARTITION_RCU_LIMIT * self.scale

    def function_environment(self) -> dict[str, str]:
        """Return the functions' settings for the act (added to the sandbox environment).

        Returns
        -------
        dict of str to str
            Scaled partition limits (the scaler plans with them), target utilization,
            maximum shard count, in-band growth switch, and the writers' cache lifetime
            in wall seconds (their clock is the wall clock).
        """
        return {
            names.ENV_PARTITION_WCU: str(self.partition_wcu),
            names.ENV_PARTITION_RCU: str(self.partition_rcu),
            names.ENV_TARGET_UTILIZATION: str(self.target_utilization),
            names.ENV_MAX_SHARDS: str(self.max_shards),
            names.ENV_COOLDOWN_S: str(self.cooldown_s),
            names.ENV_METADATA_CACHE_TTL_S: str(self.metadata_cache_ttl_s / self.speed),
            names.ENV_IN_BAND_GROWTH: str(self.in_band_growth).lower(),
        }

    def to_json(self) -> dict[str, Any]:
        """Return the settings and the limits they give, for the report.

        Returns
        -------
        dict
            The fields plus ``partition_wcu`` and ``partition_rcu``.
        """
        return {
            "scale": self.scale,
            "speed": self.speed,
            "partition_wcu": self.partition_wcu,
            "partition_rcu": self.partition_rcu,
            "cooldown_s": self.cooldown_s,
            "metadata_cache_ttl_s": self.metadata_cache_ttl_s,
            "target_utilization": self.target_utilization,
            "max_shards": self.max_shards,
            "in_band_growth": self.in_band_growth,
        }


class GrowthLoop:
    """The emulator, the scaler alarms and the scaler, as one context manager.

    On enter it starts the partition emulator in front of DynamoDB Local, one
    :class:`~sandbox.alarms.LocalAlarm` per entry of ``SCALER_ALARMS``, each evaluated
    every wall second and invoking the scaler handler on a transition into ``ALARM``,
    and the stack's sweep (:class:`~sandbox.alarms.LocalSchedule`, every emulated
    minute), which invokes the scaler for the alarms that stayed in ``ALARM``. The
    scaler grows keys through a facade on the emulated clock, so its cooldown is in
    emulated seconds.

    Parameters
    ----------
    upstream_url : str
        DynamoDB Local's endpoint.
    data_table, metadata_table : str
        The act's tables (already created).
    settings : GrowthSettings
        Scale, speed and the functions' settings.

    Examples
    --------
    >>> with GrowthLoop(ddb.endpoint_url, "d", "m", GrowthSettings()) as loop:  # doctest: +SKIP
    ...     env = loop.function_environment()
    """

    def __init__(
        self, upstream_url: str, data_table: str, metadata_table: str, settings: GrowthSettings
    ) -> None:
        self.upstream_url = upstream_url
        self.data_table = data_table
        self.metadata_table = metadata_table
        self.settings = settings
        self.clock: AcceleratedClock | None = None
        self.server: EmulatorServer | None = None
        self.alarms: list[LocalAlarm] = []
        self.sweep: LocalSchedule | None = None
        self.write_load_rule: LocalInsightRule | None = None
        self._log_tap: LogTap | None = None
        self.started_wall = 0.0

    @property
    def alarm_names(self) -> list[str]:
        """List of str: The names of the local scaler alarms (after enter)."""
        return [alarm.name for alarm in self.alarms]

    def function_environment(self) -> dict[str, str]:
        """Return the functions' environment for the act, pointed at the emulator.

        Returns
        -------
        dict of str to str
            :func:`sandbox.environment.function_environment` for the act's tables,
            with :meth:`GrowthSettings.function_environment` and the alarm names the
            scaler's sweep asks about (``DYNASHARD_SCALER_ALARM_NAMES``).
        """
        from sandbox.environment import function_environment

        return function_environment(
            self.endpoint_url,
            data_table=self.data_table,
            metadata_table=self.metadata_table,
            extra={
                **self.settings.function_environment(),
                names.ENV_SCALER_ALARM_NAMES: ",".join(self.alarm_names),
            },
        )

    @property
    def endpoint_url(self) -> str:
        """str: The emulator's endpoint (after enter)."""
        if self.server is None:
            raise RuntimeError("the growth loop is not started")
        return self.server.endpoint_url

    def __enter__(self) -> GrowthLoop:
        from dynashard import Dynashard, DynashardConfig
        from dynashard.load import write_load_rule_body
        from infra.alarm_specs import SCALER_ALARMS, SWEEP_RATE_MINUTES
        from sandbox.alarms import (
            LocalAlarm,
            LocalAlarmStates,
            LocalSchedule,
            scaler_action,
        )
        from sandbox.clock import AcceleratedClock
        from sandbox.dynamodb_local import local_client
        from sandbox.emulator import EmulatorConfig, EmulatorServer
        from sandbox.environment import SERVICE_NAME
        from sandbox.logs import LocalInsightRule, LogTap

        s = self.settings
        self.clock = clock = AcceleratedClock(speed=s.speed)
        self.started_wall = time.monotonic()
        self.server = EmulatorServer(self.upstream_url, EmulatorConfig(scale=s.scale, clock=clock))
        self.server.start()
        grower = Dynashard(
            DynashardConfig(
                self.data_table,
                self.metadata_table,
                max_shards=s.max_shards,
                cooldown_s=s.cooldown_s,
                endpoint_url=self.endpoint_url,
                partition_wcu=s.partition_wcu,
                partition_rcu=s.partition_rcu,
                target_utilization=s.target_utilization,
            ),
            client=local_client(self.endpoint_url),
        )
        grower.metadata.clock = clock
        # The stack's rule on the ingest functions' log lines, stamped on the act's clock.
        self.write_load_rule = LocalInsightRule(write_load_rule_body([SERVICE_NAME]), clock=clock)
        self._log_tap = LogTap(SERVICE_NAME, [self.write_load_rule]).__enter__()
        states = LocalAlarmStates()
        action = scaler_action(
            self.server.emulator, grower, alarm_states=states, offered_load=self.write_load_rule
        )
        metrics = self.server.emulator.metrics
        self.alarms = [
            LocalAlarm(spec, self.data_table, metrics, action, clock=clock)
            for spec in SCALER_ALARMS
        ]
        states.alarms.extend(self.alarms)
        self.sweep = LocalSchedule(action, rate_s=SWEEP_RATE_MINUTES * 60.0, clock=clock)
        for alarm in self.alarms:
            alarm.start(interval_s=1.0, max_duration_s=24 * 3600.0)
        self.sweep.start(interval_s=1.0)
        return self

    def stop_scaling(self) -> None:
        """Stop the alarms and the sweep (idempotent); the emulator keeps serving.

        Call it before leaving the functions' environment, so that no scaler
        invocation runs on settings from another environment.
        """
        if self.sweep is not None:
            self.sweep.stop()
        for alarm in self.alarms:
            alarm.stop()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop_scaling()
        if self._log_tap is not None:
            self._log_tap.__exit__(exc_type, exc, tb)
        if self.server is not None:
            self.server.stop()

    def log_tap_errors(self) -> list[str]:
        """Return the errors of the log tap that feeds the write-load rule (at most 10).

        Returns
        -------
        list of str
            Errors met while formatting or evaluating the functions' log lines.
        """
        return list(self._log_tap.errors) if self._log_tap is not None else []

    def throttle_reasons(self) -> dict[str, int]:
        """Return the throttle events by reason so far.

        Returns
        -------
        dict of str to int
            ``ThrottlingReason.reason`` -> events.
        """
        if self.server is None:
            return {}
        return self.server.emulator.metrics.throttle_reasons()

    def emulated_to_wall_s(self, epoch_s: float) -> float:
        """Convert an emulated epoch time to wall seconds since the loop started.

        Parameters
        ----------
        epoch_s : float
            Emulated epoch seconds (e.g. a metadata ``since``).

        Returns
        -------
        float
            Wall seconds after enter (negative before it).
        """
        if self.clock is None:
            raise RuntimeError("the growth loop is not started")
        return (epoch_s - self.clock.start) / self.clock.speed

    def alarm_history(self) -> list[dict[str, Any]]:
        """Return every scaler run, by an alarm's transition or by the sweep, and its growth.

        Returns
        -------
        list of dict
            ``{"alarm", "via", "at_s", "grown", "error"}`` in time order: ``via`` is
            ``alarm`` (a transition into ``ALARM``) or ``sweep`` (one entry per alarm
            the sweep found in ``ALARM``, or one with the error of a failed sweep);
            ``at_s`` is wall seconds since the loop started and ``grown`` the scaler's
            growth list.
        """
        fired: list[dict[str, Any]] = []
        for alarm in self.alarms:
            for evaluation in alarm.history:
                if not evaluation.fired:
                    continue
                result = evaluation.action_result
                grown = result.get("grown", []) if isinstance(result, Mapping) else []
                fired.append(
                    {
                        "alarm": alarm.spec.id,
                        "via": "alarm",
                        "at_s": round(self.emulated_to_wall_s(evaluation.timestamp), 1),
                        "grown": grown,
                        "error": evaluation.error,
                    }
                )
        by_name = {alarm.name: alarm.spec.id for alarm in self.alarms}
        for run in self.sweep.history if self.sweep is not None else []:
            at_s = round(self.emulated_to_wall_s(run.timestamp), 1)
            if run.error is not None:
                fired.append(
                    {"alarm": None, "via": "sweep", "at_s": at_s, "grown": [], "error": run.error}
                )
                continue
            for summary in run.result.get("alarms", []) if isinstance(run.result, Mapping) else []:
                fired.append(
                    {
                        "alarm": by_name.get(summary.get("alarm"), summary.get("alarm")),
                        "via": "sweep",
                        "at_s": at_s,
                        "grown": summary.get("grown", []),
                        "error": None,
                    }
                )
        return sorted(fired, key=lambda f: f["at_s"])


# --- the timeline ------------------------------------------------------------------------
@dataclass(frozen=True)
class Sample:
    """Cumulative figures at one instant of the act.

    Attributes
    ----------
    t_s : float
        Wall seconds since the timeline started.
    offered : int
        Records delivered to the ingest handlers so far (redeliveries included).
    written : int
        Records acknowledged so far.
    throttles : dict of str to int
        Throttle events by ``ThrottlingReason.reason`` so far.
    shards : dict of str to int
        Shard count in force per logical key.
    keys : dict of str to tuple of (int, int)
        Per logical key, events offered and written so far (empty when not sampled).
    """

    t_s: float
    offered: int
    written: int
    throttles: dict[str, int]
    shards: dict[str, int]
    keys: dict[str, tuple[int, int]] = field(default_factory=dict)


@dataclass
class Timeline:
    """Sample the act's figures every ``interval_s`` wall seconds in a thread.

    Parameters
    ----------
    counts : callable
        ``() -> (offered, written)``, cumulative.
    throttles : callable
        ``() -> {reason: events}``, cumulative.
    shards : callable
        ``() -> {key: shard count}``.
    interval_s : float
        Wall seconds between samples.
    on_sample : callable, optional
        Called with each new row of :meth:`rows` (the live display).
    key_counts : callable, optional
        ``() -> {key: (offered, written)}``, cumulative events per logical key.
    """

    counts: Callable[[], tuple[int, int]]
    throttles: Callable[[], dict[str, int]]
    shards: Callable[[], dict[str, int]]
    interval_s: float = 1.0
    on_sample: Callable[[dict[str, Any]], None] | None = None
    key_counts: Callable[[], dict[str, tuple[int, int]]] | None = None
    samples: list[Sample] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event, repr=False)
    _thread: threading.Thread | None = field(default=None, repr=False)
    _t0: float = field(default=0.0, repr=False)

    def sample(self) -> Sample:
        """Take one sample now and append it.

        Returns
        -------
        Sample
            The new sample.
        """
        offered, written = self.counts()
        new = Sample(
            round(time.monotonic() - self._t0, 3),
            offered,
            written,
            self.throttles(),
            self.shards(),
            self.key_counts() if self.key_counts is not None else {},
        )
        self.samples.append(new)
        if self.on_sample is not None and len(self.samples) > 1:
            self.on_sample(rate_row(self.samples[-2], new))
        return new

    def __enter__(self) -> Timeline:
        self._t0 = time.monotonic()
        self._stop.clear()
        self.sample()

        def loop() -> None:
            while not self._stop.wait(self.interval_s):
                try:
                    self.sample()
                except Exception as exc:  # a failed read is reported, the act goes on
                    if len(self.errors) < 10:
                        self.errors.append(f"timeline sample failed: {exc!r}")

        self._thread = threading.Thread(target=loop, name="timeline", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10.0)
        self.sample()

    def rows(self) -> list[dict[str, Any]]:
        """Return the per-interval rates between consecutive samples.

        Returns
        -------
        list of dict
            See :func:`rate_row`.
        """
        return [rate_row(a, b) for a, b in zip(self.samples, self.samples[1:], strict=False)]


def rate_row(before: Sample, after: Sample) -> dict[str, Any]:
    """Turn two cumulative samples into the rates of the interval between them.

    Parameters
    ----------
    before, after : Sample
        Consecutive samples.

    Returns
    -------
    dict
        ``{"t_s", "offered_per_s", "written_per_s", "throttles_per_s" (by reason),
        "key_range_throttles_per_s", "shards", "keys"}``; ``t_s`` is the interval's end,
        wall seconds, rates are per wall second, and ``keys`` holds each key's
        ``{"offered_per_s", "written_per_s"}``.
    """
    span = max(after.t_s - before.t_s, 1e-9)
    keys = {
        key: {
            "offered_per_s": round((o - before.keys.get(key, (0, 0))[0]) / span, 1),
            "written_per_s": round((w - before.keys.get(key, (0, 0))[1]) / span, 1),
        }
        for key, (o, w) in after.keys.items()
    }
    throttles = {
        reason: round((n - before.throttles.get(reason, 0)) / span, 1)
        for reason, n in after.throttles.items()
    }
    return {
        "t_s": after.t_s,
        "offered_per_s": round((after.offered - before.offered) / span, 1),
        "written_per_s": round((after.written - before.written) / span, 1),
        "throttles_per_s": throttles,
        "key_range_throttles_per_s": round(
            sum(v for r, v in throttles.items() if is_key_range(r)), 1
        ),
        "shards": dict(after.shards),
        "keys": keys,
    }


def time_to_recover_s(
    rows: Sequence[dict[str, Any]], goodput: float = 0.95, window_s: float = 30.0
) -> float | None:
    """Measure from the first key-range throttle to the moment writes keep up for good.

    Under an open-loop load, recovery is throughput, not silence: from the recovery on,
    the events written in every ``window_s`` stretch (a rolling sum, which smooths the
    granularity of batches) are at least ``goodput`` times the events offered in it,
    for as long as load is offered. A batch is offered when its invocation starts and
    written when it ends, so a window always ends with up to one batch per key in
    flight: at 40 events/s per key in batches of up to 100, that is 8% of a 10 s sum
    and under 3% of the default 30 s one. Redeliveries of what throttling refused count as
    written when they get through, so a backlog draining after the recovery only helps.

    Parameters
    ----------
    rows : sequence of dict
        :meth:`Timeline.rows`, in time order (``offered_per_s`` counts first deliveries).
    goodput : float
        Written / offered that counts as keeping up, in (0, 1].
    window_s : float
        Wall seconds of the rolling sums (30: long enough that a batch in flight stays
        under the 5% that ``goodput`` allows).

    Returns
    -------
    float or None
        Wall seconds from the end of the first interval with key-range throttling to
        the end of the last window that fell short (0 when none did); None when nothing
        was throttled or the last offered window still fell short.
    """
    first = next((i for i, r in enumerate(rows) if r["key_range_throttles_per_s"] > 0), None)
    if first is None:
        return None
    start_t = rows[first]["t_s"]
    spans = [
        (r["t_s"], max(0.0, r["t_s"] - (rows[i - 1]["t_s"] if i else 0.0)))
        for i, r in enumerate(rows)
    ]
    last_short: float | None = None
    last_offered = max((r["t_s"] for r in rows if r["offered_per_s"] > 0), default=start_t)
    for i in range(first, len(rows)):
        end_t = rows[i]["t_s"]
        if end_t > last_offered:
            break
        offered = written = 0.0
        j = i
        while j >= 0 and end_t - spans[j][0] < window_s:
            offered += rows[j]["offered_per_s"] * spans[j][1]
            written += rows[j]["written_per_s"] * spans[j][1]
            j -= 1
        if offered > 0 and written < goodput * offered:
            last_short = end_t
    if last_short is not None and last_short >= last_offered:
        return None
    return round(float(max(0.0, (last_short or start_t) - start_t)), 1)


def timeline_report(rows: Sequence[dict[str, Any]], totals: Mapping[str, int]) -> dict[str, Any]:
    """Summarize the timeline for ``demo-report.json``.

    Parameters
    ----------
    rows : sequence of dict
        :meth:`Timeline.rows`.
    totals : mapping of str to int
        Throttle events by reason over the whole act.

    Returns
    -------
    dict
        ``throttle_events`` (by reason, and ``key_range`` / ``total``),
        ``time_to_recover_s``, the written rate while throttled and after the recovery
        (events per wall second), and the per-second ``timeline``.
    """
    recover = time_to_recover_s(rows)
    first = next((r["t_s"] for r in rows if r["key_range_throttles_per_s"] > 0), None)

    def mean_written(selected: list[dict[str, Any]]) -> float | None:
        busy = [r["written_per_s"] for r in selected if r["offered_per_s"] > 0]
        return round(sum(busy) / len(busy), 1) if busy else None

    throttled_rows: list[dict[str, Any]] = []
    recovered_rows: list[dict[str, Any]] = []
    if first is not None and recover is not None:
        cut = first + recover
        throttled_rows = [r for r in rows if first <= r["t_s"] <= cut]
        recovered_rows = [r for r in rows if r["t_s"] > cut]
    key_range = sum(n for r, n in totals.items() if is_key_range(r))
    return {
        "throttle_events": {
            **dict(sorted(totals.items())),
            "key_range": key_range,
            "total": sum(totals.values()),
        },
        "first_throttle_s": first,
        "time_to_recover_s": recover,
        "written_per_s_while_throttled": mean_written(throttled_rows),
        "written_per_s_after_recovery": mean_written(recovered_rows),
        "timeline": list(rows),
    }


def write_chart(
    rows: Sequence[dict[str, Any]],
    path: Path,
    *,
    title: str,
    growths: Sequence[dict[str, Any]] = (),
    targets: Mapping[str, int] | None = None,
) -> Path:
    """Plot the act: events per second, throttle events per second, shard counts.

    matplotlib (Agg backend, no display needed) draws three panels sharing the time
    axis: offered (dashed) vs written (solid) events per second, per key when the rows
    carry per-key figures; throttle events per second, one line per
    ``ThrottlingReason``; the shard count of each key (steps) with its ``N*`` (dotted).
    Scaler runs that grew a key are marked on every panel.

    Parameters
    ----------
    rows : sequence of dict
        :meth:`Timeline.rows`.
    path : Path
        PNG to write.
    title : str
        Figure title.
    growths : sequence of dict
        :meth:`GrowthLoop.alarm_history` entries (``at_s``) to mark.
    targets : mapping of str to int, optional
        ``N*`` per key, drawn as dotted lines on the shard panel.

    Returns
    -------
    Path
        ``path``.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = [r["t_s"] for r in rows]
    fig, (ax_events, ax_throttles, ax_shards) = plt.subplots(
        3, 1, sharex=True, figsize=(10, 8), constrained_layout=True
    )
    keys = sorted({k for r in rows for k in r["shards"]})
    colors = {key: f"C{n}" for n, key in enumerate(keys)}
    per_key = sorted({k for r in rows for k in r.get("keys", {})})
    if per_key:
        for key in per_key:
            color = colors.get(key, f"C{len(colors) % 10}")
            figures = [r.get("keys", {}).get(key, {}) for r in rows]
            ax_events.plot(
                t, [f.get("offered_per_s", 0.0) for f in figures], "--", color=color, linewidth=1
            )
            ax_events.plot(
                t, [f.get("written_per_s", 0.0) for f in figures], color=color, label=key
            )
        ax_events.set_title("offered (dashed) and written (solid) events / s", fontsize="small")
    else:
        ax_events.plot(t, [r["offered_per_s"] for r in rows], label="offered (deliveries)")
        ax_events.plot(t, [r["written_per_s"] for r in rows], label="written (acknowledged)")
    ax_events.set_ylabel("events / s")
    ax_events.legend(loc="upper right", fontsize="small")
    reasons = sorted({reason for r in rows for reason in r["throttles_per_s"]})
    for reason in reasons:
        ax_throttles.plot(t, [r["throttles_per_s"].get(reason, 0.0) for r in rows], label=reason)
    ax_throttles.set_ylabel("throttle events / s")
    if reasons:
        ax_throttles.legend(loc="upper right", fontsize="small")
    for key in keys:
        ax_shards.step(
            t,
            [r["shards"].get(key, 0) for r in rows],
            where="post",
            label=key,
            color=colors[key],
        )
        if targets and key in targets:
            ax_shards.axhline(targets[key], color=colors[key], linestyle=":", linewidth=1)
    ax_shards.set_ylabel("shards")
    ax_shards.set_xlabel("wall seconds since the replay started")
    if keys:
        ax_shards.legend(loc="lower right", fontsize="small")
    for growth in growths:
        for ax in (ax_events, ax_throttles, ax_shards):
            ax.axvline(growth["at_s"], color="grey", linestyle=":", linewidth=1)
    fig.suptitle(title)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def shard_history(service: Dynashard, keys: Sequence[str], loop: GrowthLoop) -> dict[str, Any]:
    """Read each key's shard history from the metadata table.

    Parameters
    ----------
    service : Dynashard
        A facade over the act's tables.
    keys : sequence of str
        Logical keys.
    loop : GrowthLoop
        For converting the emulated ``since`` times to wall seconds.

    Returns
    -------
    dict
        Key -> list of ``{"count", "since_s"}`` (``since_s`` wall seconds after the act
        started; 0 for the count a key was created with), oldest first.
    """
    out: dict[str, Any] = {}
    for key in keys:
        info = service.shard_info(key)
        history = list(info.history) or [(info.last_updated, info.number_of_shards)]
        out[key] = [
            {"count": count, "since_s": max(0.0, round(loop.emulated_to_wall_s(since), 1))}
            for since, count in history
        ]
    return out
