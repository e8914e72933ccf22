"""Shard-count planning (pure): how many shards a logical key needs for its load.

A single partition key value never gets more than 1,000 WCU/s or 3,000 RCU/s
(Developer Guide, "Best practices for designing and using partition keys
effectively"); spread over N shards that hash to different partitions, a key can
take about N times that. With headroom ``u`` (target utilization), the count needed
for an observed load ``L`` units/s is ``ceil(L / (limit * u))``.

``L`` is the load the key was *offered*, which the scaler estimates from what
Contributor Insights reports per partition key (:func:`loads_by_logical_key`,
:meth:`KeyLoad.demand_units_per_s`): consumption alone misses what was turned away,
and throttle counts alone count every retry as new load.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Literal, Protocol

from dynashard import defaults, names

# The per-partition ceilings are defined in dynashard.core.capacity; re-exported here, where
# the scaler's callers have always found them.
from dynashard.core.capacity import PARTITION_RCU_LIMIT as PARTITION_RCU_LIMIT
from dynashard.core.capacity import PARTITION_WCU_LIMIT as PARTITION_WCU_LIMIT
from dynashard.core.capacity import shards_needed
from dynashard.core.keys import (
    MAX_SHARD_COUNT,
    SEPARATOR,
    split_gsi1_partition_key,
    split_physical_key,
)
from dynashard.core.retry import CLIENT_MAX_ATTEMPTS
from dynashard.core.shard_info import ShardInfo
from dynashard.errors import InvalidInputError


def plan_shard_count(
    current: int,
    observed_units_per_s: float,
    partition_limit: float = PARTITION_WCU_LIMIT,
    target_utilization: float = defaults.TARGET_UTILIZATION.default,
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
    InvalidInputError
        If an argument is out of range.

    Examples
    --------
    >>> plan_shard_count(1, 5000.0, 1000.0, 0.8)
    7

    Never below the count in force (shrinking is a separate, explicit decision), and
    never above the cap:

    >>> plan_shard_count(8, 100.0), plan_shard_count(1, 1e9, max_shards=64)
    (8, 64)
    """
    if current < 1:
        raise InvalidInputError("current", f"must be >= 1, got {current}")
    if observed_units_per_s < 0 or not math.isfinite(observed_units_per_s):
        raise InvalidInputError(
            "observed_units_per_s", f"must be finite and >= 0, got {observed_units_per_s}"
        )
    if partition_limit <= 0:
        raise InvalidInputError("partition_limit", f"must be > 0, got {partition_limit}")
    if not 0 < target_utilization <= 1:
        raise InvalidInputError(
            "target_utilization", f"must be in (0, 1], got {target_utilization}"
        )
    needed = shards_needed(observed_units_per_s, partition_limit, target_utilization)
    return max(1, min(max_shards, max(current, needed)))


class ShardCountSettings(Protocol):
    """The settings a shard count is planned with, shared by the growth and shrink policies.

    Attributes
    ----------
    partition_wcu, partition_rcu : float
        Per-partition key-range limits, WCU/s and RCU/s (1,000 / 3,000 on DynamoDB).
    target_utilization : float
        Share of the limit each shard is planned to carry, in (0, 1].
    max_shards : int
        Upper bound on N.
    """

    @property
    def partition_wcu(self) -> float: ...  # noqa: D102

    @property
    def partition_rcu(self) -> float: ...  # noqa: D102

    @property
    def target_utilization(self) -> float: ...  # noqa: D102

    @property
    def max_shards(self) -> int: ...  # noqa: D102


# --- the load a key was offered, from what Contributor Insights reports -------------------
class ReportedKey(Protocol):
    """One partition key value as a hot-key source reports it for a window.

    Attributes
    ----------
    key : str
        The partition key value as stored (physical key or GSI1 key).
    consumed_units_per_s : float
        Capacity it consumed, units/s averaged over the window.
    throttled_events : int
        Requests on it that were throttled in the window.
    """

    @property
    def key(self) -> str: ...  # noqa: D102

    @property
    def consumed_units_per_s(self) -> float: ...  # noqa: D102

    @property
    def throttled_events(self) -> int: ...  # noqa: D102


