"""Typed uses of the library's inputs, for mypy (tests/unit/library/test_typed_examples.py).

Plain mypy, strict, without pydantic's plugin, as a user's project runs it: an event time
goes in as any form ``parse_ts`` takes and comes out as a ``datetime``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from types import MappingProxyType
from typing import assert_type

from dynashard import Event
from dynashard.model import TimeInput


def events() -> list[Event]:
    times: list[TimeInput] = [
        "2013-01-01T00:00:00Z",
        datetime(2013, 1, 1, tzinfo=UTC),
        1_356_998_400_000,
        1_356_998_400_000.0,
        Decimal(1_356_998_400_000),
        "1356998400000",
    ]
    made = [Event(key="K", id=f"e{i}", ts=ts) for i, ts in enumerate(times)]
    made.append(Event(key="K", id="m", ts="2013-01-01T00:00:00Z", data=MappingProxyType({})))
    for event in made:
        assert_type(event.ts, datetime)  # the stored type stays exact
    return made


def refused() -> None:
    """Never called: what mypy must still refuse (an unused ignore fails strict mypy)."""
    Event(key="K", id="e", ts=[2013])  # type: ignore[arg-type]
    Event(key="K", id="e", ts=None)  # type: ignore[arg-type]
    Event(key="K", ts="2013-01-01T00:00:00Z")  # type: ignore[call-arg]
    late: str = Event(key="K", id="e", ts=0).ts  # type: ignore[assignment]
    del late
