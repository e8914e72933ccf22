"""One scaler run: grow the keys behind the alarms due, then shrink the cool ones (pure).

The scaler function is invoked two ways: by a key-range throttling alarm (Lambda alarm
action), which only grows, and by its EventBridge schedule (the sweep), which handles
every alarm still in ``ALARM`` as if it had just fired (CloudWatch invokes an action
only on a state change) and then shrinks the keys whose offered load stayed cool.
:func:`sweep` sequences the two policies, :func:`~dynashard.planning.scaling.handle_alarm`
and :func:`~dynashard.planning.shrinking.shrink_cool_keys`, for both; the function only
chooses the alarms that are due and builds the ports.

The ports are given as factories and built only when there is work for them: most
sweeps find nothing, and a cold one then builds no DynamoDB or CloudWatch client.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from dynashard import names
from dynashard.planning.scaling import (
    AlarmOutcome,
    ScalingSettings,
    handle_alarm,
    ignored_outcome,
)
from dynashard.planning.shrinking import ShrinkOutcome, ShrinkSettings, shrink_cool_keys

if TYPE_CHECKING:
    from dynashard.planning.scaling import (
        Alarm,
        ErrorLog,
        HotKeySource,
        KeyGrowth,
        OfferedLoadSource,
        ScalerPort,
    )
    from dynashard.planning.shrinking import (
        LoadHistorySource,
        ReadLoadHistorySource,
        ShrinkPort,
    )


class SweepSettings(ScalingSettings, ShrinkSettings, Protocol):
    """The settings of a scaler run: the growth policy's and the shrink policy's."""


@dataclass(frozen=True)
class ScalerRun:
    """What one scaler run did.

    Attributes
    ----------
    alarms : tuple of AlarmOutcome
        One per alarm handled, in the order given.
    shrink : ShrinkOutcome
        The shrink of cool keys (empty when the run did not shrink).
    """

    alarms: tuple[AlarmOutcome, ...] = ()
    shrink: ShrinkOutcome = field(default_factory=ShrinkOutcome)

    @property
    def grown(self) -> list[KeyGrowth]:
        """Every key grown, over all alarms."""
        return [g for outcome in self.alarms for g in outcome.grown]

    @property
    def errors(self) -> list[str]:
        """Every key whose growth or shrink failed (the cooldown is not a failure)."""
        return [e for outcome in self.alarms for e in outcome.errors] + list(self.shrink.errors)

    def to_dict(self, alarm: bool, now: datetime) -> dict[str, Any]:
        """Return the run's report.

        Parameters
        ----------
        alarm : bool
            True for a run on an alarm's event (its one outcome is the report), False
            for a sweep.
        now : datetime
            The run's time (UTC).

        Returns
        -------
        dict
            For an alarm, :meth:`AlarmOutcome.to_dict`; for a sweep, ``{"sweep":
            ISO-8601 time, "alarms": [...], "shrink":`` :meth:`ShrinkOutcome.to_dict` ``}``.
        """
        reports = [o.to_dict() for o in self.alarms]
        if alarm:
            return reports[0]
        return {"sweep": now.isoformat(), "alarms": reports, "shrink": self.shrink.to_dict()}


def sweep(
    now: datetime,
    due: Sequence[Alarm],
    *,
    port: Callable[[], ScalerPort],
    hot_keys: Callable[[], HotKeySource],
    offered_load: Callable[[], OfferedLoadSource | None],
    history: LoadHistorySource | None,
    shrinker: Callable[[], ShrinkPort],
    settings: SweepSettings,
    log: ErrorLog | None = None,
    read_history: ReadLoadHistorySource | None = None,
    gsi_name: str | None = names.GSI1_NAME,
) -> ScalerRun:
    """Grow the keys behind every alarm due, then shrink cool keys when a history is given.

    Parameters
    ----------
    now : datetime
        The run's time (UTC): the alarm event's or the schedule's.
    due : sequence of Alarm
        The alarms to handle: the one that fired, or those a sweep found in ``ALARM``.
    port, hot_keys, offered_load : callable
        Factories of the growth policy's ports (shard metadata, the hot keys of an
        alarm's window, the writers' offered load); called once, and only when an
        alarm of ``due`` can grow keys (:func:`~dynashard.planning.scaling.ignored_outcome`
        is None for it).
    history : LoadHistorySource or None
        The offered load over the cool period; None: the run does not shrink (an
        alarm's run, or a stack without the write-load rule).
    shrinker : callable
        Factory of the shrink policy's port; called only when ``history`` is given.
    settings : SweepSettings
        Limits, headroom, cooldowns and cool period.
    log : ErrorLog, optional
        Where a failed change is logged.
    read_history : ReadLoadHistorySource, optional
        The peak read load over the cool period; without it a key grown for reads is
        never shrunk (:func:`~dynashard.planning.shrinking.plan_shrink`).
    gsi_name : str or None
        The data table's time-bucket GSI, whose hot partition keys map back to logical
        keys (:func:`~dynashard.planning.scaling.handle_alarm`); ``GSI1`` by default,
        None when the table has none.

    Returns
    -------
    ScalerRun
        What was grown, skipped and shrunk. Failures of single keys are listed in
        :attr:`ScalerRun.errors`, not raised, so that one key cannot stop the others.

    Raises
    ------
    Exception
        Whatever a port raises while reading hot keys, offered load or load history.
    """
    alarms: list[AlarmOutcome] = []
    ports: tuple[ScalerPort, HotKeySource, OfferedLoadSource | None] | None = None
    for alarm in due:
        outcome = ignored_outcome(alarm)
        if outcome is None:  # the ports are built for the first alarm that can grow keys
            if ports is None:
                ports = (port(), hot_keys(), offered_load())
            facade, source, offered = ports
            outcome = handle_alarm(alarm, facade, source, settings, offered, log, gsi_name=gsi_name)
        alarms.append(outcome)
    shrink = ShrinkOutcome()
    if history is not None:
        shrink = shrink_cool_keys(now, shrinker(), history, settings, log, read_history)
    return ScalerRun(tuple(alarms), shrink)
