"""Helpers of the Lambda function tests: sample events, a Lambda context, fakes of the facade."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from dynashard.core.shard_info import ShardInfo
from dynashard.errors import DynashardError
from dynashard.model import Event
from dynashard.planning.reads import ReadPlan, plan_read

EVENTS_DIR = Path(__file__).resolve().parents[3] / "events"


def load_event(name: str) -> dict[str, Any]:
    """Load ``events/<name>.json`` (a fresh copy each time)."""
    return json.loads((EVENTS_DIR / f"{name}.json").read_text())


@dataclass
class LambdaContext:
    """The attributes of a Lambda context that Powertools reads."""

    function_name: str = "dynashard-test"
    function_version: str = "$LATEST"
    memory_limit_in_mb: int = 256
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:dynashard-test"
    aws_request_id: str = "52fdfc07-2182-154f-163f-5f0f9a621d72"
    log_group_name: str = "/aws/lambda/dynashard-test"
    log_stream_name: str = "2024/02/17/[$LATEST]abcdef"

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


# --- fakes of the Dynashard facade ----------------------------------------------------------
@dataclass
class Outcome:
    event_id: str
    key: str
    ok: bool
    error: str | None = None
    physical_key: str | None = None
    write_units: int = 1
    permanent: bool = False
    field: str | None = None


@dataclass
class FakePage:
    items: list[dict[str, Any]]
    cursor: str | None
    missing_shards: list[str] = field(default_factory=list)
    shards_queried: int = 1
    queries: int = 1
    plan: ReadPlan | None = None


@dataclass
class FakeCounter:
    name: str
    value: int
    shards: int


@dataclass
class FakeGrowth:
    key: str
    previous: int
    current: int
    changed: bool
    reason: str


class FakeFacade:
    """Records calls; fails the event ids in ``fail_ids``; raises ``raises`` from reads."""

    def __init__(
        self,
        fail_ids: Sequence[str] = (),
        raises: Exception | None = None,
        shards: dict[str, int] | None = None,
        grow_raises: dict[str, Exception] | None = None,
        stored: bool = True,
    ) -> None:
        self.fail_ids = set(fail_ids)
        self.stored = stored
        self.raises = raises
        self.shards = dict(shards or {})
        self.grow_raises = dict(grow_raises or {})
        self.put_calls: list[list[Event]] = []
        self.query_calls: list[tuple[str, dict[str, Any]]] = []
        self.increments: list[tuple[str, int, str | None]] = []
        self.grow_calls: list[tuple[str, int]] = []

    def put_events(self, events: Sequence[Event]) -> list[Outcome]:
        self.put_calls.append(list(events))
        if isinstance(self.raises, DynashardError):
            raise self.raises
        return [
            Outcome(
                e.id,
                e.key,
                e.id not in self.fail_ids,
                "ProvisionedThroughputExceededException" if e.id in self.fail_ids else None,
                None if e.id in self.fail_ids else f"{e.key}#0",
            )
            for e in events
        ]

    def write_key(self, event: Event) -> str:
        return event.key

    def increment_counter(self, name: str, by: int, idempotency_key: str | None = None) -> bool:
        if self.raises:
            raise self.raises
        applied = idempotency_key is None or all(k != idempotency_key for *_, k in self.increments)
        self.increments.append((name, by, idempotency_key))
        return applied

    def query_events(self, key: str, **kwargs: Any) -> FakePage:
        self.query_calls.append((key, kwargs))
        if self.raises:
            raise self.raises
        start: datetime | None = kwargs.get("start")
        items = [
            {
                "key": key,
                "id": "e1",
                "ts": "2013-01-01T05:40:00.000000Z",
                "data": {"dep_delay": -1.5},
            }
        ]
        missing = ["DEPARTURES#JFK#3"] if kwargs.get("allow_partial") else []
        # As the real planner answers for a 4-shard key whose window is one cool bucket.
        plan = plan_read(
            base_shards=4,
            buckets=["2013-01-01"] if start else None,
            gsi1_shards=[1] if start else [],
            consistent=kwargs.get("consistent", True),
            path=kwargs.get("path", "auto"),
            gsi1_unavailable="no window",
        )
        cursor = "opaque-cursor" if start else None
        return FakePage(items, cursor, missing, shards_queried=4, plan=plan)

    def get_counter(self, name: str) -> FakeCounter:
        if self.raises:
            raise self.raises
        return FakeCounter(name, 42, 3)

    def shard_info(self, key: str) -> ShardInfo:
        if self.raises:
            raise self.raises
        if not self.stored:
            return ShardInfo(key, 1, 0, (), stored=False)
        return ShardInfo(key, self.shards.get(key, 1), 1_700_000_000, ((1_700_000_000, 1),))

    def grow(self, key: str, target: int, *, reason: str | None = None) -> FakeGrowth:
        self.grow_calls.append((key, target))
        if key in self.grow_raises:
            raise self.grow_raises[key]
        previous = self.shards.get(key, 1)
        self.shards[key] = max(previous, target)
        return FakeGrowth(
            key,
            previous,
            self.shards[key],
            target > previous,
            "grown" if target > previous else "already",
        )