@dataclass
class KeyLoad:
    """Load observed on one partition group of a logical key: the shards that share a limit.

    On the base table a logical key has one group, its physical keys
    ``{logical}#{shard}``. On GSI1 each time bucket is a group of its own,
    ``{logical}#{bucket}#{shard}``: the key's N shards apply per bucket, so two buckets
    throttled in one window (at midnight UTC, or in a backfill) are two loads, not one.

    Attributes
    ----------
    key : str
        Logical key.
    group : str
        The group's partition-key prefix: the logical key, or ``{logical}#{bucket}``.
    consumed_units_per_s : float
        Capacity consumed by the group's shards, units/s over the window.
    throttled_events : int
        Throttled requests on the group's shards in the window.
    throttled_shards : set of int
        Shard numbers of the group that were throttled.

    Examples
    --------
    Two shards throttled at 1,000 WCU/s, 1,800 WCU/s consumed over 60 s, and 43,200
    throttled requests from clients that try 4 times: at most 10,800 requests (10% of
    the 108,000 units consumed) were turned away, so the key was offered about
    2,000 x 1.1 WCU/s, which at 80% utilization needs 3 shards:

    >>> load = KeyLoad("HOT", "HOT", 1800.0, throttled_events=43_200, throttled_shards={0, 1})
    >>> demand = load.demand_units_per_s(1000.0, window_s=60.0, attempts_per_request=4)
    >>> round(demand, 6), plan_shard_count(2, demand)
    (2200.0, 3)
    """

    key: str
    group: str
    consumed_units_per_s: float = 0.0
    throttled_events: int = 0
    throttled_shards: set[int] = field(default_factory=set)

    def demand_units_per_s(
        self, partition_limit: float, window_s: float, attempts_per_request: int = 1
    ) -> float:
        """Estimate the load the group was offered, units/s.

        Three corrections turn the window's figures into the load the key was offered:

        - A throttled shard was running at its key's ceiling, so it took at least
          ``partition_limit`` while it was loaded (Contributor Insights in
          ``THROTTLED_KEYS`` mode reports no consumption): ``R = max(consumed,
          throttled_shards x limit)``.
        - Each throttled request is a retry as often as a first try: a client with a
          budget of ``A`` attempts is refused ``A`` times for a request it gives up on,
          and fewer times for one that gets through (which ``consumed`` already
          counts), so at most ``throttled / A`` requests were turned away; a request
          that got through after some refusals makes this an overestimate, never an
          underestimate. Counting every throttled request as new load overshoots up
          to ``A`` times.
        - A load that started (or stopped) inside the window dilutes both figures
          alike, so the turned-away share is taken relative to what was consumed,
          ``rho = (throttled / A) / consumed units``, and applied to ``R``, the rate
          while the shards were at their ceiling. Averaging the throttles over the
          whole window instead undershoots by the share of the window left idle.

        Contributor Insights' consumption rule (``PKC``) sums read and write units, so
        on a key that is also read ``rho`` comes out low for a write alarm.

        Parameters
        ----------
        partition_limit : float
            Per-key ceiling, units/s (1,000 WCU/s or 3,000 RCU/s).
        window_s : float
            Seconds the figures cover.
        attempts_per_request : int
            The clients' attempts per request, the first included
            (:func:`attempts_per_request`), ``>= 1``.

        Returns
        -------
        float
            ``R x (1 + rho)``; without consumption figures, ``R + throttled / (A x
            window_s)``. A throttled request counts as one unit, a lower bound.
        """
        window = max(1.0, window_s)
        turned_away = self.throttled_events / max(1, attempts_per_request)
        at_ceiling = max(self.consumed_units_per_s, len(self.throttled_shards) * partition_limit)
        consumed_units = self.consumed_units_per_s * window
        if consumed_units <= 0:
            return at_ceiling + turned_away / window
        return at_ceiling * (1.0 + turned_away / consumed_units)


