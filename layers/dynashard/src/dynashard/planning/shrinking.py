"""Shard shrinking: lower a cool key's count after it stayed cool long enough (pure policy).

Growth answers throttling at once (:mod:`dynashard.planning.scaling`); shrinking is the slow,
cautious way back. The scaler's scheduled sweep (never an alarm) calls
:func:`shrink_cool_keys`, which

1. lists the candidates: the keys whose N is above the default (:class:`ShrinkPort`,
   a paginated ``Scan`` of the small metadata table, see
   :meth:`dynashard.dynamodb.metadata_store.DynamoDBMetadataStore.scan_sharded` for its cost);
2. reads the writers' offered write units per logical key over the cool period, per
   Contributor Insights period (:class:`LoadHistorySource`, the stack's write-load
   rule of :mod:`dynashard.core.load`), and takes each key's *peak* period;
3. decides per key (:func:`plan_shrink`): a key shrinks when its peak load per shard
   stayed below the low-water mark ``shrink_utilization x limit`` for the whole cool
   period, and its last change of N is older than the cooldown. The new count is what
   the peak needs at ``target_utilization`` (:func:`dynashard.planning.shards.plan_shard_count`),
   never below the default count, in one step;
4. applies it through the same conditional update as growth (optimistic lock on
   ``last_updated``); the new count joins ``shard_history``, so readers keep querying
   every shard any count in force could have used (design invariant 3).

Hysteresis: growth plans each shard at ``target_utilization`` (0.8) of the limit,
shrinking waits for ``shrink_utilization`` (by default half of it, 0.4). A key between
the two marks neither grows nor shrinks, and a key just shrunk lands at or below
``target_utilization``, so the next sweep does not shrink it again and its own load
does not throttle it.

Only keys the load source can see are shrunk: counters (``COUNTER#...``) are not in
the writers' report, so their absence says nothing about their load. A key missing
from a report truncated at its top-N contributors is bounded from above by the
smallest reported total (:attr:`LoadHistory.unreported_units_per_s`).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Final, Protocol

from dynashard import names
from dynashard.core.strategies import Strategy
from dynashard.errors import DynashardError, InvalidInputError
from dynashard.planning.scaling import ErrorLog, KeySkip
from dynashard.planning.shards import plan_shard_count

if TYPE_CHECKING:
    from dynashard.core.shard_info import GrowthResult, ShardInfo

_log = logging.getLogger(__name__)

#: Contributor Insights aggregates per minute at best: the period of the load history.
HISTORY_PERIOD_S: Final = 60


# --- what the policy reads ---------------------------------------------------------------
@dataclass(frozen=True)
class LoadHistory:
    """Peak offered load per logical key over a window, from a top-N report.

    Attributes
    ----------
    start, end : datetime
        The window (UTC).
    period_s : int
        Seconds of one datapoint (60 or a multiple).
    peak_units_per_s : mapping of str to float
        Logical key -> its busiest period's units over ``period_s``, units/s.
    unreported_units_per_s : float
        Upper bound of the peak of any key missing from the report, units/s: 0 when
        the report named every contributor, else the smallest reported window total
        over ``period_s`` (a key left out summed no more than that over the window,
        so no single period of it held more).
    """

    start: datetime
    end: datetime
    period_s: int
    peak_units_per_s: Mapping[str, float] = field(default_factory=dict)
    unreported_units_per_s: float = 0.0

    def peak(self, key: str) -> float:
        """Return a key's peak load, units/s (the bound for a key not reported).

        Parameters
        ----------
        key : str
            Logical key.

        Returns
        -------
        float
            Units per second.
        """
        return self.peak_units_per_s.get(key, self.unreported_units_per_s)

    @classmethod
    def from_report(
        cls,
        start: datetime,
        end: datetime,
        period_s: int,
        contributors: Mapping[str, tuple[float, Sequence[float]]],
        unique_count: int | None = None,
    ) -> LoadHistory:
        """Build the history from a Contributor Insights report (``GetInsightRuleReport``).

        Parameters
        ----------
        start, end : datetime
            The report's window.
        period_s : int
            The report's ``Period``, seconds.
        contributors : mapping of str to (float, sequence of float)
            Key -> (``ApproximateAggregateValue`` over the window, the
            ``ApproximateValue`` of each of its ``Datapoints``), units.
        unique_count : int, optional
            ``ApproximateUniqueCount``: how many contributors the window had; more than
            ``len(contributors)`` means the report was cut at its top N.

        Returns
        -------
        LoadHistory
            Peaks in units/s.

        Examples
        --------
        >>> from datetime import UTC, datetime
        >>> t = datetime(2013, 1, 1, tzinfo=UTC)
        >>> h = LoadHistory.from_report(t, t, 60, {"A": (90.0, [60.0, 30.0])}, unique_count=3)
        >>> h.peak("A"), h.peak("B")
        (1.0, 1.5)
        """
        peaks = {
            k: max(points, default=total) / period_s for k, (total, points) in contributors.items()
        }
        truncated = unique_count is not None and unique_count > len(contributors)
        bound = min((t for t, _ in contributors.values()), default=0.0) if truncated else 0.0
        return cls(start, end, period_s, peaks, bound / period_s)


class LoadHistorySource(Protocol):
    """A port that tells each logical key's peak offered write load over a window."""

    def peak_offered_wcu(self, start: datetime, end: datetime, period_s: int) -> LoadHistory:
        """Return the peak write units offered per key, per ``period_s``, in the window.

        Parameters
        ----------
        start, end : datetime
            The window (UTC).
        period_s : int
            Seconds per datapoint (a multiple of 60).

        Returns
        -------
        LoadHistory
            Peaks, units/s.
        """
        ...


