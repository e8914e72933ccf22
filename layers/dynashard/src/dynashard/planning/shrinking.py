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

Never on missing data: a key absent from the write-load report is *unknown*, not
idle, and is kept (the report only sees what the ingest functions logged: a key
written by other means, a counter (``COUNTER#...``), a key only read, or a key cut
from a top-N report are all absent). One exception, on evidence: a key the scaler
grew on the write-load report's own figure (``grown_for`` holds ``write-load``,
:data:`~dynashard.core.shard_info.WRITE_LOAD_GROWTH`) was named by that report, so
the ingest functions log its writes; absent from a later report, it wrote no more
than the report's smallest named total, so its peak is bounded
(:meth:`LoadHistory.bound`) and the key shrinks when that bound is below its
low-water mark. A report names at most 100 keys, so with hundreds of keys hot that
bound is far above any mark; the stack therefore splits the write-load rule into
parts by a hash of the key (:func:`dynashard.core.load.write_load_part`), one report
per part, and a key is bounded by its own part's 100th contributor
(:meth:`LoadHistory.from_parts`). A key grown otherwise (estimated from throttling, in
band by a writer, or before ``write-load`` was recorded) keeps the old rule: absent
is unknown, and if it stopped receiving writes altogether it keeps its count until an
operator lowers it (``dynashard resize``).

