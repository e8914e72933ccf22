"""dynashard: adaptive write sharding for DynamoDB hot partitions.

Spread one logical partition key over N physical keys (shards), grow N per key while
the system runs, and read the pieces back in order as if nothing was sharded.
"""

from __future__ import annotations

from dynashard.counters import CounterValue, counter_key
from dynashard.errors import (
    CooldownActiveError,
    CounterError,
    CursorError,
    DynashardError,
    KeyLimitExceededError,
    MetadataError,
    ShardQueryError,
    ValidationError,
    WriteFailedError,
)
from dynashard.metadata import GrowthResult, ShardInfo
from dynashard.model import MAX_EVENTS_PER_REQUEST, Event
from dynashard.planning import PARTITION_RCU_LIMIT, PARTITION_WCU_LIMIT, plan_shard_count
from dynashard.reader import MAX_PAGE_LIMIT, Page
from dynashard.service import Dynashard, DynashardConfig
from dynashard.strategies import Strategy, TimeBucket
from dynashard.writer import WriteOutcome

__all__ = [
    "MAX_EVENTS_PER_REQUEST",
    "MAX_PAGE_LIMIT",
    "PARTITION_RCU_LIMIT",
    "PARTITION_WCU_LIMIT",
    "CooldownActiveError",
    "CounterError",
    "CounterValue",
    "CursorError",
    "Dynashard",
    "DynashardConfig",
    "DynashardError",
    "Event",
    "GrowthResult",
    "KeyLimitExceededError",
    "MetadataError",
    "Page",
    "ShardInfo",
    "ShardQueryError",
    "Strategy",
    "TimeBucket",
    "ValidationError",
    "WriteFailedError",
    "WriteOutcome",
    "counter_key",
    "plan_shard_count",
]
