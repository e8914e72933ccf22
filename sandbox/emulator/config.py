"""Configuration of the partition emulator: limits, scale, capacity mode, latency, clock."""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from sandbox.emulator.errors import PROVISIONED_THROUGHPUT_EXCEEDED, ThrottleCode
from sandbox.emulator.limits import ACCOUNT_TABLE_UNITS, BURST_SECONDS, PARTITION_RCU, PARTITION_WCU


@dataclass(frozen=True, slots=True)
class Provisioned:
    """Provisioned capacity mode for every table and each of its GSIs.

    Parameters
    ----------
    rcu : float
        Read capacity units per second of each table and GSI.
    wcu : float
        Write capacity units per second of each table and GSI.
    """

    rcu: float
    wcu: float


@dataclass(frozen=True, slots=True)
class OnDemand:
    """On-demand capacity mode, with an optional maximum throughput.

    Parameters
    ----------
    max_rcu : float or None
        ``MaxReadRequestUnits`` of each table and GSI, units/s; None for no maximum.
    max_wcu : float or None
        ``MaxWriteRequestUnits``, units/s; None for no maximum.
    """

    max_rcu: float | None = None
    max_wcu: float | None = None


@dataclass(frozen=True, slots=True)
class LognormalLatency:
    """Service latency drawn from a lognormal distribution.

    Parameters
    ----------
    median_ms : float
        Median latency, milliseconds (DynamoDB: "single-digit millisecond").
    sigma : float
        Standard deviation of the underlying normal; 0.5 gives p99 of about 3.2x the
        median.
    """

    median_ms: float = 4.0
    sigma: float = 0.5

    def sample(self, rng: random.Random) -> float:
        """Draw one latency.

        Parameters
        ----------
        rng : random.Random
            Source of randomness.

        Returns
        -------
        float
            Seconds.
        """
        return rng.lognormvariate(math.log(self.median_ms / 1000.0), self.sigma)


@dataclass(frozen=True)
class EmulatorConfig:
    """Limits and behaviour of the partition emulator.

    Parameters
    ----------
    partition_wcu : float
        Key-range write ceiling, WCU/s (DynamoDB: 1,000).
    partition_rcu : float
        Key-range read ceiling, RCU/s (DynamoDB: 3,000).
    scale : float
        Factor on the key-range ceilings and the on-demand account quota, so a laptop
        can reach them (0.05 -> 50 WCU/s per key).
    table_mode : Provisioned or OnDemand or None
        Capacity of every table and GSI; None takes each table's own settings from
        ``DescribeTable`` (billing mode, provisioned units, on-demand maximum). Table
        capacities are not scaled: give laptop-sized figures.
    account_table_units : float
        Per-table account quota of on-demand tables before scaling, units/s (40,000).
    burst_seconds : float
        Unused provisioned capacity kept for bursts, seconds (DynamoDB: 300).
    latency : LognormalLatency or None
        Added service latency per request; None adds none.
    on_demand_error : {"ProvisionedThroughputExceededException", "ThrottlingException"}
        Exception for throttled requests on on-demand tables. Both carry throttling
        reasons; provisioned tables always get ``ProvisionedThroughputExceededException``.
    account_id : str
        Account id in ARNs.
    clock : callable
        Returns the time, epoch seconds; inject one in tests.
    seed : int or None
        Seed of the latency draws.
    unscaled_tables : frozenset of str
        Tables whose key ranges keep DynamoDB's real ceilings (``scale`` not applied).
        The demo scales the data table down so that a replay can make it hot; the shard
        metadata table's traffic (a few conditional writes per container and time
        bucket) is not scaled down with it, so its keys keep the real 1,000 WCU/s.
    """

    partition_wcu: float = PARTITION_WCU
    partition_rcu: float = PARTITION_RCU
    scale: float = 1.0
    table_mode: Provisioned | OnDemand | None = None
    account_table_units: float = ACCOUNT_TABLE_UNITS
    burst_seconds: float = BURST_SECONDS
    latency: LognormalLatency | None = None
    on_demand_error: ThrottleCode = PROVISIONED_THROUGHPUT_EXCEEDED
    account_id: str = "000000000000"
    clock: Callable[[], float] = field(default=time.time, compare=False)
    seed: int | None = None
    unscaled_tables: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if min(self.partition_wcu, self.partition_rcu, self.scale) <= 0:
            raise ValueError("partition_wcu, partition_rcu and scale must be > 0")
        if self.burst_seconds < 1:
            raise ValueError("burst_seconds must be >= 1")