class ShrinkPort(Protocol):
    """The part of :class:`~dynashard.Dynashard` the shrink sweep uses."""

    def sharded_keys(self) -> list[ShardInfo]:
        """Return the keys whose N is above the default."""
        ...

    def shrink(self, key: str, target: int) -> GrowthResult:
        """Lower a key's N to ``target`` (conditional, honours the cooldown)."""
        ...


class ShrinkSettings(Protocol):
    """The settings the shrink policy reads (``lambda_kit.settings.FunctionSettings`` is one).

    Attributes
    ----------
    default_shards : int
        N of a key never seen; no key shrinks below it.
    max_shards : int
        Cap on N.
    partition_wcu : float
        Per-partition write limit, WCU/s.
    target_utilization : float
        Share of the limit a shard is planned to carry (growth and the shrunk count).
    shrink_utilization : float or None
        Low-water mark, share of the limit, in [0, ``target_utilization``); 0 is off;
        None is half of ``target_utilization`` (:func:`low_water_utilization`).
    shrink_cool_period_s : float
        Seconds the peak load must stay below the low-water mark.
    cooldown_s : float
        Seconds since the last change of N before another.
    """

    @property
    def default_shards(self) -> int: ...  # noqa: D102

    @property
    def max_shards(self) -> int: ...  # noqa: D102

    @property
    def partition_wcu(self) -> float: ...  # noqa: D102

    @property
    def target_utilization(self) -> float: ...  # noqa: D102

    @property
    def shrink_utilization(self) -> float | None: ...  # noqa: D102

    @property
    def shrink_cool_period_s(self) -> float: ...  # noqa: D102

    @property
    def cooldown_s(self) -> float: ...  # noqa: D102


# --- what the policy decides -------------------------------------------------------------
@dataclass(frozen=True)
class ShrinkPlan:
    """The decision for one candidate key.

    Attributes
    ----------
    key : str
        Logical key.
    current : int
        N in force.
    target : int
        N to shrink to; equal to ``current`` when the key is kept.
    peak_units_per_s : float
        Its peak offered load in the cool period, WCU/s.
    reason : str
        Why it is kept, or ``"cool"``.
    """

    key: str
    current: int
    target: int
    peak_units_per_s: float
    reason: str

    @property
    def shrinks(self) -> bool:
        """bool: True when the plan lowers N."""
        return self.target < self.current