def attempts_per_request(
    logical: str, kind: Literal["write", "read"], write_max_attempts: int
) -> int:
    """Return how many times the library tries a request on ``logical`` before giving up.

    Event writes go through the writer, whose client has botocore's retries off, so
    their budget is ``DYNASHARD_WRITE_MAX_ATTEMPTS``. Reads and counter increments go
    through a client with botocore's ``standard`` retries
    (:data:`dynashard.core.retry.CLIENT_MAX_ATTEMPTS` attempts).

    Parameters
    ----------
    logical : str
        Logical key (a counter's is ``COUNTER#{name}``).
    kind : {"write", "read"}
        Which capacity the alarm is about.
    write_max_attempts : int
        The writer's budget (``DYNASHARD_WRITE_MAX_ATTEMPTS``).

    Returns
    -------
    int
        Attempts per request, the first included, ``>= 1``.

    Examples
    --------
    >>> attempts_per_request("DEPARTURES#JFK", "write", write_max_attempts=8)
    8
    >>> attempts_per_request("COUNTER#flights", "write", write_max_attempts=8)
    4
    """
    if kind == "write" and not logical.startswith(names.COUNTER_PREFIX):
        return write_max_attempts
    return CLIENT_MAX_ATTEMPTS


def partition_group(
    key: str, index_name: str | None = None, gsi_name: str | None = names.GSI1_NAME
) -> tuple[str, str, int] | None:
    """Map a reported partition key to its logical key, partition group and shard.

    Parameters
    ----------
    key : str
        A physical key ``{logical}#{shard}`` of the data table, or a time-bucket GSI
        partition key ``{logical}#{bucket}#{shard}`` when ``index_name`` is ``gsi_name``.
    index_name : str or None
        The index the key is from (Contributor Insights reports per table or per GSI),
        or None for the base table.
    gsi_name : str or None
        The name of the table's time-bucket GSI (:attr:`TableSchema.gsi_name
        <dynashard.core.schema.TableSchema.gsi_name>`), ``GSI1`` on dynashard's own
        table; None when the table has none.

    Returns
    -------
    tuple of (str, str, int) or None
        ``(logical key, group, shard)``: the group is the logical key on the base table
        and ``{logical}#{bucket}`` on the time-bucket GSI. None for a key dynashard does
        not write, including every key of another index than ``gsi_name``.

    Examples
    --------
    >>> partition_group("DEPARTURES#JFK#3")
    ('DEPARTURES#JFK', 'DEPARTURES#JFK', 3)
    >>> partition_group("DEPARTURES#JFK#2013-01-01#0", "GSI1")
    ('DEPARTURES#JFK', 'DEPARTURES#JFK#2013-01-01', 0)
    >>> partition_group("DEPARTURES#JFK#2013-01-01#0", "ByTime", gsi_name="ByTime")
    ('DEPARTURES#JFK', 'DEPARTURES#JFK#2013-01-01', 0)
    >>> partition_group("DEPARTURES#JFK#2013-01-01#0", "GSI1", gsi_name="ByTime") is None
    True
    >>> partition_group("not-sharded") is None
    True
    """
    try:
        if index_name is None:
            logical, shard = split_physical_key(key)
            return logical, logical, shard
        if index_name == gsi_name:
            logical, bucket, shard = split_gsi1_partition_key(key)
            return logical, f"{logical}{SEPARATOR}{bucket}", shard
        return None  # an index whose keys dynashard does not write
    except InvalidInputError:
        return None


def owns_shard(info: ShardInfo, shard: int) -> bool:
    """Tell whether a key's metadata says it has, or had, a shard.

    Parameters
    ----------
    info : ShardInfo
        The key's metadata, read fresh.
    shard : int
        A shard number parsed from a reported partition key.

    Returns
    -------
    bool
        True when the key is stored (writers create its item before their first
        write, so a key without one wrote nothing) and ``shard`` is below the largest
        count it ever had (:attr:`ShardInfo.max_count`).

    Examples
    --------
    >>> info = ShardInfo("SENSOR", 2, 0, ((0, 2),))
    >>> owns_shard(info, 1), owns_shard(info, 42)
    (True, False)
    >>> owns_shard(ShardInfo("SENSOR", 1, 0, ((0, 1),), stored=False), 0)
    False
    """
    return info.stored and 0 <= shard < info.max_count


