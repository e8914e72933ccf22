"""dynashard: adaptive write sharding for DynamoDB hot partitions.

Spread one logical partition key over N physical keys (shards), grow N per key while
the system runs, and read the pieces back in order as if nothing was sharded.

The library is in layers, one subpackage each, every arrow pointing down:

- :mod:`dynashard.core`: pure values and rules (keys, strategies, time buckets, shard
  info, capacity, merge, ordered layouts, throttling, load, retry);
- :mod:`dynashard.planning`: pure decisions (shard counts, capacity and read plans,
  growth, shrinking);
- :mod:`dynashard.model`, :mod:`dynashard.errors`, :mod:`dynashard.names`: the event,
  the exceptions, the shared names; :mod:`dynashard.defaults`: the one table of tunable
  defaults, their bounds and the caps, which every layer reads;
- :mod:`dynashard.dynamodb` and :mod:`dynashard.cloudwatch`: the adapters (every AWS call);
- :mod:`dynashard.facade`: :class:`Dynashard`, the one object most callers need;
- :mod:`dynashard.lambda_kit`: what the Lambda functions need (the ``lambda`` extra);
- :mod:`dynashard.cli`: the operator's ``dynashard`` command (the ``cli`` extra).

The names below load their module on first use (PEP 562), so that importing the pure
layers (``dynashard.core``, ``dynashard.planning``) does not load boto3, botocore or
pydantic: a function that never writes keeps its cold start short.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dynashard._lazy import lazy_exports

if TYPE_CHECKING:
    from dynashard.core.buckets import TimeBucket
    from dynashard.core.shard_info import GrowthResult, ShardInfo
    from dynashard.core.strategies import Strategy
    from dynashard.dynamodb.counters import CounterValue, counter_key
    from dynashard.dynamodb.hedging import HedgePolicy
    from dynashard.dynamodb.reader import Page
    from dynashard.dynamodb.writer import WriteOutcome
    from dynashard.errors import (
        CooldownActiveError,
        CounterError,
        CursorError,
        DynashardError,
        InvalidInputError,
        KeyLimitExceededError,
        MetadataError,
        ShardQueryError,
        StrategyConflictError,
        WriteFailedError,
    )
    from dynashard.facade import Dynashard, DynashardConfig
    from dynashard.model import MAX_EVENTS_PER_REQUEST, Event
    from dynashard.planning.reads import MAX_PAGE_LIMIT
    from dynashard.planning.shards import (
        PARTITION_RCU_LIMIT,
        PARTITION_WCU_LIMIT,
        plan_shard_count,
    )

#: Public name -> the module that defines it.
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(("CounterValue", "counter_key"), "dynashard.dynamodb.counters"),
    **dict.fromkeys(
        (
            "CooldownActiveError",
            "CounterError",
            "CursorError",
            "DynashardError",
            "KeyLimitExceededError",
            "MetadataError",
            "ShardQueryError",
            "InvalidInputError",
            "StrategyConflictError",
            "WriteFailedError",
        ),
        "dynashard.errors",
    ),
    **dict.fromkeys(("GrowthResult", "ShardInfo"), "dynashard.core.shard_info"),
    **dict.fromkeys(("MAX_EVENTS_PER_REQUEST", "Event"), "dynashard.model"),
    **dict.fromkeys(
        ("PARTITION_RCU_LIMIT", "PARTITION_WCU_LIMIT", "plan_shard_count"),
        "dynashard.planning.shards",
    ),
    "MAX_PAGE_LIMIT": "dynashard.planning.reads",
    "Page": "dynashard.dynamodb.reader",
    "HedgePolicy": "dynashard.dynamodb.hedging",
    **dict.fromkeys(("Dynashard", "DynashardConfig"), "dynashard.facade"),
    "Strategy": "dynashard.core.strategies",
    "TimeBucket": "dynashard.core.buckets",
    "WriteOutcome": "dynashard.dynamodb.writer",
}

#: Written out for type checkers and linters; a test keeps it equal to ``_EXPORTS``.
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
    "HedgePolicy",
    "InvalidInputError",
    "KeyLimitExceededError",
    "MetadataError",
    "Page",
    "ShardInfo",
    "ShardQueryError",
    "Strategy",
    "StrategyConflictError",
    "TimeBucket",
    "WriteFailedError",
    "WriteOutcome",
    "counter_key",
    "plan_shard_count",
]


#: Loads a public name's module on first use (PEP 562).
_export, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)

if TYPE_CHECKING:
    #: The library's version: the installed distribution's (its metadata), which the build
    #: took from the git tag (setuptools-scm); ``dynashard._version`` says more.
    __version__: str


def __getattr__(name: str) -> Any:
    """Return a public name, loading its module; ``__version__`` from the metadata."""
    if name == "__version__":
        from dynashard._version import installed_version

        globals()["__version__"] = value = installed_version()
        return value
    return _export(name)
