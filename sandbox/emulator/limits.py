"""Token buckets for DynamoDB's throughput limits: per key range, per table, per GSI.

Pure and clock-driven: every method takes ``now`` (seconds, any epoch), so tests drive
time by hand. Limits and their sources:

- Key range (partition) ceiling: 1,000 WCU/s and 3,000 RCU/s, reads and writes
  independent, the same for a table and for each GSI, in both capacity modes
  (Developer Guide, "Best practices for designing and using partition keys
  effectively"; "Key range throughput exceeded"). The emulator gives every partition
  key value its own key range (as split-for-heat eventually does), so one key can never
  exceed the ceiling: its bucket holds at most one second of the ceiling.
- Provisioned table or GSI: the provisioned RCU/WCU, with burst capacity of up to
  300 s of unused capacity ("Burst capacity"), which never lifts a key range above its
  ceiling (the key bucket above still applies).
- On-demand table: the optional maximum (``OnDemandThroughput``) and the per-table
  account quota (40,000 RRU/WRU by default, "Quotas in Amazon DynamoDB").

A request is admitted when every bucket it touches holds at least
``min(cost, bucket capacity)`` units; it then takes the full cost and a bucket may go
into debt. So an item larger than a scaled-down ceiling still gets through once the
bucket is full, and the long-run rate is still the limit.
"""

from __future__ import annotations

import enum
import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from dynashard import defaults

#: Tolerance for float comparisons of token counts.
_EPS: Final = 1e-9
#: Default per-key-range write ceiling, WCU/s (DynamoDB's, as the library plans with it:
#: :data:`dynashard.defaults.PARTITION_WCU_LIMIT`).
PARTITION_WCU: Final = defaults.PARTITION_WCU_LIMIT
#: Default per-key-range read ceiling, RCU/s (:data:`dynashard.defaults.PARTITION_RCU_LIMIT`).
PARTITION_RCU: Final = defaults.PARTITION_RCU_LIMIT
#: Default per-table account quota of an on-demand table, request units/s.
ACCOUNT_TABLE_UNITS: Final = 40000.0
#: Seconds of unused capacity that burst capacity keeps.
BURST_SECONDS: Final = 300.0


class Operation(enum.StrEnum):
    """Kind of capacity: read (RCU) or write (WCU)."""

    READ = "Read"
    WRITE = "Write"


class LimitType(enum.StrEnum):
    """Why a request is throttled: the ``LimitType`` part of a throttling reason.

    Source: API reference, ``ThrottlingReason``.
    """

    KEY_RANGE = "KeyRangeThroughputExceeded"
    PROVISIONED = "ProvisionedThroughputExceeded"
    ACCOUNT = "AccountLimitExceeded"
    MAX_ON_DEMAND = "MaxOnDemandThroughputExceeded"


@dataclass(frozen=True, slots=True)
class Resource:
    """A table or one of its GSIs.

    Parameters
    ----------
    table : str
        Table name.
    index : str or None
        GSI name, or None for the base table.
    """

    table: str
    index: str | None = None


def throttling_reason(resource: Resource, operation: Operation, limit: LimitType) -> str:
    """Return the ``reason`` of a ``ThrottlingReason``: ResourceType+OperationType+LimitType.

    Parameters
    ----------
    resource : Resource
        The throttled table or index.
    operation : Operation
        Read or write.
    limit : LimitType
        The exceeded limit.

    Returns
    -------
    str
        E.g. ``TableWriteKeyRangeThroughputExceeded`` or
        ``IndexWriteProvisionedThroughputExceeded`` (API reference, ThrottlingReason).
    """
    kind = "Table" if resource.index is None else "Index"
    return f"{kind}{operation.value}{limit.value}"


@dataclass(frozen=True, slots=True)
class Charge:
    """Capacity units one request charges to one partition key value of a resource.

    Parameters
    ----------
    resource : Resource
        Table or GSI.
    key : str or None
        Partition key value (its text); None charges the resource-level limit only
        (a Scan, which spreads over every partition).
    units : float
        RCU or WCU.
    """

    resource: Resource
    key: str | None
    units: float


@dataclass(frozen=True, slots=True)
class Violation:
    """A limit a request would exceed.

    Parameters
    ----------
    resource : Resource
        The throttled table or GSI.
    key : str or None
        The partition key value, for a key-range limit.
    limit : LimitType
        Which limit.
    operation : Operation
        Read or write.
    """

    resource: Resource
    key: str | None
    limit: LimitType
    operation: Operation

    @property
    def reason(self) -> str:
        """str: The ``ThrottlingReason.reason`` text."""
        return throttling_reason(self.resource, self.operation, self.limit)


