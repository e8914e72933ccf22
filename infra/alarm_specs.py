"""The throttle alarms that drive shard growth: one definition for CDK and the sandbox.

Pure data, no CDK import. ``infra/constructs/scaler.py`` turns every
:data:`SCALER_ALARMS` entry into a CloudWatch alarm whose action invokes the scaler
function; the sandbox's alarm evaluator applies :meth:`AlarmSpec.is_breaching` to the
figures its partition emulator keeps. Both read the metric, the statistic, the period,
the threshold and the comparison from here, so the two cannot disagree.

Only key-range metrics are here on purpose (design invariant 6): adding shards fixes a
hot partition, never a table, account or on-demand-maximum limit.

DynamoDB's words (namespace, metric and dimension names) are spelled once, in
:mod:`dynashard.core.throttling`, which the scaler's policy reads too; they are re-exported
here for the CDK constructs.

Sources: "DynamoDB metrics and dimensions" and "CloudWatch throttling metrics" in the
Amazon DynamoDB Developer Guide (metric names, ``TableName`` and
``GlobalSecondaryIndexName`` dimensions, statistic ``Sum``); "Using Amazon CloudWatch
alarms" in the CloudWatch User Guide (M-out-of-N evaluation).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from dynashard import names
from dynashard.core.throttling import (
    DIM_INDEX_NAME,
    DIM_TABLE_NAME,
    DYNAMODB_NAMESPACE,
    READ_KEY_RANGE_METRIC,
    WRITE_KEY_RANGE_METRIC,
)

__all__ = [
    "DIM_INDEX_NAME",
    "DIM_TABLE_NAME",
    "DYNAMODB_NAMESPACE",
    "READ_KEY_RANGE_METRIC",
    "SCALER_ALARMS",
    "SWEEP_RATE_MINUTES",
    "WRITE_KEY_RANGE_METRIC",
    "AlarmSpec",
    "Comparison",
    "MissingData",
]

#: How often a schedule invokes the scaler to sweep its alarms that stayed in ``ALARM``,
#: minutes (an alarm action runs on a state change only).
SWEEP_RATE_MINUTES = 1


class Comparison(StrEnum):
    """CloudWatch ``ComparisonOperator`` values (member names match CDK's enum)."""

    GREATER_THAN_OR_EQUAL_TO_THRESHOLD = "GreaterThanOrEqualToThreshold"
    GREATER_THAN_THRESHOLD = "GreaterThanThreshold"


class MissingData(StrEnum):
    """CloudWatch ``TreatMissingData`` values (member names match CDK's enum)."""

    NOT_BREACHING = "notBreaching"
    BREACHING = "breaching"
    IGNORE = "ignore"
    MISSING = "missing"


@dataclass(frozen=True)
class AlarmSpec:
    """One CloudWatch alarm on a DynamoDB throttle metric.

    Parameters
    ----------
    id : str
        Stable identifier, used as the CDK construct id suffix and by the sandbox.
    metric_name : str
        ``AWS/DynamoDB`` metric, e.g. ``WriteKeyRangeThroughputThrottleEvents``.
    index_name : str or None
        GSI the metric is about, or None for the base table.
    namespace : str
        CloudWatch namespace; always ``AWS/DynamoDB`` here.
    statistic : str
        CloudWatch statistic; ``Sum`` counts throttled requests per period.
    period_s : int
        Length of one evaluation period, seconds (60 = the finest DynamoDB publishes).
    evaluation_periods : int
        N: how many most recent periods are looked at.
    datapoints_to_alarm : int
        M: how many of those N periods must breach (M out of N).
    threshold : float
        Throttle events per period at which a period breaches.
    comparison : Comparison
        How a datapoint is compared with the threshold.
    treat_missing_data : MissingData
        CloudWatch ``TreatMissingData``; DynamoDB publishes no datapoint when nothing
        was throttled, so a missing datapoint means "not breaching".
    """

    id: str
    metric_name: str
    index_name: str | None = None
    namespace: str = DYNAMODB_NAMESPACE
    statistic: str = "Sum"
    period_s: int = 60
    evaluation_periods: int = 1
    datapoints_to_alarm: int = 1
    threshold: float = 1.0
    comparison: Comparison = Comparison.GREATER_THAN_OR_EQUAL_TO_THRESHOLD
    treat_missing_data: MissingData = MissingData.NOT_BREACHING

    def dimensions(self, table_name: str) -> dict[str, str]:
        """Return the metric dimensions for a table (and this spec's index).

        Parameters
        ----------
        table_name : str
            Physical table name (a CDK token in the stack).

        Returns
        -------
        dict of str to str
            ``{"TableName": ...}`` plus ``{"GlobalSecondaryIndexName": ...}`` for a GSI.
        """
        dims = {DIM_TABLE_NAME: table_name}
        if self.index_name is not None:
            dims[DIM_INDEX_NAME] = self.index_name
        return dims

    def datapoint_breaches(self, value: float) -> bool:
        """Tell whether one period's statistic value breaches the threshold.

        Parameters
        ----------
        value : float
            The statistic (``Sum`` of throttle events) over one period.

        Returns
        -------
        bool
            True when the value breaches.
        """
        if self.comparison is Comparison.GREATER_THAN_THRESHOLD:
            return value > self.threshold
        return value >= self.threshold

    def is_breaching(self, datapoints: Sequence[float | None]) -> bool:
        """Evaluate the alarm like CloudWatch does (M out of N periods breaching).

        Parameters
        ----------
        datapoints : sequence of float or None
            Per-period values, oldest first; None for a period without data (not
            breaching unless ``treat_missing_data`` is ``BREACHING``). Only the last
            ``evaluation_periods`` entries are looked at.

        Returns
        -------
        bool
            True when at least ``datapoints_to_alarm`` of the last
            ``evaluation_periods`` periods breach.
        """
        window = list(datapoints)[-self.evaluation_periods :]
        if self.treat_missing_data is MissingData.BREACHING:
            window = [self.threshold + 1 if v is None else v for v in window]
        breaching = sum(1 for v in window if v is not None and self.datapoint_breaches(v))
        return breaching >= self.datapoints_to_alarm


#: Alarms whose action invokes the scaler. Writes on the table and on GSI1 (a throttled
#: GSI throttles base-table writes); reads on both, because scatter-gather and GSI
#: bucket fan-out reads are what a hot key's readers do.
SCALER_ALARMS: Final[tuple[AlarmSpec, ...]] = (
    AlarmSpec(id="TableWriteKeyRange", metric_name=WRITE_KEY_RANGE_METRIC),
    AlarmSpec(
        id="Gsi1WriteKeyRange", metric_name=WRITE_KEY_RANGE_METRIC, index_name=names.GSI1_NAME
    ),
    AlarmSpec(id="TableReadKeyRange", metric_name=READ_KEY_RANGE_METRIC),
    AlarmSpec(id="Gsi1ReadKeyRange", metric_name=READ_KEY_RANGE_METRIC, index_name=names.GSI1_NAME),
)
