"""The chaos run's faults: when each is injected, and how each is done.

Each fault is injected when a given share of the good events has been acknowledged
(:data:`FULL_SCHEDULE`, :data:`SHORT_SCHEDULE`): DynamoDB Local killed and restarted
(:func:`kill_and_restart`), a throttling storm at ten times the partition limit
(:func:`storm`), the origin keys' shard counts grown or shrunk (:func:`resize`).
"""

from __future__ import annotations

import functools
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dynashard import Dynashard
    from sandbox.emulator import EmulatorServer
    from sandbox.engines.dynamodb_local import DynamoDBLocal
    from sandbox.scenarios.chaos.ledger import Ledger

#: Seconds a throttling storm lasts, and the overload it applies.
STORM_S = 15.0
STORM_OVERLOAD = 10.0
#: Seconds DynamoDB Local stays down before it is restarted.
DOWN_S = 2.0

#: (share of good events acknowledged, fault, argument) of a full run.
FULL_SCHEDULE: tuple[tuple[float, str, int], ...] = (
    (0.08, "grow", 4),
    (0.20, "kill", 0),
    (0.32, "storm", 0),
    (0.45, "grow", 8),
    (0.55, "kill", 0),
    (0.68, "shrink", 2),
    (0.80, "kill", 0),
    (0.88, "grow", 6),
)
#: The schedule of a short run (``--events`` below 10,000): one of each fault.
SHORT_SCHEDULE: tuple[tuple[float, str, int], ...] = (
    (0.05, "grow", 4),
    (0.15, "storm", 0),
    (0.40, "kill", 0),
    (0.70, "shrink", 2),
)


@dataclass
class Faults:
    """Faults injected and how the system came back."""

    injected: Counter[str] = field(default_factory=Counter)
    log: list[dict[str, Any]] = field(default_factory=list)
    recovery_s: list[float] = field(default_factory=list)
    throttled_requests: int = 0


def retrying(call: Callable[[], Any], timeout_s: float = 60.0) -> Any:
    """Call until it succeeds (DynamoDB Local may be restarting), at most ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return call()
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def kill_and_restart(
    ddb: DynamoDBLocal, ledger: Ledger, stop: threading.Event, faults: Faults
) -> dict[str, Any]:
    """Kill DynamoDB Local, restart it after :data:`DOWN_S`, wait for the next acknowledgement.

    Returns
    -------
    dict
        ``down_s`` and ``recovery_s`` (seconds from the kill to the next acknowledgement).
    """
    at = time.monotonic()
    before = ledger.count()
    ddb.kill()
    stop.wait(DOWN_S)
    ddb.start()
    back = time.monotonic()
    entry: dict[str, Any] = {"down_s": round(back - at, 2)}
    while ledger.count() == before and time.monotonic() - back < 120:
        time.sleep(0.05)
    entry["recovery_s"] = round(time.monotonic() - at, 2)
    faults.recovery_s.append(entry["recovery_s"])
    return entry


def storm(
    emulator: EmulatorServer,
    ledger: Ledger,
    keys: Sequence[str],
    direct: Dynashard,
    stop: threading.Event,
    started: float,
) -> dict[str, Any]:
    """Drop each partition's write limit to a tenth of what it is offered, for a while."""
    from sandbox.emulator.limits import PARTITION_WCU

    # Events/s acknowledged, all keys, over the run so far (acknowledgements come in
    # batches of up to 500, so a window of a few seconds is noisy).
    rate = ledger.count() / max(time.monotonic() - started, 1e-3)
    shards = min(retrying(functools.partial(direct.shard_info, k)).number_of_shards for k in keys)
    # Each event's item is at most 1 KB (1 WCU) here, plus a GSI1 bucket record on the
    # metadata table, which keeps its real limits.
    per_partition_wcu = max(rate / len(keys) / shards, 1.0)
    scale = per_partition_wcu / STORM_OVERLOAD / PARTITION_WCU
    server = emulator.emulator
    throttled_before = sum(server.metrics.throttle_reasons().values())
    server.update_limits(scale=scale)
    stop.wait(STORM_S)
    server.update_limits(scale=1.0)
    throttled = sum(server.metrics.throttle_reasons().values()) - throttled_before
    return {
        "offered_wcu_per_partition": round(per_partition_wcu, 1),
        "partition_wcu_limit": round(PARTITION_WCU * scale, 2),
        "overload": STORM_OVERLOAD,
        "seconds": STORM_S,
        "throttled_requests": throttled,
    }


def resize(direct: Dynashard, keys: Sequence[str], kind: str, target: int) -> dict[str, Any]:
    """Grow or shrink every key's shard count to ``target`` (retried while DynamoDB is down).

    Returns
    -------
    dict
        ``counts``: key -> the count in force afterwards.
    """
    counts: dict[str, int] = {}
    for key in keys:
        change = direct.grow if kind == "grow" else direct.shrink
        result = retrying(functools.partial(change, key, target))
        counts[key] = result.current
    return {"counts": counts}