@dataclass(frozen=True)
class KeyShrink:
    """One logical key whose shard count was lowered.

    Attributes
    ----------
    key : str
        Logical key.
    previous, current : int
        N before and after.
    peak_units_per_s : float
        The peak load of the cool period it was planned for, WCU/s.
    """

    key: str
    previous: int
    current: int
    peak_units_per_s: float

    def to_dict(self) -> dict[str, Any]:
        """Return ``{"key", "previous", "current", "peak_units_per_s"}`` (peak to 0.1)."""
        return {
            "key": self.key,
            "previous": self.previous,
            "current": self.current,
            "peak_units_per_s": round(self.peak_units_per_s, 1),
        }


@dataclass(frozen=True)
class ShrinkOutcome:
    """What one shrink sweep did.

    Attributes
    ----------
    candidates : int
        Keys above the default count.
    shrunk : tuple of KeyShrink
        Keys whose N was lowered, by key.
    kept : tuple of KeySkip
        Candidates left as they were, and why, by key.
    errors : tuple of str
        Keys whose shrink failed (also in ``kept``).
    """

    candidates: int = 0
    shrunk: tuple[KeyShrink, ...] = ()
    kept: tuple[KeySkip, ...] = ()
    errors: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Return ``{"candidates", "shrunk": [...], "kept": [{"key", "reason"}], "errors"}``."""
        return {
            "candidates": self.candidates,
            "shrunk": [s.to_dict() for s in self.shrunk],
            "kept": [k.to_dict() for k in self.kept],
            "errors": list(self.errors),
        }


# --- the policy --------------------------------------------------------------------------
def low_water_utilization(settings: ShrinkSettings) -> float:
    """Return the low-water mark in force, a share of the partition limit.

    Parameters
    ----------
    settings : ShrinkSettings
        ``shrink_utilization`` and ``target_utilization``.

    Returns
    -------
    float
        ``shrink_utilization``, or half of ``target_utilization`` when unset.

    Raises
    ------
    InvalidInputError
        If the mark is not in [0, ``target_utilization``).

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> low_water_utilization(SimpleNamespace(shrink_utilization=None, target_utilization=0.8))
    0.4
    """
    low = settings.shrink_utilization
    low = settings.target_utilization / 2 if low is None else low
    if not 0 <= low < settings.target_utilization:
        raise InvalidInputError(
            "shrink_utilization",
            f"must be in [0, target_utilization={settings.target_utilization}), got {low}",
        )
    return low


def plan_shrink(
    info: ShardInfo, peak_units_per_s: float, now_s: float, settings: ShrinkSettings
) -> ShrinkPlan:
    """Decide whether one key shrinks, and to what.

    Parameters
    ----------
    info : ShardInfo
        The key's metadata (N, ``last_updated``).
    peak_units_per_s : float
        Its peak offered write load over the cool period, WCU/s, ``>= 0``.
    now_s : float
        Epoch seconds.
    settings : ShrinkSettings
        Marks, cool period, cooldown, default count.

    Returns
    -------
    ShrinkPlan
        ``target < current`` when the key shrinks: ``max(default_shards,
        ceil(peak / (limit x target_utilization)))``. Kept (``target == current``) when
        N is at the default, shrinking is off, the key is a counter, N changed within
        the cooldown, the peak is not below ``current x limit x shrink_utilization``
        (the low-water mark), or the peak needs N anyway.

    Raises
    ------
    InvalidInputError
        If the peak is negative or not finite, or the marks are out of order.

    Examples
    --------
    Eight shards of 1,000 WCU/s, marks 0.8 / 0.5: a peak of 1,500 WCU/s is below the
    low-water mark of 4,000 and needs ceil(1500 / 800) = 2 shards.

    >>> from types import SimpleNamespace
    >>> from dynashard.dynamodb.metadata_store import ShardInfo
    >>> s = SimpleNamespace(default_shards=1, max_shards=1000, partition_wcu=1000.0,
    ...     target_utilization=0.8, shrink_utilization=0.5, shrink_cool_period_s=1800.0,
    ...     cooldown_s=60.0)
    >>> plan_shrink(ShardInfo("K", 8, 0, ((0, 8),)), 1500.0, 3600.0, s).target
    2
    >>> plan_shrink(ShardInfo("K", 8, 0, ((0, 8),)), 4000.0, 3600.0, s).reason
    'peak 4000.0 WCU/s is not below the low-water mark 4000.0 WCU/s (8 x 1000 x 0.5)'
    """
    if peak_units_per_s < 0 or not math.isfinite(peak_units_per_s):
        raise InvalidInputError(
            "peak_units_per_s", f"must be finite and >= 0, got {peak_units_per_s}"
        )
    low = low_water_utilization(settings)
    current = info.number_of_shards

    def keep(reason: str) -> ShrinkPlan:
        return ShrinkPlan(info.key, current, current, peak_units_per_s, reason)

    if current <= settings.default_shards:
        return keep(f"at the default count {settings.default_shards}")
    if low == 0:
        return keep("shrinking is off (shrink_utilization 0)")
    if info.key.startswith(names.COUNTER_PREFIX):
        return keep("counters are not in the writers' offered-load report")
    if info.strategy is Strategy.ORDERED:
        return keep("an ordered key's count is its range layout's, not its load's")
    age = now_s - info.last_updated
    if settings.cooldown_s > 0 and age < settings.cooldown_s:
        return keep(f"changed {age:.0f} s ago, cooldown {settings.cooldown_s:g} s")
    limit = settings.partition_wcu
    low_water = current * limit * low
    if peak_units_per_s >= low_water:
        return keep(
            f"peak {peak_units_per_s:.1f} WCU/s is not below the low-water mark "
            f"{low_water:.1f} WCU/s ({current} x {limit:g} x {low:g})"
        )
    needed = plan_shard_count(
        1, peak_units_per_s, limit, settings.target_utilization, settings.max_shards
    )
    target = max(settings.default_shards, needed)
    if target >= current:
        return keep(f"peak {peak_units_per_s:.1f} WCU/s needs {current} shard(s)")
    return ShrinkPlan(info.key, current, target, peak_units_per_s, "cool")


def shrink_cool_keys(
    now: datetime,
    port: ShrinkPort,
    history: LoadHistorySource,
    settings: ShrinkSettings,
    log: ErrorLog | None = None,
) -> ShrinkOutcome:
    """Shrink every key above the default count whose load stayed cool (the sweep's part).

    Parameters
    ----------
    now : datetime
        The sweep's time (UTC); the cool period is ``[now - shrink_cool_period_s, now]``.
    port : ShrinkPort
        Candidates and the conditional shrink.
    history : LoadHistorySource
        Peak offered load per key over the cool period.
    settings : ShrinkSettings
        Marks, cool period, cooldown, default count.
    log : ErrorLog, optional
        Where a failed shrink is logged (``"shrink failed"`` with the key); default this
        module's logger.

    Returns
    -------
    ShrinkOutcome
        Keys shrunk and kept. A failed shrink (other than a lost cooldown race, which
        comes back as a kept key) is listed in ``errors``, not raised, so one key
        cannot stop the others. No load is read when there is no candidate or
        shrinking is off.

    Raises
    ------
    Exception
        Whatever the ports raise while listing candidates or reading the load
        (``MetadataError``, ``botocore.exceptions.ClientError``).
    """
    log = log if log is not None else _log
    if low_water_utilization(settings) == 0:
        return ShrinkOutcome()
    candidates = sorted(port.sharded_keys(), key=lambda info: info.key)
    if not candidates:
        return ShrinkOutcome()
    start = now - timedelta(seconds=settings.shrink_cool_period_s)
    load = history.peak_offered_wcu(start, now, HISTORY_PERIOD_S)
    shrunk: list[KeyShrink] = []
    kept: list[KeySkip] = []
    errors: list[str] = []
    for info in candidates:
        plan = plan_shrink(info, load.peak(info.key), now.timestamp(), settings)
        if not plan.shrinks:
            kept.append(KeySkip(info.key, plan.reason))
            continue
        try:
            result = port.shrink(info.key, plan.target)
        except DynashardError as exc:
            log.exception("shrink failed", extra={"key": info.key})
            kept.append(KeySkip(info.key, f"error: {exc.message}"))
            errors.append(info.key)
            continue
        if result.changed:
            shrunk.append(
                KeyShrink(info.key, result.previous, result.current, plan.peak_units_per_s)
            )
        else:
            kept.append(KeySkip(info.key, result.reason))
    return ShrinkOutcome(len(candidates), tuple(shrunk), tuple(kept), tuple(errors))