class TokenBucket:
    """A token bucket refilled continuously at ``rate`` up to ``capacity``.

    Parameters
    ----------
    rate : float
        Refill rate, units per second (> 0).
    capacity : float
        Most tokens it holds, units (> 0).
    now : float
        Creation time, seconds.
    initial : float, optional
        Tokens at creation; defaults to ``min(capacity, rate)`` (one second's worth).

    Raises
    ------
    ValueError
        If ``rate`` or ``capacity`` is not positive.
    """

    __slots__ = ("capacity", "rate", "tokens", "updated")

    def __init__(self, rate: float, capacity: float, now: float, initial: float | None = None):
        if rate <= 0 or capacity <= 0:
            raise ValueError(f"rate and capacity must be > 0, got {rate} and {capacity}")
        self.rate = rate
        self.capacity = capacity
        self.tokens = min(capacity, rate) if initial is None else initial
        self.updated = now

    def level(self, now: float) -> float:
        """Refill to ``now`` and return the tokens held (negative when in debt).

        Parameters
        ----------
        now : float
            Current time, seconds; a time before the last update refills nothing.

        Returns
        -------
        float
            Units.
        """
        elapsed = now - self.updated
        if elapsed > 0:
            self.tokens = min(self.capacity, self.tokens + elapsed * self.rate)
            self.updated = now
        return self.tokens

    def can_take(self, units: float, now: float) -> bool:
        """Return whether a request of ``units`` is admitted now (nothing is taken).

        Parameters
        ----------
        units : float
            Cost of the request.
        now : float
            Current time, seconds.

        Returns
        -------
        bool
            True when the bucket holds at least ``min(units, capacity)``.
        """
        return self.level(now) + _EPS >= min(units, self.capacity)

    def admissible(self, units: float, count: int, now: float) -> int:
        """Return how many of ``count`` requests of ``units`` each are admitted now, in a row.

        The same answer as calling :meth:`can_take` then :meth:`take` ``count`` times at
        ``now`` and counting the admitted ones (a refused request takes nothing, so every
        later one is refused too), in closed form; nothing is taken.

        Parameters
        ----------
        units : float
            Cost of each request, ``>= 0``.
        count : int
            Requests, ``>= 0``.
        now : float
            Current time, seconds.

        Returns
        -------
        int
            In ``0..count``.
        """
        if count <= 0:
            return 0
        level, need = self.level(now), min(units, self.capacity)
        if level + _EPS < need:
            return 0
        if units <= 0:
            return count
        return min(count, math.floor((level + _EPS - need) / units) + 1)

    def take(self, units: float, now: float) -> None:
        """Take ``units`` (the bucket may go into debt).

        Parameters
        ----------
        units : float
            Units to take.
        now : float
            Current time, seconds.
        """
        self.level(now)
        self.tokens -= units


@dataclass(frozen=True, slots=True)
class ResourceLimit:
    """A resource-level limit: provisioned capacity, on-demand maximum or account quota.

    Parameters
    ----------
    limit : LimitType
        Which limit this is (names the throttling reason).
    units_per_s : float
        RCU/s or WCU/s.
    burst_seconds : float
        Seconds of unused capacity kept (300 for provisioned capacity, 1 otherwise).
    """

    limit: LimitType
    units_per_s: float
    burst_seconds: float = 1.0


