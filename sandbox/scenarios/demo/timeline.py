"""The second act's timeline: what the act offered, wrote, was throttled on and grew to.

The act's figures are sampled once a wall second while the replay runs through the
partition emulator (:mod:`sandbox.scenarios.demo.growth`):

- :class:`Sample`: cumulative figures at one instant (offered and written events,
  throttle events by ``ThrottlingReason.reason``, shard counts, per-key counts);
- :class:`Timeline`: the sampler, in a thread, feeding the live display;
- :func:`rate_row`: two samples turned into the per-second rates of one row;
- :func:`time_to_recover_s` and :func:`timeline_report`: the recovery time and the
  summary in ``demo-report.json``;
- :func:`write_chart`: the act's chart (events, throttles and shard counts over time).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dynashard.core.throttling import is_key_range_reason


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
            sum(v for r, v in throttles.items() if is_key_range_reason(r)), 1
        ),
        "shards": dict(after.shards),
        "keys": keys,
    }


#: Emulated seconds of the recovery's rolling sums (:func:`time_to_recover_s`).
RECOVERY_WINDOW_S = 30.0


def time_to_recover_s(
    rows: Sequence[dict[str, Any]], goodput: float = 0.95, window_s: float = RECOVERY_WINDOW_S
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
        Wall seconds of the rolling sums; :func:`timeline_report` passes
        ``RECOVERY_WINDOW_S / speed`` (30 emulated s: long enough that a batch in flight stays
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


def timeline_report(
    rows: Sequence[dict[str, Any]], totals: Mapping[str, int], speed: float = 1.0
) -> dict[str, Any]:
    """Summarize the timeline for ``demo-report.json``.

    Parameters
    ----------
    rows : sequence of dict
        :meth:`Timeline.rows`.
    totals : mapping of str to int
        Throttle events by reason over the whole act.
    speed : float
        Emulated seconds per wall second. The recovery's rolling sums span
        :data:`RECOVERY_WINDOW_S` emulated seconds (``RECOVERY_WINDOW_S / speed`` wall
        seconds): a batch in flight is a share of the key's load per emulated second, so
        the window that smooths it is emulated time too.

    Returns
    -------
    dict
        ``throttle_events`` (by reason, and ``key_range`` / ``total``),
        ``time_to_recover_s``, the written rate while throttled and after the recovery
        (events per wall second), and the per-second ``timeline``.
    """
    recover = time_to_recover_s(rows, window_s=RECOVERY_WINDOW_S / speed)
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
    key_range = sum(n for r, n in totals.items() if is_key_range_reason(r))
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
        :meth:`sandbox.scenarios.demo.growth.GrowthLoop.alarm_history` entries (``at_s``) to mark.
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