def loads_by_logical_key(
    hot: Iterable[ReportedKey],
    index_name: str | None = None,
    owns: Callable[[str, int], bool] | None = None,
    gsi_name: str | None = names.GSI1_NAME,
) -> tuple[dict[str, list[KeyLoad]], list[str]]:
    """Group hot partition keys by logical key, and within it by partition group.

    The physical-key format ``{logical}#{shard}`` alone does not say whose a key is:
    ``SENSOR#42`` is shard 42 of ``SENSOR``, but may as well be an application's own
    partition key (or the bare key of an adopted ``SENSOR#42``) that ``SENSOR``'s
    shards never reach. ``owns`` settles it from the shard metadata: the scaler
    passes :func:`owns_shard` over the keys it knows, so ``SENSOR#42``'s heat is never
    credited to a ``SENSOR`` of fewer than 43 shards.

    Parameters
    ----------
    hot : iterable of ReportedKey
        Keys as the source reported them: physical keys ``{logical}#{shard}`` of the
        data table, or time-bucket GSI keys ``{logical}#{bucket}#{shard}`` when
        ``index_name`` is ``gsi_name``.
    index_name : str or None
        The index the keys are from, or None for the base table.
    owns : callable, optional
        ``owns(logical, shard)``: whether the metadata says the logical key has (or
        had) that shard. A reported key it denies is unmapped. None: the format alone
        decides (pure callers that have no metadata).
    gsi_name : str or None
        The table's time-bucket GSI (:func:`partition_group`): ``GSI1`` by default,
        the schema's :attr:`~dynashard.core.schema.TableSchema.gsi_name` for a table of
        another layout. Keys of any other index are unmapped.

    Returns
    -------
    tuple of (dict of str to list of KeyLoad, list of str)
        Per logical key, the load of each of its groups (one on the base table, one per
        time bucket on GSI1, in order of first report); and the reported keys that are
        not keys dynashard writes (the scaler cannot map them to a logical key).

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> def reported(key, consumed, throttled):  # a ReportedKey
    ...     return SimpleNamespace(
    ...         key=key, consumed_units_per_s=consumed, throttled_events=throttled
    ...     )
    >>> hot = [
    ...     reported("DEPARTURES#JFK#0", 900.0, 12),
    ...     reported("DEPARTURES#JFK#1", 300.0, 0),
    ...     reported("not-sharded", 5.0, 0),
    ... ]
    >>> loads, unmapped = loads_by_logical_key(hot)
    >>> [jfk] = loads["DEPARTURES#JFK"]
    >>> jfk.consumed_units_per_s, jfk.throttled_events, jfk.throttled_shards, unmapped
    (1200.0, 12, {0}, ['not-sharded'])

    On GSI1, each time bucket is a group of its own:

    >>> hot = [
    ...     reported("DEPARTURES#JFK#2013-01-01#0", 9.0, 1),
    ...     reported("DEPARTURES#JFK#2013-01-02#0", 3.0, 0),
    ... ]
    >>> loads, _ = loads_by_logical_key(hot, index_name="GSI1")
    >>> [load.group for load in loads["DEPARTURES#JFK"]]
    ['DEPARTURES#JFK#2013-01-01', 'DEPARTURES#JFK#2013-01-02']
    """
    groups: dict[str, KeyLoad] = {}
    unmapped: list[str] = []
    for item in hot:
        parts = partition_group(item.key, index_name, gsi_name)
        if parts is None or (owns is not None and not owns(parts[0], parts[2])):
            unmapped.append(item.key)
            continue
        logical, group, shard = parts
        load = groups.setdefault(group, KeyLoad(logical, group))
        load.consumed_units_per_s += item.consumed_units_per_s
        load.throttled_events += item.throttled_events
        if item.throttled_events > 0:
            load.throttled_shards.add(shard)
    loads: dict[str, list[KeyLoad]] = {}
    for load in groups.values():
        loads.setdefault(load.key, []).append(load)
    return loads, unmapped
