"""dynashard: adaptive write sharding for DynamoDB hot partitions.

Spread one logical partition key over N physical keys (shards), grow N per key while
the system runs, and read the pieces back in order as if nothing was sharded.

The names below load their module on first use (PEP 562), so that importing the pure
core (``dynashard.keys``, ``strategies``, ``merge``, ``throttling``, ``planning``) does
not load boto3 or botocore: a function that never writes keeps its cold start short.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dynashard.counters import CounterValue, counter_key
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
    from dynashard.metadata import GrowthResult, ShardInfo
    from dynashard.model import MAX_EVENTS_PER_REQUEST, Event
    from dynashard.planning import PARTITION_RCU_LIMIT, PARTITION_WCU_LIMIT, plan_shard_count
    from dynashard.reader import MAX_PAGE_LIMIT, Page
    from dynashard.strategies import Strategy, TimeBucket
    from dynashard.writer import WriteOutcome

#: Public name -> the module that defines it.
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(("CounterValue", "counter_key"), "dynashard.counters"),
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
    **dict.fromkeys(("GrowthResult", "ShardInfo"), "dynashard.metadata"),
    **dict.fromkeys(("MAX_EVENTS_PER_REQUEST", "Event"), "dynashard.model"),
    **dict.fromkeys(
        ("PARTITION_RCU_LIMIT", "PARTITION_WCU_LIMIT", "plan_shard_count"), "dynashard.planning"
    ),
    **dict.fromkeys(("MAX_PAGE_LIMIT", "Page"), "dynashard.reader"),
    **dict.fromkeys(("Dynashard", "DynashardConfig"), "dynashard.facade"),
    **dict.fromkeys(("Strategy", "TimeBucket"), "dynashard.strategies"),
    "WriteOutcome": "dynashard.writer",
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


def __getattr__(name: str) -> Any:
    """Load a public name's module on first use (PEP 562).

    Parameters
    ----------
    name : str
        A name of :data:`__all__`.

    Returns
    -------
    Any
        The object, cached in this module afterwards.

    Raises
    ------
    AttributeError
        If ``name`` is not a public name of the package.
    """
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'dynashard' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """Return the public names and the module's own (for ``dir()`` and completion)."""
    return sorted({*globals(), *__all__})