class Limiter:
    """The throughput limits of every table, GSI and partition key value.

    Parameters
    ----------
    partition_wcu : float
        Key-range write ceiling before scaling, WCU/s (DynamoDB: 1,000).
    partition_rcu : float
        Key-range read ceiling before scaling, RCU/s (DynamoDB: 3,000).
    scale : float
        Factor applied to both ceilings, so a laptop can reach them (0.05 -> 50 WCU/s).
    unscaled_tables : frozenset of str
        Tables whose key ranges keep the ceilings before scaling.

    Raises
    ------
    ValueError
        If a ceiling or the scale is not positive.
    """

    def __init__(
        self,
        partition_wcu: float = PARTITION_WCU,
        partition_rcu: float = PARTITION_RCU,
        scale: float = 1.0,
        unscaled_tables: frozenset[str] = frozenset(),
    ) -> None:
        self.unscaled_tables = unscaled_tables
        self._key_buckets: dict[tuple[Operation, Resource, str], TokenBucket] = {}
        self._resource_buckets: dict[tuple[Operation, Resource], TokenBucket] = {}
        self._resource_limits: dict[tuple[Operation, Resource], ResourceLimit] = {}
        self.partition_wcu = partition_wcu
        self.partition_rcu = partition_rcu
        self.scale = scale
        self.configure(partition_wcu, partition_rcu, scale)

    def configure(self, partition_wcu: float, partition_rcu: float, scale: float) -> None:
        """Change the key-range ceilings; key buckets restart full.

        Parameters
        ----------
        partition_wcu, partition_rcu : float
            Ceilings before scaling, units/s.
        scale : float
            Scale factor.

        Raises
        ------
        ValueError
            If a value is not positive.
        """
        if min(partition_wcu, partition_rcu, scale) <= 0:
            raise ValueError("partition ceilings and scale must be > 0")
        self.partition_wcu, self.partition_rcu, self.scale = partition_wcu, partition_rcu, scale
        self._key_buckets.clear()

    def key_range_rate(self, operation: Operation, resource: Resource | None = None) -> float:
        """Return the key-range ceiling, units/s: scaled, unless the table is unscaled.

        Parameters
        ----------
        operation : Operation
            Read or write.
        resource : Resource, optional
            The table or GSI; one of ``unscaled_tables`` keeps the ceiling unscaled.

        Returns
        -------
        float
            ``partition_rcu * scale`` or ``partition_wcu * scale`` (without ``scale``
            for an unscaled table).
        """
        base = self.partition_wcu if operation is Operation.WRITE else self.partition_rcu
        if resource is not None and resource.table in self.unscaled_tables:
            return base
        return base * self.scale

    def set_resource_limit(
        self, resource: Resource, operation: Operation, limit: ResourceLimit | None
    ) -> None:
        """Set (or with None remove) the resource-level limit of a table or GSI.

        Parameters
        ----------
        resource : Resource
            Table or GSI.
        operation : Operation
            Read or write.
        limit : ResourceLimit or None
            The limit; its bucket restarts with one second's worth of tokens.
        """
        key = (operation, resource)
        if limit is None or limit.units_per_s <= 0:
            self._resource_limits.pop(key, None)
            self._resource_buckets.pop(key, None)
            return
        if self._resource_limits.get(key) != limit:
            self._resource_limits[key] = limit
            self._resource_buckets.pop(key, None)

    def resource_limit(self, resource: Resource, operation: Operation) -> ResourceLimit | None:
        """Return the resource-level limit of a table or GSI, if any.

        Parameters
        ----------
        resource : Resource
            Table or GSI.
        operation : Operation
            Read or write.

        Returns
        -------
        ResourceLimit or None
            The limit set by :meth:`set_resource_limit`.
        """
        return self._resource_limits.get((operation, resource))

    def forget_table(self, table: str) -> None:
        """Drop every bucket and limit of a table and its GSIs (after DeleteTable).

        Parameters
        ----------
        table : str
            Table name.
        """
        for kk in [k for k in self._key_buckets if k[1].table == table]:
            del self._key_buckets[kk]
        for rk in [k for k in self._resource_buckets if k[1].table == table]:
            del self._resource_buckets[rk]
        for lk in [k for k in self._resource_limits if k[1].table == table]:
            del self._resource_limits[lk]

    def reset(self) -> None:
        """Refill every bucket (drop all state but the limits)."""
        self._key_buckets.clear()
        self._resource_buckets.clear()

    def _key_bucket(self, op: Operation, resource: Resource, key: str, now: float) -> TokenBucket:
        bucket = self._key_buckets.get((op, resource, key))
        if bucket is None:
            rate = self.key_range_rate(op, resource)
            bucket = TokenBucket(rate, rate, now, initial=rate)
            self._key_buckets[(op, resource, key)] = bucket
        return bucket

    def _resource_bucket(self, op: Operation, resource: Resource, now: float) -> TokenBucket | None:
        limit = self._resource_limits.get((op, resource))
        if limit is None:
            return None
        bucket = self._resource_buckets.get((op, resource))
        if bucket is None:
            capacity = limit.units_per_s * max(1.0, limit.burst_seconds)
            bucket = TokenBucket(limit.units_per_s, capacity, now)
            self._resource_buckets[(op, resource)] = bucket
        return bucket

    def check(self, operation: Operation, charges: Iterable[Charge], now: float) -> list[Violation]:
        """Return the limits a request would exceed, taking nothing.

        Charges to the same bucket are added up first. Resource-level violations come
        after key-range ones, each once.

        Parameters
        ----------
        operation : Operation
            Read or write.
        charges : iterable of Charge
            What the request would charge.
        now : float
            Current time, seconds.

        Returns
        -------
        list of Violation
            Empty when the request is admitted.
        """
        per_key: dict[tuple[Resource, str], float] = defaultdict(float)
        per_resource: dict[Resource, float] = defaultdict(float)
        for charge in charges:
            if charge.key is not None:
                per_key[(charge.resource, charge.key)] += charge.units
            per_resource[charge.resource] += charge.units
        violations = [
            Violation(resource, key, LimitType.KEY_RANGE, operation)
            for (resource, key), units in per_key.items()
            if not self._key_bucket(operation, resource, key, now).can_take(units, now)
        ]
        for resource, units in per_resource.items():
            bucket = self._resource_bucket(operation, resource, now)
            if bucket is not None and not bucket.can_take(units, now):
                limit = self._resource_limits[(operation, resource)].limit
                violations.append(Violation(resource, None, limit, operation))
        return violations

    def consume(self, operation: Operation, charges: Iterable[Charge], now: float) -> None:
        """Take the units of a request from its buckets, unconditionally.

        Used for admitted writes and for reads, whose cost is known only after the
        response (bytes read).

        Parameters
        ----------
        operation : Operation
            Read or write.
        charges : iterable of Charge
            What the request charges.
        now : float
            Current time, seconds.
        """
        for charge in charges:
            if charge.key is not None:
                self._key_bucket(operation, charge.resource, charge.key, now).take(
                    charge.units, now
                )
            bucket = self._resource_bucket(operation, charge.resource, now)
            if bucket is not None:
                bucket.take(charge.units, now)

    def admit(self, operation: Operation, charges: list[Charge], now: float) -> list[Violation]:
        """Check a request and, when it is admitted, take its units.

        Parameters
        ----------
        operation : Operation
            Read or write.
        charges : list of Charge
            What the request charges (all or nothing).
        now : float
            Current time, seconds.

        Returns
        -------
        list of Violation
            Empty when admitted (units taken); otherwise nothing is taken.
        """
        violations = self.check(operation, charges, now)
        if not violations:
            self.consume(operation, charges, now)
        return violations

    def admit_requests(
        self,
        operation: Operation,
        resource: Resource,
        key: str,
        units: float,
        count: int,
        now: float,
    ) -> int:
        """Admit up to ``count`` equal requests on one partition key value; return how many.

        The pure entry point of a simulation that moves many requests per step: the
        result, and the tokens taken, are those of ``count`` successive
        :meth:`admit` calls at ``now``, each charging ``units`` to ``key`` of
        ``resource`` (its key-range bucket and, when set, the resource-level one).

        Parameters
        ----------
        operation : Operation
            Read or write.
        resource : Resource
            Table or GSI.
        key : str
            Partition key value.
        units : float
            Capacity units of each request.
        count : int
            Requests, ``>= 0``.
        now : float
            Current time, seconds.

        Returns
        -------
        int
            Requests admitted (the first ones); the rest are throttled (key range, or
            the resource's limit).
        """
        buckets = [self._key_bucket(operation, resource, key, now)]
        resource_bucket = self._resource_bucket(operation, resource, now)
        if resource_bucket is not None:
            buckets.append(resource_bucket)
        admitted = min(b.admissible(units, count, now) for b in buckets)
        if admitted:
            for bucket in buckets:
                bucket.take(units * admitted, now)
        return admitted

    def sweep(self, now: float, max_keys: int = 200_000) -> int:
        """Drop full key buckets when there are more than ``max_keys`` (bounds memory).

        Parameters
        ----------
        now : float
            Current time, seconds.
        max_keys : int
            Number of key buckets above which full ones are dropped.

        Returns
        -------
        int
            Buckets dropped (a dropped bucket is recreated full, so nothing changes).
        """
        if len(self._key_buckets) <= max_keys:
            return 0
        full = [k for k, b in self._key_buckets.items() if b.level(now) >= b.capacity - _EPS]
        for k in full:
            del self._key_buckets[k]
        return len(full)
