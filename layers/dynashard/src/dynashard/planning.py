"""Shard-count planning (pure): how many shards a logical key needs for its load.

A single partition key value never gets more than 1,000 WCU/s or 3,000 RCU/s
(Developer Guide, "Best practices for designing and using partition keys
effectively"); spread over N shards that hash to different partitions, a key can
take about N times that. With headroom ``u`` (target utilization), the count needed
for an observed load ``L`` units/s is ``ceil(L / (limit * u))``.
"""

from __future__ import annotations

import math
from typing import Final

from dynashard.errors import ValidationError
from dynashard.keys import MAX_SHARD_COUNT

#: Per-partition write ceiling, WCU/s (DynamoDB Developer Guide, partition key design).
PARTITION_WCU_LIMIT: Final = 1000.0
#: Per-partition read ceiling, RCU/s (same source).
PARTITION_RCU_LIMIT: Final = 3000.0


def plan_shard_count(
    current: int,
    observed_units_per_s: float,
    partition_limit: float = PARTITION_WCU_LIMIT,
    target_utilization: float = 0.8,
    max_shards: int = MAX_SHARD_COUNT,
) -> int:
    """Return the shard count a key needs for its observed load, never below ``current``.

    Parameters
    ----------
    current : int
        N in force, ``>= 1``.
    observed_units_per_s : float
        Load on the whole logical key, capacity units per second (consumed plus
        throttled), ``>= 0``.
    partition_limit : float
        Ceiling of one partition key value, units/s (1,000 WCU/s or 3,000 RCU/s, or a
        scaled-down figure in the sandbox), ``> 0``.
    target_utilization : float
        Headroom, ``0 < u <= 1``: each shard is planned to run at ``u`` of the limit.
    max_shards : int
        Cap on the result.

    Returns
    -------
    int
        ``min(max_shards, max(current, ceil(load / (limit * u))))``.

    Raises
    ------
    ValidationError
        If an argument is out of range.

    Examples
    --------
    >>> plan_shard_count(1, 5000.0, 1000.0, 0.8)
    7
    """
    if current < 1:
        raise ValidationError("current", f"must be >= 1, got {current}")
    if observed_units_per_s < 0 or not math.isfinite(observed_units_per_s):
        raise ValidationError(
            "observed_units_per_s", f"must be finite and >= 0, got {observed_units_per_s}"
        )
    if partition_limit <= 0:
        raise ValidationError("partition_limit", f"must be > 0, got {partition_limit}")
    if not 0 < target_utilization <= 1:
        raise ValidationError("target_utilization", f"must be in (0, 1], got {target_utilization}")
    needed = math.ceil(observed_units_per_s / (partition_limit * target_utilization))
    return max(1, min(max_shards, max(current, needed)))