Never on an empty report either: a report that names no contributor is what the
pipeline gives right after the rules are created or renamed (changing
``write_load_parts`` renames them all), when the ingest functions' INFO lines are not
logged, when a rule is disabled, or while Contributor Insights lags. So a report is
evidence only when it names a contributor and its datapoints show the rule counting
from the window's first period to within :data:`REPORT_LAG_S` of its end
(:func:`report_gap`); otherwise no key of it shrinks, named or not, the sweep logs a
warning and says why in :attr:`ShrinkOutcome.no_evidence`, and the scaler counts it
(``WriteLoadReportsWithoutEvidence``). A live report's bound is the smallest total it
names (the top-N's floor), never 0: ``ApproximateUniqueCount`` is approximate, so no
report is taken as naming every key.

Reads too: the write-load report says nothing of reads, and a key grown by a read
key-range alarm (``ShardInfo.grown_for`` holds ``read``) is shrunk only when a
:class:`ReadLoadHistorySource` reports its peak read load and that load is below the
read low-water mark ``current x partition_rcu x shrink_utilization``; whenever a read
history is given, every key's shrunk count also carries its peak reads. Without one, a
key grown for reads keeps its count (growth and shrink would otherwise alternate: the
read alarm grows it, the next sweep sees no writes and shrinks it back).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Final, Protocol

from dynashard import names
from dynashard.core.load import write_load_part
from dynashard.core.shard_info import WRITE_LOAD_GROWTH
from dynashard.core.strategies import Strategy
from dynashard.errors import DynashardError, InvalidInputError
from dynashard.planning.scaling import ErrorLog, KeySkip
from dynashard.planning.shards import ShardCountSettings, plan_shard_count

if TYPE_CHECKING:
    from dynashard.core.shard_info import GrowthResult, ShardInfo

_log = logging.getLogger(__name__)

#: Contributor Insights aggregates per minute at best: the period of the load history.
HISTORY_PERIOD_S: Final = 60

#: Seconds a write-load report's newest datapoint may lag the window's end and the
#: report still count as evidence (:func:`report_gap`). A chosen allowance for the
#: delay between a log line and its rule's datapoint (CloudWatch Logs ingestion, then
#: the rule's evaluation), not an AWS-documented figure: a rule that has seen nothing
#: for longer is taken as disabled, unfed or lagging, and no key shrinks on it.
REPORT_LAG_S: Final = 300.0


def report_gap(
    start: datetime,
    end: datetime,
    period_s: int,
    named: int,
    active_periods: Sequence[datetime] | None,
    max_lag_s: float = REPORT_LAG_S,
) -> str:
    """Say why a write-load report is no evidence of the load over its window ("" if it is).

    Absence of evidence is not evidence of idleness: a report that names nobody is
    what the pipeline gives when the rule was just created or renamed (changing
    ``write_load_parts`` renames them all), when the ingest functions' INFO lines are
    not logged, when the rule is disabled, or while Contributor Insights lags. A
    report is evidence only when it names a contributor and, given its datapoints,
    they show the rule counting at both ends of the window.

    Parameters
    ----------
    start, end : datetime
        The window (UTC).
    period_s : int
        The report's ``Period``, seconds.
    named : int
        Contributors the report names (``Contributors``).
    active_periods : sequence of datetime or None
        ``Timestamp`` (period start) of each of the report's datapoints that counted
        something (``MetricDatapoints`` with ``UniqueContributors`` above 0, and the
        contributors' own ``Datapoints`` above 0); None when the source gives no
        time series (then only ``named`` is judged).
    max_lag_s : float
        How long before ``end`` the newest datapoint's period may have ended
        (:data:`REPORT_LAG_S`).

    Returns
    -------
    str
        "" when the report is evidence; else why not: no contributor, no datapoint, a
        first datapoint after the window's first period (the rule did not exist, or
        saw no line, for the whole window), or a newest datapoint older than the lag
        allowance (the rule stopped counting).

    Examples
    --------
    >>> from datetime import UTC, datetime, timedelta
    >>> t = datetime(2013, 1, 1, tzinfo=UTC)
    >>> report_gap(t, t + timedelta(minutes=30), 60, 0, [])
    'the report names no contributor and has no datapoint'
    >>> report_gap(t, t + timedelta(minutes=30), 60, 2, [t, t + timedelta(minutes=29)])
    ''
    """
    if named == 0:
        none = " and has no datapoint" if active_periods is not None and not active_periods else ""
        return f"the report names no contributor{none}"
    if active_periods is None:
        return ""
    if not active_periods:
        return "the report has no datapoint in the window"
    first, last = min(active_periods), max(active_periods)
    if first >= start + timedelta(seconds=period_s):
        return (
            f"its first datapoint ({first.isoformat()}) is after the window's first period "
            f"(from {start.isoformat()}): the rule did not count the whole window "
            "(created or renamed since, or its lines not logged)"
        )
    lag = (end - last).total_seconds() - period_s
    if lag > max_lag_s:
        return (
            f"its newest datapoint ({last.isoformat()}) ended {lag:.0f} s before the "
            f"window's end, more than {max_lag_s:g} s: the rule stopped counting "
            "(disabled, its lines not logged, or Contributor Insights lagging)"
        )
    return ""


# --- what the policy reads ---------------------------------------------------------------
@dataclass(frozen=True)
class LoadHistory:
    """Peak offered load per logical key over a window, from one or more top-N reports.

    Attributes
    ----------
    start, end : datetime
        The window (UTC).
    period_s : int
        Seconds of one datapoint (60 or a multiple).
    peak_units_per_s : mapping of str to float
        Logical key -> its busiest period's units over ``period_s``, units/s.
    unreported_units_per_s : float
        Upper bound of the peak of any key missing from the report, units/s: the
        smallest reported window total (the top-N's floor) over ``period_s`` (a key
        left out summed no more than that over the window, so no single period of it
        held more), whether or not the report was cut: ``ApproximateUniqueCount`` is
        approximate, so a report is never taken as whole. Over several parts: the
        largest of their bounds. ``math.inf`` (the default) when nothing is known of
        the keys it leaves out: a history that does not state a bound gives none, and
        a report that is no evidence (:attr:`gaps`) has none, so no absent key is
        ever taken for idle by omission.
    part_bounds : tuple of float
        Per part of the key space, that part's report's bound (as
        ``unreported_units_per_s``), part 0 first; empty for one report over every
        key. A key absent from its part's report is bounded by its own part's
        (:meth:`bound`, :func:`dynashard.core.load.write_load_part`).
    gaps : tuple of str
        Why a report is no evidence of the load (:func:`report_gap`), "" for one that
        is: one entry for one report, else one per part, part 0 first; empty when
        every report is evidence. No key of a report that is no evidence shrinks,
        named or not (:meth:`gap`).
    """

    start: datetime
    end: datetime
    period_s: int
    peak_units_per_s: Mapping[str, float] = field(default_factory=dict)
    unreported_units_per_s: float = math.inf
    part_bounds: tuple[float, ...] = ()
    gaps: tuple[str, ...] = ()

    def gap(self, key: str) -> str:
        """Return why the report that covers a key is no evidence of its load ("" if it is).

        Parameters
        ----------
        key : str
            Logical key.

        Returns
        -------
        str
            Its part's entry of :attr:`gaps` (the one entry with one report); "" when
            :attr:`gaps` is empty.
        """
        if not self.gaps:
            return ""
        if len(self.gaps) == 1:
            return self.gaps[0]
        return self.gaps[write_load_part(key, len(self.gaps))]

    def bound(self, key: str) -> float:
        """Return the upper bound of a key's peak should the reports leave it out, units/s.

        Parameters
        ----------
        key : str
            Logical key.

        Returns
        -------
        float
            Its part's bound (:attr:`part_bounds`), or :attr:`unreported_units_per_s`
            with one report.

        Examples
        --------
        >>> from datetime import UTC, datetime
        >>> t = datetime(2013, 1, 1, tzinfo=UTC)
        >>> h = LoadHistory(t, t, 60, {}, 9.0, part_bounds=(9.0, 0.5))
        >>> from dynashard.core.load import write_load_part
        >>> write_load_part("COOL", 2), h.bound("COOL")
        (1, 0.5)
        """
        if self.part_bounds:
            return self.part_bounds[write_load_part(key, len(self.part_bounds))]
        return self.unreported_units_per_s

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
        return self.peak_units_per_s.get(key, self.bound(key))

    @classmethod
    def from_report(
        cls,
        start: datetime,
        end: datetime,
        period_s: int,
        contributors: Mapping[str, tuple[float, Sequence[float]]],
        active_periods: Sequence[datetime] | None = None,
        *,
        rule: str = "",
        max_lag_s: float = REPORT_LAG_S,
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
        active_periods : sequence of datetime, optional
            Start of each period in which the report counted something (see
            :func:`report_gap`); None when the source gives no time series.
        rule : str
            The rule's name, for the gap's message.
        max_lag_s : float
            The newest datapoint's allowed lag (:data:`REPORT_LAG_S`).

        Returns
        -------
        LoadHistory
            Peaks in units/s, and any key left out bounded by the smallest total named
            (the top-N's floor). A report that is no evidence (:func:`report_gap`:
            it names nobody, or its datapoints do not span the window) gives no peak
            and no bound, and says why in :attr:`gaps`: an empty report is not "every
            key idle".

        Examples
        --------
        >>> from datetime import UTC, datetime
        >>> t = datetime(2013, 1, 1, tzinfo=UTC)
        >>> h = LoadHistory.from_report(t, t, 60, {"A": (90.0, [60.0, 30.0])})
        >>> h.peak("A"), h.peak("B")
        (1.0, 1.5)
        >>> e = LoadHistory.from_report(t, t, 60, {}, [], rule="r")
        >>> e.peak("B"), e.gap("B")
        (inf, 'r: the report names no contributor and has no datapoint')
        """
        gap = report_gap(start, end, period_s, len(contributors), active_periods, max_lag_s)
        if gap:
            return cls(start, end, period_s, gaps=(f"{rule}: {gap}" if rule else gap,))
        peaks = {
            k: max(points, default=total) / period_s for k, (total, points) in contributors.items()
        }
        floor = min(total for total, _ in contributors.values())
        return cls(start, end, period_s, peaks, floor / period_s)

    @classmethod
    def from_parts(cls, parts: Sequence[LoadHistory]) -> LoadHistory:
        """Join the histories of the parts of the key space, part 0 first.

        Each part's report names its own keys (every key is in exactly one part,
        :func:`dynashard.core.load.write_load_part`), so the peaks are their union and
        each part keeps its own bound (:attr:`part_bounds`).

        Parameters
        ----------
        parts : sequence of LoadHistory
            One per part, in part order, over the same window and period.

        Returns
        -------
        LoadHistory
            The joined history; the one history itself when there is one part.

        Raises
        ------
        ValueError
            If ``parts`` is empty.

        Examples
        --------
        >>> from datetime import UTC, datetime
        >>> t = datetime(2013, 1, 1, tzinfo=UTC)
        >>> a = LoadHistory(t, t, 60, {"A": 5.0}, 2.0)
        >>> b = LoadHistory(t, t, 60, {"B": 900.0}, 0.0)
        >>> h = LoadHistory.from_parts([a, b])
        >>> sorted(h.peak_units_per_s), h.part_bounds, h.unreported_units_per_s
        (['A', 'B'], (2.0, 0.0), 2.0)
        """
        if not parts:
            raise ValueError("no part to join")
        if len(parts) == 1:
            return parts[0]
        peaks: dict[str, float] = {}
        for part in parts:
            peaks.update(part.peak_units_per_s)
        bounds = tuple(p.unreported_units_per_s for p in parts)
        gaps = tuple("; ".join(g for g in p.gaps if g) for p in parts)
        first = parts[0]
        return cls(
            first.start,
            first.end,
            first.period_s,
            peaks,
            max(bounds),
            bounds,
            gaps if any(gaps) else (),
        )


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


class ReadLoadHistorySource(Protocol):
    """A port that tells each logical key's peak read load over a window (RCU/s)."""

    def peak_read_rcu(self, start: datetime, end: datetime, period_s: int) -> LoadHistory:
        """Return the peak read units consumed per key, per ``period_s``, in the window.

        Parameters
        ----------
        start, end : datetime
            The window (UTC).
        period_s : int
            Seconds per datapoint (a multiple of 60).

        Returns
        -------
        LoadHistory
            Peaks, RCU/s; a key absent from it has no read evidence (kept if it needs it).
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


class ShrinkSettings(ShardCountSettings, Protocol):
    """The settings the shrink policy reads (``lambda_kit.settings.FunctionSettings`` is one).

    The limits, target utilization and cap of :class:`ShardCountSettings` (the read
    limit read only when a read-load figure is given; the target utilization plans
    the shrunk count as it plans growth), and:

    Attributes
    ----------
    default_shards : int
        N of a key never seen; no key shrinks below it.
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
        Its peak offered load in the cool period, WCU/s (its bound when ``bounded``).
    reason : str
        Why it is kept, or ``"cool"``.
    bounded : bool
        True when the key was absent from its write-load report and
        ``peak_units_per_s`` is the bound that report gives (:meth:`LoadHistory.bound`).
    """

    key: str
    current: int
    target: int
    peak_units_per_s: float
    reason: str
    bounded: bool = False

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
    bounded : bool
        True when that peak is the bound of a report that left the key out.
    """

    key: str
    previous: int
    current: int
    peak_units_per_s: float
    bounded: bool = False

    def to_dict(self) -> dict[str, Any]:
        """Return ``{"key", "previous", "current", "peak_units_per_s"}`` (peak to 0.1).

        A shrink planned on a bound also has ``"bounded": true``.
        """
        out: dict[str, Any] = {
            "key": self.key,
            "previous": self.previous,
            "current": self.current,
            "peak_units_per_s": round(self.peak_units_per_s, 1),
        }
        if self.bounded:
            out["bounded"] = True
        return out


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
    no_evidence : tuple of str
        Why each write-load report read was no evidence (:attr:`LoadHistory.gaps`,
        blanks dropped): empty when every report was; the keys it covers are kept.
    """

    candidates: int = 0
    shrunk: tuple[KeyShrink, ...] = ()
    kept: tuple[KeySkip, ...] = ()
    errors: tuple[str, ...] = ()
    no_evidence: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Return ``{"candidates", "shrunk": [...], "kept": [{"key", "reason"}], "errors"}``.

        A sweep that read a report that is no evidence also has ``"no_evidence"``: the
        list of :attr:`no_evidence`.
        """
        out: dict[str, Any] = {
            "candidates": self.candidates,
            "shrunk": [s.to_dict() for s in self.shrunk],
            "kept": [k.to_dict() for k in self.kept],
            "errors": list(self.errors),
        }
        if self.no_evidence:
            out["no_evidence"] = list(self.no_evidence)
        return out


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
    info: ShardInfo,
    peak_units_per_s: float | None,
    now_s: float,
    settings: ShrinkSettings,
    read_peak_units_per_s: float | None = None,
    *,
    bounded: bool = False,
    no_evidence: str = "",
) -> ShrinkPlan:
    """Decide whether one key shrinks, and to what.

    Parameters
    ----------
    info : ShardInfo
        The key's metadata (N, ``last_updated``, ``grown_for``).
    peak_units_per_s : float or None
        Its peak offered write load over the cool period, WCU/s, ``>= 0``; None when
        the key is absent from the load report (unknown: kept).
    now_s : float
        Epoch seconds.
    settings : ShrinkSettings
        Marks, cool period, cooldown, default count.
    read_peak_units_per_s : float or None
        Its peak read load over the cool period, RCU/s, when a read-load history
        reported it; None: no read evidence (a key grown for reads is then kept).
    bounded : bool
        True when ``peak_units_per_s`` is not the key's measured peak but the bound of
        a report that left it out (:meth:`LoadHistory.bound`): planned the same way,
        said so in the plan.
    no_evidence : str
        Why the write-load report that covers the key is no evidence of its load
        (:meth:`LoadHistory.gap`); "" when it is. Not "": the key is kept, whatever
        ``peak_units_per_s`` says.

    Returns
    -------
    ShrinkPlan
        ``target < current`` when the key shrinks: ``max(default_shards,
        ceil(peak / (partition_wcu x target_utilization)), ceil(read peak /
        (partition_rcu x target_utilization)))``. Kept (``target == current``) when N is
        at the default, shrinking is off, the key is a counter or ordered, N changed
        within the cooldown, its write load is unknown (absent from the report, or the
        report is no evidence: ``no_evidence``), it was grown for reads and there is
        no read figure, a peak is not below its low-water mark (``current x limit x
        shrink_utilization``), or the peaks need N anyway. ``peak_units_per_s`` is 0
        for a kept key whose load is unknown.

    Raises
    ------
    InvalidInputError
        If a peak is negative or not finite, or the marks are out of order.

    Examples
    --------
    Eight shards of 1,000 WCU/s, marks 0.8 / 0.5: a peak of 1,500 WCU/s is below the
    low-water mark of 4,000 and needs ceil(1500 / 800) = 2 shards.

    >>> from types import SimpleNamespace
    >>> from dynashard.dynamodb.metadata_store import ShardInfo
    >>> s = SimpleNamespace(default_shards=1, max_shards=1000, partition_wcu=1000.0,
    ...     partition_rcu=3000.0, target_utilization=0.8, shrink_utilization=0.5,
    ...     shrink_cool_period_s=1800.0, cooldown_s=60.0)
    >>> plan_shrink(ShardInfo("K", 8, 0, ((0, 8),)), 1500.0, 3600.0, s).target
    2
    >>> plan_shrink(ShardInfo("K", 8, 0, ((0, 8),)), 4000.0, 3600.0, s).reason
    'peak 4000.0 WCU/s is not below the low-water mark 4000.0 WCU/s (8 x 1000 x 0.5)'

    A key absent from the report is unknown, not idle; so is every key of a report
    that is no evidence:

    >>> plan_shrink(ShardInfo("K", 8, 0, ((0, 8),)), None, 3600.0, s).shrinks
    False
    >>> plan_shrink(ShardInfo("K", 8, 0, ((0, 8),)), 0.0, 3600.0, s, no_evidence="empty").reason
    'no evidence in its write-load report (empty): its load is unknown, not idle'
    """
    for name, value in (
        ("peak_units_per_s", peak_units_per_s),
        ("read_peak_units_per_s", read_peak_units_per_s),
    ):
        if value is not None and (value < 0 or not math.isfinite(value)):
            raise InvalidInputError(name, f"must be finite and >= 0, got {value}")
    low = low_water_utilization(settings)
    current = info.number_of_shards
    peak = 0.0 if peak_units_per_s is None else peak_units_per_s

    def keep(reason: str) -> ShrinkPlan:
        return ShrinkPlan(info.key, current, current, peak, reason, bounded)

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
    if no_evidence:
        return keep(
            f"no evidence in its write-load report ({no_evidence}): its load is unknown, not idle"
        )
    if peak_units_per_s is None:
        return keep(
            "absent from the write-load report of the cool period: its load is unknown, not idle"
        )
    if "read" in info.grown_for and read_peak_units_per_s is None:
        return keep("grown for read key-range throttling, and no read-load figure shows it cool")
    what = "bound (absent from its write-load report)" if bounded else "peak"
    needed = [
        _needed(current, peak, settings.partition_wcu, "WCU/s", low, settings, what),
    ]
    if read_peak_units_per_s is not None:
        needed.append(
            _needed(current, read_peak_units_per_s, settings.partition_rcu, "RCU/s", low, settings)
        )
    for count_or_reason in needed:
        if isinstance(count_or_reason, str):
            return keep(count_or_reason)
    target = max([settings.default_shards, *(n for n in needed if isinstance(n, int))])
    if target >= current:
        return keep(f"{what} {peak:.1f} WCU/s needs {current} shard(s)")
    return ShrinkPlan(info.key, current, target, peak, "cool", bounded)


