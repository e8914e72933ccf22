"""The bodies of the dynashard HTTP API: what the ingest and query functions accept and answer.

One REST API, served by two functions (ingest: ``POST /events``, ``POST /counters/{name}``;
query: ``GET /events``, ``GET /counters/{name}``, ``GET /shards/{key}``). Their
Powertools resolvers validate requests with these models and document responses with
them; ``functions/openapi.py`` merges both documents. The error body of every route is
:class:`dynashard.lambda_kit.ErrorResponse`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, StrictInt, Tag, field_validator

from dynashard.model import MAX_EVENTS_PER_REQUEST, Event

if TYPE_CHECKING:
    from dynashard.ingest import OutcomeLike


# --- ingest: requests -----------------------------------------------------------------------
class EventBatch(BaseModel):
    """Body of ``POST /events`` carrying several events.

    Attributes
    ----------
    events : list of Event
        1 to ``MAX_EVENTS_PER_REQUEST`` (100) events.
    """

    model_config = ConfigDict(extra="forbid")

    events: list[Event] = Field(min_length=1, max_length=MAX_EVENTS_PER_REQUEST)


def _body_kind(value: Any) -> str:
    # A body with "events" is a batch; anything else is validated as one event, so a
    # validation error names the fields of the shape the client meant.
    return "batch" if isinstance(value, Mapping) and "events" in value else "event"


#: Body of ``POST /events``: one :class:`~dynashard.Event`, or an :class:`EventBatch`.
EventsBody = Annotated[
    Annotated[Event, Tag("event")] | Annotated[EventBatch, Tag("batch")],
    Discriminator(_body_kind),
]


class CounterIncrement(BaseModel):
    """Body of ``POST /counters/{name}``.

    Attributes
    ----------
    by : int
        Amount to add; negative subtracts; never 0 (JSON integers only).
    """

    model_config = ConfigDict(extra="forbid")

    by: StrictInt

    @field_validator("by")
    @classmethod
    def _not_zero(cls, value: int) -> int:
        if value == 0:
            raise ValueError("must not be 0")
        return value


# --- ingest: responses ----------------------------------------------------------------------
class EventResult(BaseModel):
    """Outcome of one event of ``POST /events``."""

    id: str
    key: str
    ok: bool
    error: str | None = None


class FailedEvent(BaseModel):
    """An event that was not written and must be sent again."""

    id: str
    key: str
    error: str


class PostEventsResponse(BaseModel):
    """Body of a ``POST /events`` answer (200 and 503 alike)."""

    written: int
    failed: list[FailedEvent]
    results: list[EventResult]

    @classmethod
    def from_outcomes(cls, outcomes: Iterable[OutcomeLike]) -> PostEventsResponse:
        """Build the answer from the bulk write's outcomes.

        Parameters
        ----------
        outcomes : iterable of OutcomeLike
            One :class:`~dynashard.WriteOutcome` per event of the request, same order.

        Returns
        -------
        PostEventsResponse
            ``results`` one per event (``error`` only when not written), ``failed`` the
            events to send again (``error`` defaults to ``not written``), ``written``
            the count of the others.
        """
        results = [
            EventResult(id=o.event_id, key=o.key, ok=o.ok, error=None if o.ok else o.error)
            for o in outcomes
        ]
        failed = [
            FailedEvent(id=r.id, key=r.key, error=r.error or "not written")
            for r in results
            if not r.ok
        ]
        return cls(written=len(results) - len(failed), failed=failed, results=results)


class CounterResponse(BaseModel):
    """Body of a ``POST /counters/{name}`` answer.

    Attributes
    ----------
    name : str
        The counter, decoded.
    by : int
        The increment asked for.
    applied : bool
        True when this request added ``by``; False when its ``Idempotency-Key`` had
        already been applied (a retry), so nothing was added this time.
    """

    name: str
    by: int
    applied: bool = Field(description="False when the Idempotency-Key was already applied")


# --- query: responses -----------------------------------------------------------------------
class ReadPlanBody(BaseModel):
    """The read plan of ``GET /events`` (:class:`dynashard.read_plan.ReadPlan`)."""

    path: Literal["base", "gsi1"] = Field(
        description="base: one strongly consistent query per shard; gsi1: one eventually "
        "consistent query per time bucket and GSI1 shard"
    )
    requests: int = Field(description="Query requests planned for the page (first round)")
    expected_rcu: float = Field(description="Read capacity expected for the page, RCU")
    reason: str = Field(description="Why this path, with the cost of the other")


class EventsPage(BaseModel):
    """Body of ``GET /events``."""

    model_config = ConfigDict(extra="allow")

    items: list[dict[str, Any]] = Field(description='Events {"key","id","ts","data"} in order')
    cursor: str | None = Field(
        description="Pass back as `cursor` for the next page; null at the end"
    )
    shards_queried: int = Field(
        description="Shards (physical keys) this page queried: every shard the key has "
        "had for a full read, one per shard count at most for a targeted read (attr)"
    )
    missing_shards: list[str] | None = Field(
        None, description="Only with partial=true: physical keys whose query failed"
    )
    plan: ReadPlanBody | None = Field(
        None, description="The path the read took (base table or GSI1) and why"
    )


class CounterBody(BaseModel):
    """Body of ``GET /counters/{name}``."""

    name: str
    value: int
    shards: int


class ShardHistoryEntry(BaseModel):
    """One shard count that was in force."""

    since: int = Field(description="Epoch seconds")
    count: int


class ShardsBody(BaseModel):
    """Body of ``GET /shards/{key}``."""

    key: str
    number_of_shards: int
    last_updated: int = Field(description="Epoch seconds of the last change")
    shard_history: list[ShardHistoryEntry] = Field(
        description="Every shard count in force, oldest first (the table's shard_history)"
    )


__all__ = [
    "CounterBody",
    "CounterIncrement",
    "CounterResponse",
    "EventBatch",
    "EventResult",
    "EventsBody",
    "EventsPage",
    "FailedEvent",
    "PostEventsResponse",
    "ReadPlanBody",
    "ShardHistoryEntry",
    "ShardsBody",
]