def _needed(
    current: int,
    peak: float,
    limit: float,
    unit: str,
    low: float,
    settings: ShrinkSettings,
    what: str = "peak",
) -> int | str:
    """Return the count a peak needs, or why it is not below its low-water mark."""
    low_water = current * limit * low
    if peak >= low_water:
        return (
            f"{what} {peak:.1f} {unit} is not below the low-water mark "
            f"{low_water:.1f} {unit} ({current} x {limit:g} x {low:g})"
        )
    return plan_shard_count(1, peak, limit, settings.target_utilization, settings.max_shards)


def shrink_cool_keys(
    now: datetime,
    port: ShrinkPort,
    history: LoadHistorySource,
    settings: ShrinkSettings,
    log: ErrorLog | None = None,
    read_history: ReadLoadHistorySource | None = None,
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
        Where a failed shrink is logged (``"shrink failed"`` with the key), and a
        write-load report that is no evidence (a warning, ``"write-load report is no
        evidence"`` with the reasons); default this module's logger.
    read_history : ReadLoadHistorySource, optional
        Peak read load per key over the cool period. Without it a key grown for reads
        (``ShardInfo.grown_for``) is kept; with it every key must be cool on reads too.

    Returns
    -------
    ShrinkOutcome
        Keys shrunk and kept. A failed shrink (other than a lost cooldown race, which
        comes back as a kept key) is listed in ``errors``, not raised, so one key
        cannot stop the others. No load is read when there is no candidate or
        shrinking is off. A report that is no evidence (:meth:`LoadHistory.gap`)
        shrinks none of its keys and is listed in ``no_evidence``.

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
    reads = (
        read_history.peak_read_rcu(start, now, HISTORY_PERIOD_S)
        if read_history is not None
        else None
    )
    no_evidence = tuple(g for g in load.gaps if g)
    if no_evidence:
        # Absence of evidence is not evidence of idleness: said, and counted by the
        # scaler (the ``WriteLoadReportsWithoutEvidence`` metric), never acted on.
        log.warning("write-load report is no evidence", extra={"no_evidence": list(no_evidence)})
    shrunk: list[KeyShrink] = []
    kept: list[KeySkip] = []
    errors: list[str] = []
    for info in candidates:
        # A key absent from a report is unknown (None), never idle, unless the report
        # named it when it grew: then its writes are logged, and its part's report
        # bounds what it can have written.
        peak = load.peak_units_per_s.get(info.key)
        bounded = (
            peak is None
            and WRITE_LOAD_GROWTH in info.grown_for
            and math.isfinite(load.bound(info.key))
        )
        plan = plan_shrink(
            info,
            load.bound(info.key) if bounded else peak,
            now.timestamp(),
            settings,
            None if reads is None else reads.peak_units_per_s.get(info.key),
            bounded=bounded,
            no_evidence=load.gap(info.key),
        )
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
                KeyShrink(info.key, result.previous, result.current, plan.peak_units_per_s, bounded)
            )
        else:
            kept.append(KeySkip(info.key, result.reason))
    return ShrinkOutcome(len(candidates), tuple(shrunk), tuple(kept), tuple(errors), no_evidence)
